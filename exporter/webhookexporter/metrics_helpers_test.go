package webhookexporter

import (
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
