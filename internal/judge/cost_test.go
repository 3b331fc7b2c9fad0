package judge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

var testPrice = judge.PriceConfig{InputPerMillionTokens: 0.15, OutputPerMillionTokens: 0.60, Currency: "USD"}

// costPoints returns a float counter's values by evaluator.
func costPoints(t *testing.T, tel *componenttest.Telemetry, name string) map[string]float64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		t.Fatalf("metric %s: %v", name, err)
	}
	sum, ok := m.Data.(metricdata.Sum[float64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("metric %s is %T (monotonic %v), want a float counter", name, m.Data, sum.IsMonotonic)
	}
	out := map[string]float64{}
	for _, dp := range sum.DataPoints {
		if j, _ := dp.Attributes.Value("judge"); j.AsString() != "default" {
			t.Errorf("%s: judge = %q", name, j.AsString())
		}
		ev, _ := dp.Attributes.Value(attribute.Key("evaluator"))
		out[ev.AsString()] = dp.Value
	}
	return out
}

// The cost is the price applied to the tokens the replies reported, per
// evaluator, to the last bit: the metric and Spend agree exactly with the
// cost recomputed from the fake judge's own counts.
func TestJudgeCostFromReportedUsage(t *testing.T) {
	srv := judgetest.New(t, judgetest.Counting(`{"score": 1, "reason": "the answer names the hotel"}`))
	cfg := testConfig(srv.Endpoint())
	cfg.Price = testPrice
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	c := startWith(t, cfg, tel.NewTelemetrySettings())
	for i := range 7 {
		ev := "helpful"
		if i%3 == 0 {
			ev = "grounded"
		}
		m := []judge.Message{{Role: "system", Content: "Judge the answer."}, {Role: "user", Content: fmt.Sprintf("answer number %d: {\"x\": %d}", i, i*i)}}
		if _, err := c.Complete(judge.WithEvaluator(context.Background(), ev), m); err != nil {
			t.Fatal(err)
		}
	}
	in, out := map[string]int64{}, map[string]int64{}
	for i, r := range srv.Requests() {
		ev := "helpful"
		if i%3 == 0 {
			ev = "grounded"
		}
		in[ev] += r.PromptTokens()
		out[ev] += judgetest.CountTokens(`{"score": 1, "reason": "the answer names the hotel"}`)
	}
	got := costPoints(t, tel, "otelcol_processor_eval_judge_cost")
	spend := map[string]judge.Spend{}
	for _, s := range c.Spend() {
		spend[s.Evaluator] = s
	}
	for _, ev := range []string{"helpful", "grounded"} {
		want := (float64(in[ev])*0.15 + float64(out[ev])*0.60) / 1e6
		if got[ev] != want || spend[ev].Cost != want {
			t.Errorf("%s: metric %v, spend %v, want exactly %v (from %d in, %d out)", ev, got[ev], spend[ev].Cost, want, in[ev], out[ev])
		}
		if s := spend[ev]; s.InputTokens != in[ev] || s.OutputTokens != out[ev] || s.Estimated != 0 || s.Currency != "USD" {
			t.Errorf("%s: spend %+v", ev, s)
		}
	}
	if est := costPoints(t, tel, "otelcol_processor_eval_judge_cost_estimated"); est["helpful"] != 0 {
		t.Errorf("estimated cost %v, want 0: every reply reported usage", est)
	}
}

// A reply without usage is costed with the estimate and counted as estimated.
func TestJudgeCostWithoutUsageIsEstimated(t *testing.T) {
	const content = `{"score": 0.5}`
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Content: content, NoUsage: true} })
	cfg := testConfig(srv.Endpoint())
	cfg.Price = testPrice
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	c := startWith(t, cfg, tel.NewTelemetrySettings())
	if _, err := c.Complete(judge.WithEvaluator(context.Background(), "helpful"), msgs); err != nil {
		t.Fatal(err)
	}
	wantIn, wantOut := judge.EstimateInputTokens(msgs), int64(len(content)/4+8)
	s := c.Spend()
	if len(s) != 1 || s[0].Estimated != 1 || s[0].InputTokens != wantIn || s[0].OutputTokens != wantOut {
		t.Fatalf("spend %+v, want one estimated call of %d in, %d out", s, wantIn, wantOut)
	}
	want := testPrice.Cost(wantIn, wantOut)
	if got := costPoints(t, tel, "otelcol_processor_eval_judge_cost")["helpful"]; got != want {
		t.Errorf("cost %v, want %v", got, want)
	}
	if got := costPoints(t, tel, "otelcol_processor_eval_judge_cost_estimated")["helpful"]; got != want {
		t.Errorf("estimated cost %v, want %v", got, want)
	}
	if v := testkit.IntSum(t, tel, "otelcol_processor_eval_judge_usage_estimated"); v != 1 {
		t.Errorf("usage_estimated %d, want 1", v)
	}
}

// Past a budget, calls are refused (the evaluators report skipped)
// before anything is sent; the reported usage, not the reservation, is
// what is spent.
func TestJudgeBudgets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out int64 // the usage each reply reports
		edit    func(*judge.Config)
		want    string
	}{
		// 700 used; the next call needs about 100+ and then some: 700+~120
		// fits, after it 1400 > 1000 does not.
		{"tokens_per_hour", 600, 100, func(c *judge.Config) { c.Budget.TokensPerHour = 1000 }, "tokens_per_hour"},
		// The first reply spends 1 EUR; the second call's estimate (a few
		// tokens) still fits under 1.5 and its reply spends 1 EUR more; the
		// third is refused: 2 EUR are spent.
		{"cost_per_hour", 1_000_000, 0, func(c *judge.Config) {
			c.Price = judge.PriceConfig{InputPerMillionTokens: 1, OutputPerMillionTokens: 2, Currency: "EUR"}
			c.Budget.CostPerHour = 1.5
		}, "budget.cost_per_hour is 1.5 EUR and 2 are used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Content: `{"score": 1}`, InputTokens: tc.in, OutputTokens: tc.out}
			})
			cfg := testConfig(srv.Endpoint())
			cfg.CacheSize = 0
			cfg.MaxTokens = 100
			tc.edit(&cfg)
			c := start(t, cfg)
			for i := range 2 {
				if _, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: fmt.Sprint("call ", i)}}); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			_, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: "third"}})
			if !errors.Is(err, judge.ErrBudgetExhausted) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBudgetExhausted naming %q", err, tc.want)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2 (no call past the budget)", n)
			}
		})
	}
}

func TestJudgeCostConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*judge.Config)
		want string
	}{
		{func(c *judge.Config) { c.Price = judge.PriceConfig{InputPerMillionTokens: 1} }, "price.currency: required"},
		{func(c *judge.Config) { c.Price = judge.PriceConfig{InputPerMillionTokens: -1, Currency: "USD"} }, "price.input_per_million_tokens"},
		{func(c *judge.Config) { c.Budget.CostPerDay = 3 }, "budget.cost_per_day: needs `price`"},
		{func(c *judge.Config) { c.Price = testPrice; c.Budget.CostPerHour = -1 }, "budget.cost_per_hour"},
	} {
		cfg := testConfig("http://localhost:1/v1")
		tc.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// In estimate mode nothing is sent: each call is recorded with its input
// estimate and max_tokens, a repeated prompt as a cache hit.
func TestJudgeEstimateOnly(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{"score": 1}`))
	cfg := testConfig(srv.Endpoint())
	cfg.MaxTokens = 300
	c, err := judge.New("default", cfg, componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	var calls []judge.Call
	c.SetEstimateOnly(func(call judge.Call) { calls = append(calls, call) })
	ctx := judge.WithEvaluator(context.Background(), "helpful")
	for range 2 {
		if _, err := c.Complete(ctx, msgs); !errors.Is(err, judge.ErrEstimateOnly) {
			t.Fatalf("err = %v, want ErrEstimateOnly", err)
		}
	}
	want := judge.Call{Judge: "default", Evaluator: "helpful", InputTokens: judge.EstimateInputTokens(msgs), MaxOutputTokens: 300}
	if len(calls) != 2 || calls[0] != want || !calls[1].Cached {
		t.Fatalf("calls %+v, want %+v then the same cached", calls, want)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent in estimate mode", n)
	}
}
