package evalmetricsconnector

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
)

// Type is the component type of the connector.
var Type = component.MustNewType("evalmetrics")

const stability = component.StabilityLevelAlpha

// NewFactory returns the factory of the `evalmetrics` connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(Type, func() component.Config { return createDefaultConfig() },
		connector.WithLogsToMetrics(createLogsToMetrics, stability),
		connector.WithTracesToMetrics(createTracesToMetrics, stability))
}

func createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	c, err := newConnector(set, cfg.(*Config), next, realTicker)
	if err == nil {
		c.storageName = "agreement_logs"
	}
	return c, err
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	c, err := newConnector(set, cfg.(*Config), next, realTicker)
	if err == nil {
		c.storageName = "agreement_traces"
	}
	return c, err
}

// realTicker ticks every d; tests inject their own ticks.
func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
