package judge

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

const scopeName = "github.com/evalbridge/evalbridge/internal/judge"

// telemetry is the judge client's own metrics:
//
//	otelcol_processor_eval_judge_requests          {judge, outcome}  ok, error, retry, timeout, canceled, rate_limited, budget_exhausted
//	otelcol_processor_eval_judge_request_duration  {judge}           seconds per HTTP attempt
//	otelcol_processor_eval_judge_tokens            {judge, type}     input, output (as the judge reported them)
//	otelcol_processor_eval_judge_cache_hits        {judge}
//	otelcol_processor_eval_judge_budget_remaining  {judge, window}   hour, day (only for configured windows)
//	otelcol_processor_eval_judge_usage_estimated   {judge}           replies without usage (tokens estimated)
//	otelcol_processor_eval_judge_cost[_estimated]  {judge, evaluator} with a price (cost.go)
type telemetry struct {
	judge    attribute.KeyValue
	requests metric.Int64Counter
	duration metric.Float64Histogram
	tokensC  metric.Int64Counter
	hits     metric.Int64Counter
	noUsage  metric.Int64Counter
	reg      metric.Registration
	costReg  metric.Registration
}

func newTelemetry(name string, set component.TelemetrySettings, b *budget, now func() time.Time, book *costBook) (*telemetry, error) {
	mp := set.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(scopeName)
	t := &telemetry{judge: attribute.String("judge", name)}
	var errs, err error
	t.requests, err = m.Int64Counter("otelcol_processor_eval_judge_requests",
		metric.WithDescription("Judge requests by outcome."), metric.WithUnit("{request}"))
	errs = errors.Join(errs, err)
	t.duration, err = m.Float64Histogram("otelcol_processor_eval_judge_request_duration",
		metric.WithDescription("Duration of one HTTP attempt to the judge."), metric.WithUnit("s"))
	errs = errors.Join(errs, err)
	t.tokensC, err = m.Int64Counter("otelcol_processor_eval_judge_tokens",
		metric.WithDescription("Tokens the judge reported, by type (input, output)."), metric.WithUnit("{token}"))
	errs = errors.Join(errs, err)
	t.hits, err = m.Int64Counter("otelcol_processor_eval_judge_cache_hits",
		metric.WithDescription("Judge calls answered from the verdict cache."), metric.WithUnit("{request}"))
	errs = errors.Join(errs, err)
	t.noUsage, err = m.Int64Counter("otelcol_processor_eval_judge_usage_estimated",
		metric.WithDescription("Judge replies without usage, whose tokens (and cost) were estimated."), metric.WithUnit("{request}"))
	errs = errors.Join(errs, err)
	if book.price.Set() {
		t.costReg, err = costTelemetry(m, t.judge, book)
		errs = errors.Join(errs, err)
	}
	if b.enabled() {
		g, gerr := m.Int64ObservableGauge("otelcol_processor_eval_judge_budget_remaining",
			metric.WithDescription("Tokens left in the judge's rolling budget window."), metric.WithUnit("{token}"))
		errs = errors.Join(errs, gerr)
		if gerr == nil {
			hourAttrs := metric.WithAttributes(t.judge, attribute.String("window", "hour"))
			dayAttrs := metric.WithAttributes(t.judge, attribute.String("window", "day"))
			t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
				h, d := b.remaining(now())
				if h >= 0 {
					o.ObserveInt64(g, h, hourAttrs)
				}
				if d >= 0 {
					o.ObserveInt64(g, d, dayAttrs)
				}
				return nil
			}, g)
			errs = errors.Join(errs, err)
		}
	}
	if errs != nil {
		return nil, errs
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
	var errs []error
	for _, r := range []*metric.Registration{&t.reg, &t.costReg} {
		if *r != nil {
			errs = append(errs, (*r).Unregister())
			*r = nil
		}
	}
	return errors.Join(errs...)
}
