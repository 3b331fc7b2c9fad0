package configerr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

type sessionsBlock struct {
	Idle string `mapstructure:"idle"`
}

type block struct {
	Wait       string           `mapstructure:"wait"`
	Evaluators []map[string]any `mapstructure:"evaluators"`
	Sessions   sessionsBlock    `mapstructure:"sessions"`
}

const yamlText = `wait: 1s
evaluatorz:
  - type: tool_error
sessions:
  idel: 5m
`

func TestRewriteNamesKeysAndLines(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{
		"wait":       "1s",
		"evaluatorz": []any{map[string]any{"type": "tool_error"}},
		"sessions":   map[string]any{"idel": "5m"},
	})
	var b block
	err := conf.Unmarshal(&b)
	if err == nil {
		t.Fatal("decoding unknown keys succeeded")
	}
	got := Rewrite(err, &b, "eval.yaml", []byte(yamlText)).Error()
	for _, want := range []string{`eval.yaml:2: unknown key "evaluatorz"`, `eval.yaml:5: unknown key "sessions.idel"`} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "invalid keys") || strings.Contains(got, "configerr.block") {
		t.Errorf("message %q still speaks Go", got)
	}
	// Without the file: the key alone.
	if got := Rewrite(err, &b, "", nil).Error(); !strings.Contains(got, `unknown key "evaluatorz"`) || strings.Contains(got, ":2:") {
		t.Errorf("without the file: %q", got)
	}
	// Other errors pass unchanged.
	other := errors.New("wait: must be positive")
	if Rewrite(other, &b, "f", nil) != other {
		t.Error("an unrelated error was rewritten")
	}
}

func TestSyntaxNamesTheBrokenLine(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
	}{
		{"evaluators:\n  - type: tool_error\n   name: x\n", "f.yaml:3: not valid YAML"},
		{"wait: 1s\nevaluators:\n  - type: tool_error\n  - type: cel\n    expression: [a,\n      b]\n   name: x\n", "f.yaml:7: not valid YAML"},
		{"evaluators:\n\t- type: tool_error\n", "f.yaml:2: not valid YAML"},
	} {
		err := Syntax("f.yaml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	if err := Syntax("f.yaml", []byte("evaluators:\n  - type: cel\n    expression: [a,\n      b]\n")); err != nil {
		t.Errorf("valid YAML: %v", err)
	}
}

func TestPositive(t *testing.T) {
	if err := Positive("workers", 1); err != nil {
		t.Errorf("1: %v", err)
	}
	if err := Positive("workers", 0); err == nil || err.Error() != "workers: 0 must be positive" {
		t.Errorf("0: %v", err)
	}
	if err := Positive("timeout", -time.Second); err == nil || err.Error() != "timeout: -1s must be positive" {
		t.Errorf("-1s: %v", err)
	}
}
