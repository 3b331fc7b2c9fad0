package evalprocessor

import "go.opentelemetry.io/otel/metric"

// Metrics of the logs side (docs/logs.md).
const (
	metricLogRecordsHeld     = "otelcol_processor_eval_log_records_held"
	metricLogRecordsReleased = "otelcol_processor_eval_log_records_released"
	metricLogRecordsLate     = "otelcol_processor_eval_log_records_late"
	metricLogRecordsRefused  = "otelcol_processor_eval_log_records_refused"
	metricLogRecordsUnjoined = "otelcol_processor_eval_log_records_unjoined"
	metricResultRecords      = "otelcol_processor_eval_result_log_records"
)

type logTelemetry struct {
	logRecordsHeld     metric.Int64Counter
	logRecordsReleased metric.Int64Counter
	logRecordsLate     metric.Int64Counter
	logRecordsRefused  metric.Int64Counter
	logRecordsUnjoined metric.Int64Counter
	resultRecords      metric.Int64Counter
}
