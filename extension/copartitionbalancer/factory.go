package copartitionbalancer

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

// Type is the component type of the extension.
var Type = component.MustNewType("copartition_balancer")

// NewFactory returns the factory of the copartition_balancer extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, func() component.Config { return &Config{} },
		createExtension, component.StabilityLevelAlpha)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	id, err := cfg.(*Config).collectorID()
	if err != nil {
		return nil, err
	}
	return newBalancer(id, set.TelemetrySettings, set.ID)
}
