package evalmetricsconnector

//go:generate go run ../../internal/telemetrydoc/mdgen

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/evalbridge/evalbridge/connector/evalmetricsconnector"

type telemetry struct {
	invalid  metric.Int64Counter
	overflow metric.Int64Counter
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter(scopeName)
	var errs, err error
	t := &telemetry{}
	t.invalid, err = m.Int64Counter("otelcol_connector_evalmetrics_results_invalid",
		metric.WithDescription("gen_ai.evaluation.result records and events without a gen_ai.evaluation.name string; not counted."),
		metric.WithUnit("{result}"))
	errs = errors.Join(errs, err)
	t.overflow, err = m.Int64Counter("otelcol_connector_evalmetrics_results_overflow",
		metric.WithDescription("Data points counted under otel.metric.overflow=\"true\" because their metric had max_series label sets."),
		metric.WithUnit("{datapoint}"))
	errs = errors.Join(errs, err)
	return t, errs
}
