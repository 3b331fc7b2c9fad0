package evalprocessor

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
)

// A typo in the processor's block is named as the user wrote it, not as
// the Go type that lacks the field.
func TestUnknownKeyIsNamedAsWritten(t *testing.T) {
	for key, want := range map[string]string{
		"evaluatorz": `unknown key "evaluatorz"`,
		"sessions":   `unknown key "sessions.idel"`,
	} {
		raw := map[string]any{"evaluators": []any{map[string]any{"type": "tool_error"}}}
		if key == "sessions" {
			raw["sessions"] = map[string]any{"idel": "5m"}
		} else {
			raw[key] = []any{}
		}
		cfg := NewFactory().CreateDefaultConfig()
		err := confmap.NewFromStringMap(raw).Unmarshal(cfg)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "invalid keys") {
			t.Errorf("%s: %v; want %q", key, err, want)
		}
	}
}
