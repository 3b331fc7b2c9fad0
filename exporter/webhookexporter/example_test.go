package webhookexporter

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"gopkg.in/yaml.v3"
)

// The webhook block of examples/webhook.yaml loads and validates.
func TestExampleConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "webhook.yaml"))
	require.NoError(t, err)
	// ${env:NAME} and ${env:NAME:-default} as the collector would resolve them.
	env := regexp.MustCompile(`\$\{env:([A-Z_]+)(?::-([^}]*))?\}`)
	text := env.ReplaceAllStringFunc(string(raw), func(m string) string {
		sub := env.FindStringSubmatch(m)
		switch sub[1] {
		case "EVALBRIDGE_WEBHOOK_URL":
			return "https://alerts.example.com/hook"
		case "EVALBRIDGE_WEBHOOK_SECRET":
			return "example-secret"
		}
		return sub[2]
	})
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(text), &doc))
	conf := confmap.NewFromStringMap(doc)
	sub, err := conf.Sub("exporters::webhook")
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, FormatJSON, cfg.Format)
	assert.Equal(t, 30, cfg.MaxAlertsPerMinute)
	require.True(t, cfg.QueueConfig.HasValue())
	require.NotNil(t, cfg.QueueConfig.Get().StorageID)
	assert.Equal(t, component.MustNewID("file_storage"), *cfg.QueueConfig.Get().StorageID)

	pipelines, err := conf.Sub("service::pipelines")
	require.NoError(t, err)
	assert.Contains(t, pipelines.ToStringMap()["traces"].(map[string]any)["exporters"], "webhook")
}
