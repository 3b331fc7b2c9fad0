package evalprocessor

//go:generate go run ../../internal/telemetrydoc/mdgen

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/processor/evalprocessor/internal/metadata"
)

// Metric names, as the tests read them. metadata.yaml declares every
// metric; go generate writes documentation.md and the telemetry builder
// (internal/metadata) from it.
const (
	scopeName = "github.com/evalbridge/evalbridge/processor/evalprocessor"

	metricTracesHeld         = "otelcol_processor_eval_traces_held"
	metricTracesScored       = "otelcol_processor_eval_traces_scored"
	metricSpansUnscored      = "otelcol_processor_eval_spans_forwarded_unscored"
	metricSpansLate          = "otelcol_processor_eval_spans_late"
	metricEvaluations        = "otelcol_processor_eval_evaluations"
	metricScore              = "otelcol_processor_eval_score"
	metricEvaluationDuration = "otelcol_processor_eval_evaluation_duration"
	metricNextConsumerErrors = "otelcol_processor_eval_next_consumer_errors"
	metricBadInputProblems   = "otelcol_processor_eval_bad_input_problems"
	metricLateResults        = "otelcol_processor_eval_late_results"
	metricSpansDuplicate     = "otelcol_processor_eval_spans_duplicate"
	metricSpansInvalidID     = "otelcol_processor_eval_spans_invalid_trace_id"
	metricTracesNewPartition = "otelcol_processor_eval_traces_on_new_partition"
	metricReleaseBacklog     = "otelcol_processor_eval_release_backlog"
	metricReleaseRetries     = "otelcol_processor_eval_release_retries"
	metricSpansRefused       = "otelcol_processor_eval_spans_refused"
	metricSpansDropped       = "otelcol_processor_eval_spans_dropped"
	metricLogRecordsDropped  = "otelcol_processor_eval_log_records_dropped"
	metricReleasedEarly      = "otelcol_processor_eval_traces_released_early"
	metricDecisionsForgotten = "otelcol_processor_eval_decisions_forgotten"
	attrReason               = "reason"
	attrEvaluator            = "evaluator"
	attrStatus               = "status"
	reasonOverflow           = "overflow"
	reasonShutdown           = "shutdown"
	reasonBadInput           = "bad_input"
	reasonTimeout            = "timeout"
	reasonPermanent          = "permanent"
	reasonRefused            = "refused"
)

// telemetry is the processor's instruments, all registered by the
// builder generated from metadata.yaml (tb), under the names the rest of
// the package uses.
type telemetry struct {
	tb *metadata.TelemetryBuilder
	logTelemetry
	tracesHeld         metric.Int64UpDownCounter
	tracesScored       metric.Int64Counter
	spansUnscored      metric.Int64Counter
	spansLate          metric.Int64Counter
	evaluations        metric.Int64Counter
	score              metric.Float64Histogram
	evalDuration       metric.Float64Histogram
	nextConsumerErrors metric.Int64Counter
	badInput           metric.Int64Counter
	lateResults        metric.Int64Counter
	spansDuplicate     metric.Int64Counter
	spansInvalidID     metric.Int64Counter
	tracesNewPartition metric.Int64Counter
	releaseBacklog     metric.Int64UpDownCounter
	releaseRetries     metric.Int64Counter
	spansRefused       metric.Int64Counter
	spansDropped       metric.Int64Counter
	logRecordsDropped  metric.Int64Counter
	releasedEarly      metric.Int64Counter
	decisionsForgotten metric.Int64Counter
	storageTelemetry

	reasonOpts map[string]metric.MeasurementOption

	// Attribute sets per evaluator instance and status, built once.
	mu sync.RWMutex
	// statusOpt and scoreOpt are kept as one-element option lists: passed
	// with ..., a list allocates nothing per measurement.
	statusOpt map[evalKey][]metric.AddOption
	scoreOpt  map[string][]metric.RecordOption
}

type evalKey struct {
	name   string
	status evaluators.Status
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{
		tb: tb,
		logTelemetry: logTelemetry{
			logRecordsHeld:     tb.ProcessorEvalLogRecordsHeld,
			logRecordsReleased: tb.ProcessorEvalLogRecordsReleased,
			logRecordsLate:     tb.ProcessorEvalLogRecordsLate,
			logRecordsRefused:  tb.ProcessorEvalLogRecordsRefused,
			logRecordsUnjoined: tb.ProcessorEvalLogRecordsUnjoined,
			resultRecords:      tb.ProcessorEvalResultLogRecords,
		},
		storageTelemetry: storageTelemetry{
			restoredTraces:     tb.ProcessorEvalRestoredTraces,
			restoredSpans:      tb.ProcessorEvalRestoredSpans,
			restoredRecords:    tb.ProcessorEvalRestoredLogRecords,
			spansRedelivered:   tb.ProcessorEvalSpansRedelivered,
			recordsRedelivered: tb.ProcessorEvalLogRecordsRedelivered,
			storageErrors:      tb.ProcessorEvalStorageErrors,
			storageUnavailable: tb.ProcessorEvalStorageUnavailable,
			storageOpOpts:      map[string]metric.MeasurementOption{},
		},
		tracesHeld:         tb.ProcessorEvalTracesHeld,
		tracesScored:       tb.ProcessorEvalTracesScored,
		spansUnscored:      tb.ProcessorEvalSpansForwardedUnscored,
		spansLate:          tb.ProcessorEvalSpansLate,
		evaluations:        tb.ProcessorEvalEvaluations,
		score:              tb.ProcessorEvalScore,
		evalDuration:       tb.ProcessorEvalEvaluationDuration,
		nextConsumerErrors: tb.ProcessorEvalNextConsumerErrors,
		badInput:           tb.ProcessorEvalBadInputProblems,
		lateResults:        tb.ProcessorEvalLateResults,
		spansDuplicate:     tb.ProcessorEvalSpansDuplicate,
		spansInvalidID:     tb.ProcessorEvalSpansInvalidTraceId,
		tracesNewPartition: tb.ProcessorEvalTracesOnNewPartition,
		releaseBacklog:     tb.ProcessorEvalReleaseBacklog,
		releaseRetries:     tb.ProcessorEvalReleaseRetries,
		spansRefused:       tb.ProcessorEvalSpansRefused,
		spansDropped:       tb.ProcessorEvalSpansDropped,
		logRecordsDropped:  tb.ProcessorEvalLogRecordsDropped,
		releasedEarly:      tb.ProcessorEvalTracesReleasedEarly,
		decisionsForgotten: tb.ProcessorEvalDecisionsForgotten,
		reasonOpts:         map[string]metric.MeasurementOption{},
		statusOpt:          map[evalKey][]metric.AddOption{},
		scoreOpt:           map[string][]metric.RecordOption{},
	}
	for _, op := range []string{storageOpWrite, storageOpDelete, storageOpRead} {
		t.storageOpOpts[op] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrOperation, op)))
	}
	for _, r := range []string{reasonOverflow, reasonShutdown, reasonBadInput, reasonTimeout, reasonPermanent, reasonTooOld,
		reasonRefused, reasonMaxHold, reasonMaxTraceSpans} {
		t.reasonOpts[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrReason, r)))
	}
	return t, nil
}

// dropped counts released data that could not be delivered.
func (t *telemetry) dropped(ctx context.Context, reason string, isLogs bool, n int) {
	switch {
	case n <= 0:
	case isLogs:
		t.logRecordsDropped.Add(ctx, int64(n), t.reasonOpts[reason])
	default:
		t.spansDropped.Add(ctx, int64(n), t.reasonOpts[reason])
	}
}

func (t *telemetry) unscored(ctx context.Context, reason string, spans int) {
	if spans > 0 {
		t.spansUnscored.Add(ctx, int64(spans), t.reasonOpts[reason])
	}
}

func (t *telemetry) evaluation(ctx context.Context, r *evaluators.Result) {
	k := evalKey{r.Name, r.Status}
	t.mu.RLock()
	so, ok1 := t.statusOpt[k]
	sc, ok2 := t.scoreOpt[r.Name]
	t.mu.RUnlock()
	if !ok1 || !ok2 {
		t.mu.Lock()
		if so, ok1 = t.statusOpt[k]; !ok1 {
			so = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				attribute.String(attrEvaluator, r.Name), attribute.String(attrStatus, string(r.Status))))}
			t.statusOpt[k] = so
		}
		if sc, ok2 = t.scoreOpt[r.Name]; !ok2 {
			sc = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(attrEvaluator, r.Name)))}
			t.scoreOpt[r.Name] = sc
		}
		t.mu.Unlock()
	}
	t.evaluations.Add(ctx, 1, so...)
	if r.Scored() {
		t.score.Record(ctx, r.Score, sc...)
	}
}
