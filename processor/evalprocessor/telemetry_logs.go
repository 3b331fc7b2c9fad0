package evalprocessor

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

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

func newLogTelemetry(m metric.Meter) (logTelemetry, error) {
	var t logTelemetry
	var errs, err error
	t.logRecordsHeld, err = m.Int64Counter(metricLogRecordsHeld,
		metric.WithDescription("Log records held with their trace (records of held traces and GenAI content events)."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.logRecordsReleased, err = m.Int64Counter(metricLogRecordsReleased,
		metric.WithDescription("Held log records handed on, unchanged, when their trace was released."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.logRecordsLate, err = m.Int64Counter(metricLogRecordsLate,
		metric.WithDescription("GenAI content log records that arrived after their trace was released; forwarded as they are."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.logRecordsRefused, err = m.Int64Counter(metricLogRecordsRefused,
		metric.WithDescription("Log records refused with a retryable error while released data waited for the next consumer (back-pressure) or, with storage, persisting them failed."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.logRecordsUnjoined, err = m.Int64Counter(metricLogRecordsUnjoined,
		metric.WithDescription("GenAI content log records that named no span of their trace; forwarded, not read."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.resultRecords, err = m.Int64Counter(metricResultRecords,
		metric.WithDescription("gen_ai.evaluation.result log records emitted."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	return t, errs
}
