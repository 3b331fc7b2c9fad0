package evalprocessor

//go:generate go run ../../internal/telemetrydoc/mdgen

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/evaluators"
)

// Metric names, as mdatagen would produce them. metadata.yaml declares
// them (and documentation.md is generated from it); telemetry_metadata_test.go
// checks that every instrument registered matches its declaration.
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

type telemetry struct {
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
	mu        sync.RWMutex
	statusOpt map[evalKey]metric.MeasurementOption
	scoreOpt  map[string]metric.MeasurementOption
}

type evalKey struct {
	name   string
	status evaluators.Status
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	t := &telemetry{
		reasonOpts: map[string]metric.MeasurementOption{},
		statusOpt:  map[evalKey]metric.MeasurementOption{},
		scoreOpt:   map[string]metric.MeasurementOption{},
	}
	var errs, err error
	t.logTelemetry, err = newLogTelemetry(m)
	errs = errors.Join(errs, err)
	t.storageTelemetry, err = newStorageTelemetry(m)
	errs = errors.Join(errs, err)
	t.tracesHeld, err = m.Int64UpDownCounter(metricTracesHeld,
		metric.WithDescription("GenAI traces held, waiting to be scored."), metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	t.tracesScored, err = m.Int64Counter(metricTracesScored,
		metric.WithDescription("Traces scored and forwarded."), metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	t.spansUnscored, err = m.Int64Counter(metricSpansUnscored,
		metric.WithDescription("Spans of GenAI traces forwarded without scores, by reason (overflow, shutdown, bad_input, timeout)."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.spansLate, err = m.Int64Counter(metricSpansLate,
		metric.WithDescription("Spans that arrived after their trace was released; forwarded as they are."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.evaluations, err = m.Int64Counter(metricEvaluations,
		metric.WithDescription("Evaluations run, by evaluator instance and status."), metric.WithUnit("{evaluations}"))
	errs = errors.Join(errs, err)
	t.score, err = m.Float64Histogram(metricScore,
		metric.WithDescription("Scores of scored evaluations, by evaluator instance."), metric.WithUnit("1"),
		metric.WithExplicitBucketBoundaries(0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1))
	errs = errors.Join(errs, err)
	t.evalDuration, err = m.Float64Histogram(metricEvaluationDuration,
		metric.WithDescription("Time to score one trace (adapt, evaluate, annotate)."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60))
	errs = errors.Join(errs, err)
	t.nextConsumerErrors, err = m.Int64Counter(metricNextConsumerErrors,
		metric.WithDescription("Calls to the next consumer that returned an error."), metric.WithUnit("{errors}"))
	errs = errors.Join(errs, err)
	t.badInput, err = m.Int64Counter(metricBadInputProblems,
		metric.WithDescription("Problems the adapter found reading GenAI spans (bad input); the spans are still forwarded."),
		metric.WithUnit("{problems}"))
	errs = errors.Join(errs, err)
	t.lateResults, err = m.Int64Counter(metricLateResults,
		metric.WithDescription("Judge results that arrived after their trace's timeout, forwarded as spans linked to the evaluated span."),
		metric.WithUnit("{results}"))
	errs = errors.Join(errs, err)
	t.spansDuplicate, err = m.Int64Counter(metricSpansDuplicate,
		metric.WithDescription("Spans whose trace id and span id were already held (a resent request, or two spans sharing an id): forwarded, but scored once."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.spansInvalidID, err = m.Int64Counter(metricSpansInvalidID,
		metric.WithDescription("Spans with an empty (all-zero) trace id: forwarded at once, never held."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.tracesNewPartition, err = m.Int64Counter(metricTracesNewPartition,
		metric.WithDescription("GenAI traces that began on a Kafka partition this collector has consumed for less than `wait`: their earlier spans may have gone to the partition's previous owner (a split trace, scored on a fragment)."),
		metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	t.releaseBacklog, err = m.Int64UpDownCounter(metricReleaseBacklog,
		metric.WithDescription("Released spans waiting to be handed to the next consumer (queued or being retried)."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.releaseRetries, err = m.Int64Counter(metricReleaseRetries,
		metric.WithDescription("Retries of a request of released spans after the next consumer refused it with a retryable error."),
		metric.WithUnit("{retries}"))
	errs = errors.Join(errs, err)
	t.spansRefused, err = m.Int64Counter(metricSpansRefused,
		metric.WithDescription("Spans refused with a retryable error because the release backlog was full (back-pressure) or, with storage, persisting them failed: the sender retries."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.spansDropped, err = m.Int64Counter(metricSpansDropped,
		metric.WithDescription("Released spans that could not be delivered, by reason (refused: still refused with a retryable error after release_retry; permanent: refused permanently; shutdown: still refused when shutdown's time was up)."),
		metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	t.logRecordsDropped, err = m.Int64Counter(metricLogRecordsDropped,
		metric.WithDescription("Released log records that could not be delivered, by reason (refused, permanent, shutdown, as for spans)."),
		metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	t.releasedEarly, err = m.Int64Counter(metricReleasedEarly,
		metric.WithDescription("Traces scored and released before their wait had passed, by the bound that released them (max_hold, max_trace_spans)."),
		metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	t.decisionsForgotten, err = m.Int64Counter(metricDecisionsForgotten,
		metric.WithDescription("Released trace ids forgotten before their retention ended because the memory of released ids was full; late spans of these traces would be held as new traces."),
		metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	for _, r := range []string{reasonOverflow, reasonShutdown, reasonBadInput, reasonTimeout, reasonPermanent, reasonTooOld,
		reasonRefused, reasonMaxHold, reasonMaxTraceSpans} {
		t.reasonOpts[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrReason, r)))
	}
	return t, errs
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
			so = metric.WithAttributeSet(attribute.NewSet(
				attribute.String(attrEvaluator, r.Name), attribute.String(attrStatus, string(r.Status))))
			t.statusOpt[k] = so
		}
		if sc, ok2 = t.scoreOpt[r.Name]; !ok2 {
			sc = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrEvaluator, r.Name)))
			t.scoreOpt[r.Name] = sc
		}
		t.mu.Unlock()
	}
	t.evaluations.Add(ctx, 1, so)
	if r.Scored() {
		t.score.Record(ctx, r.Score, sc)
	}
}
