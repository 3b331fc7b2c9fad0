package webhookexporter

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/evalbridge/evalbridge/internal/redact"
)

// Type is the component type of the exporter.
var Type = component.MustNewType("webhook")

const tracesStability = component.StabilityLevelAlpha

// NewFactory returns the factory of the `webhook` exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(Type, createDefaultConfig,
		exporter.WithTraces(createTraces, tracesStability),
		exporter.WithLogs(createLogs, tracesStability))
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	client.Timeout = 30 * time.Second
	return &Config{
		ClientConfig:   client,
		QueueConfig:    configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:    configretry.NewDefaultBackOffConfig(),
		Format:         FormatJSON,
		PerTraceAlerts: true,
		MaxGroups:      DefaultMaxGroups,
		Redaction:      redact.NewDefaultConfig(),
		Labels:         NewDefaultLabels(),
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	return newTracesExporter(ctx, set, cfg.(*Config), time.Now)
}

// newTracesExporter builds the exporter with an injectable clock (tests).
func newTracesExporter(ctx context.Context, set exporter.Settings, c *Config, now func() time.Time) (exporter.Traces, error) {
	return newTracesExporterWithTicker(ctx, set, c, now, realTicker)
}

// helperOptions are exporterhelper's options for both signals' exporters.
func helperOptions(e *webhookExporter, c *Config) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// The HTTP client's timeout (ClientConfig.Timeout) bounds each attempt.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
	}
}

// newTracesExporterWithTicker also injects the ticker that makes monitors
// evaluate as time passes (tests tick by hand).
func newTracesExporterWithTicker(ctx context.Context, set exporter.Settings, c *Config, now func() time.Time,
	newTicker func(time.Duration) (<-chan time.Time, func()),
) (exporter.Traces, error) {
	e, err := newWebhookExporter(c, set, now)
	if err != nil {
		return nil, err
	}
	inner, err := exporterhelper.NewTraces(ctx, set, c, e.pushTraces, helperOptions(e, c)...)
	if err != nil {
		return nil, err
	}
	return &tracesExporter{Traces: inner, e: e, mons: e.mons, logger: set.Logger, newTicker: newTicker, id: set.ID}, nil
}
