package judge

//go:generate go run ../telemetrydoc/mdgen -metadata ../../processor/evalprocessor/metadata.yaml

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/evalbridge/evalbridge/internal/judge/internal/metadata"
)

// telemetry is the judge client's own metrics, declared in the eval
// processor's metadata.yaml (`registered_by: internal/judge`) and
// registered by the builder go generate writes from it:
//
//	otelcol_processor_eval_judge_requests          {judge, outcome}  ok, error, retry, timeout, canceled, rate_limited, budget_exhausted
//	otelcol_processor_eval_judge_request_duration  {judge}           seconds per HTTP attempt
//	otelcol_processor_eval_judge_tokens            {judge, type}     input, output (as the judge reported them)
//	otelcol_processor_eval_judge_cache_hits        {judge}
//	otelcol_processor_eval_judge_budget_remaining  {judge, window}   hour, day (only for configured windows)
//	otelcol_processor_eval_judge_usage_estimated   {judge}           replies without usage (tokens estimated)
//	otelcol_processor_eval_judge_cost[_estimated]  {judge, evaluator} with a price (cost.go)
type telemetry struct {
	tb       *metadata.TelemetryBuilder
	judge    attribute.KeyValue
	requests metric.Int64Counter
	duration metric.Float64Histogram
	tokensC  metric.Int64Counter
	hits     metric.Int64Counter
	noUsage  metric.Int64Counter
}

func newTelemetry(name string, set component.TelemetrySettings, b *budget, now func() time.Time, book *costBook) (*telemetry, error) {
	if set.MeterProvider == nil {
		set.MeterProvider = noop.NewMeterProvider()
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{
		tb:       tb,
		judge:    attribute.String("judge", name),
		requests: tb.ProcessorEvalJudgeRequests,
		duration: tb.ProcessorEvalJudgeRequestDuration,
		tokensC:  tb.ProcessorEvalJudgeTokens,
		hits:     tb.ProcessorEvalJudgeCacheHits,
		noUsage:  tb.ProcessorEvalJudgeUsageEstimated,
	}
	var errs []error
	if book.price.Set() {
		errs = append(errs, costTelemetry(tb, t.judge, book))
	}
	if b.enabled() {
		hourAttrs := metric.WithAttributes(t.judge, attribute.String("window", "hour"))
		dayAttrs := metric.WithAttributes(t.judge, attribute.String("window", "day"))
		errs = append(errs, tb.RegisterProcessorEvalJudgeBudgetRemainingCallback(func(_ context.Context, o metric.Int64Observer) error {
			h, d := b.remaining(now())
			if h >= 0 {
				o.Observe(h, hourAttrs)
			}
			if d >= 0 {
				o.Observe(d, dayAttrs)
			}
			return nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

func (t *telemetry) request(ctx context.Context, outcome string, d time.Duration) {
	t.requests.Add(ctx, 1, metric.WithAttributes(t.judge, attribute.String("outcome", outcome)))
	if d > 0 {
		t.duration.Record(ctx, d.Seconds(), metric.WithAttributes(t.judge))
	}
}

func (t *telemetry) tokens(ctx context.Context, u usage) {
	if u.in > 0 {
		t.tokensC.Add(ctx, u.in, metric.WithAttributes(t.judge, attribute.String("type", "input")))
	}
	if u.out > 0 {
		t.tokensC.Add(ctx, u.out, metric.WithAttributes(t.judge, attribute.String("type", "output")))
	}
}

func (t *telemetry) cacheHit(ctx context.Context) {
	t.hits.Add(ctx, 1, metric.WithAttributes(t.judge))
}

func (t *telemetry) usageEstimated(ctx context.Context) {
	t.noUsage.Add(ctx, 1, metric.WithAttributes(t.judge))
}

func (t *telemetry) shutdown() error {
	t.tb.Shutdown()
	return nil
}
