package testkit

import (
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// IntSum reads name, an int64 sum (counter or up-down counter), from a
// component's test telemetry: the total of its points whose attributes
// include every key/value pair of kv. The test fails if name was never
// recorded or is another kind of instrument.
func IntSum(t testing.TB, tel *componenttest.Telemetry, name string, kv ...string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		t.Fatalf("metric %s: %v", name, err)
	}
	return PointsSum(t, m, kv...)
}

// IntSumOrZero is IntSum, 0 when name was never recorded.
func IntSumOrZero(t testing.TB, tel *componenttest.Telemetry, name string, kv ...string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	return PointsSum(t, m, kv...)
}

// PointsSum is the total of m's int64 sum points whose attributes include
// every key/value pair of kv; the test fails if m is not an int64 sum.
func PointsSum(t testing.TB, m metricdata.Metrics, kv ...string) int64 {
	t.Helper()
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("metric %s is %T, want an int64 sum", m.Name, m.Data)
	}
	var total int64
	for _, dp := range sum.DataPoints {
		if HasAttributes(dp.Attributes, kv...) {
			total += dp.Value
		}
	}
	return total
}

// HistogramCount is how many values name, a float64 histogram, recorded
// on the points whose attributes include every key/value pair of kv; 0
// when name was never recorded.
func HistogramCount(t testing.TB, tel *componenttest.Telemetry, name string, kv ...string) uint64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %s is %T, want a float64 histogram", name, m.Data)
	}
	var n uint64
	for _, dp := range hist.DataPoints {
		if HasAttributes(dp.Attributes, kv...) {
			n += dp.Count
		}
	}
	return n
}

// HasAttributes says whether set holds every key/value pair of kv (string
// values); a pair with an empty key matches everything.
func HasAttributes(set attribute.Set, kv ...string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "" {
			continue // no filter: ("", "") reads every point
		}
		v, ok := set.Value(attribute.Key(kv[i]))
		if !ok || v.AsString() != kv[i+1] {
			return false
		}
	}
	return true
}
