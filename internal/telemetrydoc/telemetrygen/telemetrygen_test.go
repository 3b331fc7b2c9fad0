package telemetrygen

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect returns the sum or gauge points of every metric the reader has,
// by metric name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]any {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]any{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				out[m.Name] = d.DataPoints[0].Value
			case metricdata.Sum[float64]:
				out[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	return out
}

// Callbacks observe their own instrument, with the attributes they give,
// until Unregister; options apply in order.
func TestRegistrations(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	level, err := meter.Int64ObservableGauge("level")
	require.NoError(t, err)
	cost, err := meter.Float64ObservableCounter("cost")
	require.NoError(t, err)

	var r Registrations
	require.NoError(t, r.Int64(meter, level, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(7, metric.WithAttributes(attribute.String("judge", "j")))
		return nil
	}))
	require.NoError(t, r.Float64(meter, cost, func(_ context.Context, o metric.Float64Observer) error {
		o.Observe(1.5)
		return nil
	}))
	assert.Equal(t, map[string]any{"level": int64(7), "cost": 1.5}, collect(t, reader))

	r.Unregister()
	assert.Empty(t, collect(t, reader), "no callback after Unregister")
	r.Unregister() // twice is harmless

	type builder struct{ steps []string }
	var b builder
	Apply(&b, []Option[builder]{
		OptionFunc[builder](func(b *builder) { b.steps = append(b.steps, "first") }),
		OptionFunc[builder](func(b *builder) { b.steps = append(b.steps, "second") }),
	})
	assert.Equal(t, []string{"first", "second"}, b.steps)
}
