package evalprocessor

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metrics of durable holding (storage:, durable.go).
const (
	metricRestoredTraces     = "otelcol_processor_eval_restored_traces"
	metricRestoredSpans      = "otelcol_processor_eval_restored_spans"
	metricRestoredRecords    = "otelcol_processor_eval_restored_log_records"
	metricSpansRedelivered   = "otelcol_processor_eval_spans_redelivered"
	metricRecordsRedelivered = "otelcol_processor_eval_log_records_redelivered"
	metricStorageErrors      = "otelcol_processor_eval_storage_errors"
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
	storageOpOpts      map[string]metric.MeasurementOption
}

func newStorageTelemetry(m metric.Meter) (storageTelemetry, error) {
	t := storageTelemetry{storageOpOpts: map[string]metric.MeasurementOption{}}
	var errs, err error
	t.restoredTraces, err = m.Int64Counter(metricRestoredTraces,
		metric.WithDescription("Held traces restored from storage at start."), metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	t.restoredSpans, err = m.Int64Counter(metricRestoredSpans,
		metric.WithDescription("Spans of held traces restored from storage at start."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.restoredRecords, err = m.Int64Counter(metricRestoredRecords,
		metric.WithDescription("Log records of held traces restored from storage at start."), metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.spansRedelivered, err = m.Int64Counter(metricSpansRedelivered,
		metric.WithDescription("Spans dropped because a trace restored from storage already held them (trace id and span id): a redelivery after a crash."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.recordsRedelivered, err = m.Int64Counter(metricRecordsRedelivered,
		metric.WithDescription("Log records dropped because a trace restored from storage already held an identical record (span id, timestamps, attributes, body): a redelivery after a crash."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.storageErrors, err = m.Int64Counter(metricStorageErrors,
		metric.WithDescription("Failed storage operations, by operation (write: the batch was refused with a retryable error; delete: released data stays in storage and is forwarded again after a restart; read: undecodable chunks deleted at restore)."),
		metric.WithUnit("{errors}"))
	errs = errors.Join(errs, err)
	for _, op := range []string{storageOpWrite, storageOpDelete, storageOpRead} {
		t.storageOpOpts[op] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrOperation, op)))
	}
	return t, errs
}
