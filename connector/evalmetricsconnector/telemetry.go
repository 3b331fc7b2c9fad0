package evalmetricsconnector

//go:generate go run ../../internal/telemetrydoc/mdgen

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/connector/evalmetricsconnector/internal/metadata"
)

const scopeName = "github.com/evalbridge/evalbridge/connector/evalmetricsconnector"

// telemetry is the connector's own instruments, registered by the builder
// go generate writes from metadata.yaml.
type telemetry struct {
	invalid  metric.Int64Counter
	overflow metric.Int64Counter
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &telemetry{invalid: tb.ConnectorEvalmetricsResultsInvalid, overflow: tb.ConnectorEvalmetricsResultsOverflow}, nil
}
