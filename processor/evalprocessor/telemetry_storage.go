package evalprocessor

import "go.opentelemetry.io/otel/metric"

// Metrics of durable holding (storage:, durable.go).
const (
	metricRestoredTraces     = "otelcol_processor_eval_restored_traces"
	metricRestoredSpans      = "otelcol_processor_eval_restored_spans"
	metricRestoredRecords    = "otelcol_processor_eval_restored_log_records"
	metricSpansRedelivered   = "otelcol_processor_eval_spans_redelivered"
	metricRecordsRedelivered = "otelcol_processor_eval_log_records_redelivered"
	metricStorageErrors      = "otelcol_processor_eval_storage_errors"
	metricStorageUnavailable = "otelcol_processor_eval_storage_unavailable"
	attrOperation            = "operation"
	storageOpWrite           = "write"
	storageOpDelete          = "delete"
	storageOpRead            = "read"
)

type storageTelemetry struct {
	restoredTraces     metric.Int64Counter
	restoredSpans      metric.Int64Counter
	restoredRecords    metric.Int64Counter
	spansRedelivered   metric.Int64Counter
	recordsRedelivered metric.Int64Counter
	storageErrors      metric.Int64Counter
	storageUnavailable metric.Int64Gauge
	storageOpOpts      map[string]metric.MeasurementOption
}
