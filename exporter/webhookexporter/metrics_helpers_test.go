package webhookexporter

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func sumInt64(m metricdata.Metrics, kind string) int64 {
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	var total int64
	for _, dp := range sum.DataPoints {
		if kind != "" {
			if v, ok := dp.Attributes.Value(attribute.Key("kind")); !ok || v.AsString() != kind {
				continue
			}
		}
		total += dp.Value
	}
	return total
}

// metricSum sums an int64 sum's data points whose attribute key is value
// (all points when key is "").
func metricSum(t *testing.T, tel *componenttest.Telemetry, name, key, value string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is not an int64 sum", name)
	var total int64
	for _, dp := range sum.DataPoints {
		if key != "" {
			if v, ok := dp.Attributes.Value(attribute.Key(key)); !ok || v.AsString() != value {
				continue
			}
		}
		total += dp.Value
	}
	return total
}
