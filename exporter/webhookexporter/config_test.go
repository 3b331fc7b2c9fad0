package webhookexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(Type)
	if name != "" {
		id = component.NewIDWithName(Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg, confmap.Validate(cfg)
}

func TestCheckConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

func TestLoadConfig(t *testing.T) {
	def, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, "https://hooks.example.com/evalbridge", def.ClientConfig.Endpoint)
	assert.Equal(t, FormatJSON, def.Format)
	assert.Equal(t, 30*time.Second, def.ClientConfig.Timeout)
	assert.Equal(t, 0, def.MaxAlertsPerMinute)
	assert.Empty(t, def.Evaluators)
	assert.True(t, def.QueueConfig.HasValue(), "sending_queue on by default")
	assert.True(t, def.RetryConfig.Enabled)

	full, err := loadConfig(t, "full")
	require.NoError(t, err)
	assert.Equal(t, FormatSlack, full.Format)
	assert.Equal(t, 5*time.Second, full.ClientConfig.Timeout)
	assert.Equal(t, configopaque.String("s3cr3t"), full.Secret)
	assert.Equal(t, "https://jaeger.example.com/trace/{trace_id}?uiFind={span_id}", full.TraceURL)
	assert.Equal(t, []string{"booking_flow", "tool_error"}, full.Evaluators)
	assert.Equal(t, 30, full.MaxAlertsPerMinute)
	assert.Equal(t, 2*time.Minute, full.RetryConfig.MaxElapsedTime)
	v, ok := full.ClientConfig.Headers.Get("X-Team")
	assert.True(t, ok)
	assert.Equal(t, configopaque.String("agents"), v)
	require.True(t, full.QueueConfig.HasValue())
	q := full.QueueConfig.Get()
	assert.Equal(t, 2, q.NumConsumers)
	assert.Equal(t, int64(500), q.QueueSize)
	require.NotNil(t, q.StorageID)
	assert.Equal(t, component.MustNewID("file_storage"), *q.StorageID)

	tpl, err := loadConfig(t, "template")
	require.NoError(t, err)
	assert.Equal(t, FormatTemplate, tpl.Format)

	for name, want := range map[string]string{
		"no_endpoint":             "endpoint must be specified",
		"bad_format":              `format "xml"`,
		"template_missing":        "requires a template",
		"template_invalid":        "template:",
		"template_without_format": "only used with format: template",
		"negative_limit":          "max_alerts_per_minute",
		"bad_evaluator":           "not a valid evaluator name",
		"queue_disabled":          "sending_queue must stay enabled",
		"queue_blocks":            "block_on_overflow must be false",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// An endpoint that is no http(s) URL passed Validate and then failed every
// push (without a scheme, as a retryable network error). The message must not
// echo the URL: for Slack it is the secret.
func TestValidateEndpointIsHTTPURL(t *testing.T) {
	for _, ep := range []string{"hooks.example.com/T0/B0/s3cr3t", "ftp://hooks.example.com/s3cr3t", "https:///s3cr3t", "http://[::1"} {
		t.Run(ep, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = ep
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "http(s) URL")
			assert.NotContains(t, err.Error(), "s3cr3t")
		})
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "http://127.0.0.1:8080/hook"
	require.NoError(t, cfg.Validate())
}
