// Package evalprocessor is the `eval` processor: it holds the spans of GenAI
// traces until each trace is complete, scores its cases with the configured
// evaluators, writes the results onto the spans and forwards them. Spans of
// traces without GenAI spans go through at once.
package evalprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
)

const stability = component.StabilityLevelAlpha

// Type is the component type, `eval`.
var Type = component.MustNewType("eval")

// NewFactory returns the factory of the `eval` processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithTraces(createTraces, stability),
	)
}

// createTraces builds the processor. It does no work: the engine is built
// and every goroutine started in Start.
func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return newProcessor(set, cfg.(*Config), next, nil)
}
