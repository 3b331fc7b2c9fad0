package engine

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/evaluators"
)

func TestScoreTraceWritesResultsOnTheAgentSpan(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_trajectory", "name": "booking_flow", "mode": "strict"},
		map[string]any{"type": "tool_error"},
	}})
	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	rep := e.ScoreTrace(context.Background(), spans)
	got := results(rep)
	if r := got["booking_flow"]; r.Status != evaluators.StatusFailed || r.Score != 0 {
		t.Errorf("booking_flow = %+v, want failed with 0 (wrong order under strict)", r)
	}
	if r := got["tool_error"]; r.Status != evaluators.StatusFailed || r.Score != 0.5 {
		t.Errorf("tool_error = %+v, want failed with 0.5 (one of two calls errored)", r)
	}
	agent := findSpan(spans, "invoke_agent travel_agent")
	if v, ok := agent.Attributes().Get("eval.booking_flow.status"); !ok || v.Str() != "failed" {
		t.Errorf("agent span eval.booking_flow.status = %v", v.AsRaw())
	}
	failed, _ := agent.Attributes().Get("eval.failed")
	if failed.Slice().Len() != 2 {
		t.Errorf("eval.failed = %v, want both evaluators", failed.AsRaw())
	}
}

func TestWhenSelectsSpans(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error", "name": "travel_only", "when": []any{`attributes["gen_ai.agent.name"] == "travel_agent"`}},
		map[string]any{"type": "tool_error", "name": "other_only", "when": []any{`attributes["gen_ai.agent.name"] == "support_agent"`}},
	}})
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	if _, ok := got["travel_only"]; !ok {
		t.Error("travel_only did not run on the travel agent")
	}
	if _, ok := got["other_only"]; ok {
		t.Error("other_only ran although its condition does not hold")
	}
}

func TestSampleRateDecidesByTraceID(t *testing.T) {
	e1 := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error", "sample_rate": 0.3}}})
	e2 := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error", "sample_rate": 0.3}}})
	in1, in2 := &e1.instances[0], &e2.instances[0]
	picked := 0
	for i := 0; i < 10000; i++ {
		var id pcommon.TraceID
		id[0], id[1], id[15] = byte(i), byte(i>>8), byte(i*7)
		a, b := in1.sampled(id), in2.sampled(id)
		if a != b {
			t.Fatalf("two engines disagree on trace %s", id)
		}
		if a {
			picked++
		}
	}
	if picked < 2500 || picked > 3500 {
		t.Errorf("sample_rate 0.3 picked %d of 10000", picked)
	}
	none := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error", "sample_rate": 0.0}}})
	if rep := none.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)); len(rep.Evaluations) != 0 {
		t.Errorf("sample_rate 0 still evaluated: %+v", rep.Evaluations)
	}
}

func TestExpiredContextMarksTimeout(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error"}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spans := loadTrace(t, semconvTrace)
	got := results(e.ScoreTrace(ctx, spans))
	if r := got["tool_error"]; r.Status != evaluators.StatusTimeout {
		t.Errorf("tool_error = %+v, want timeout", r)
	}
	if v, ok := findSpan(spans, "invoke_agent travel_agent").Attributes().Get("eval.tool_error.status"); !ok || v.Str() != "timeout" {
		t.Errorf("status attribute = %v, want timeout", v.AsRaw())
	}
}

func TestConfigValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml map[string]any
		want string
	}{
		"no evaluators":  {map[string]any{}, "at least one evaluator"},
		"bad when":       {map[string]any{"evaluators": []any{map[string]any{"type": "tool_error", "when": []any{"attributes[ =="}}}}, `evaluator "tool_error": when`},
		"unknown type":   {map[string]any{"evaluators": []any{map[string]any{"type": "nope"}}}, `unknown type "nope"`},
		"duplicate name": {map[string]any{"evaluators": []any{map[string]any{"type": "tool_error"}, map[string]any{"type": "tool_error"}}}, "used twice"},
		"bad timeout":    {map[string]any{"timeout": "-1s", "evaluators": []any{map[string]any{"type": "tool_error"}}}, "timeout"},
		"bad max_traces": {map[string]any{"max_traces": 0, "evaluators": []any{map[string]any{"type": "tool_error"}}}, "max_traces"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			if err := confmap.NewFromStringMap(tc.yaml).Unmarshal(&cfg); err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("unmarshal error %v", err)
				}
				return
			}
			err := confmap.Validate(&cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func BenchmarkScoreTrace(b *testing.B) {
	e := newEngine(b, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_trajectory"}, map[string]any{"type": "tool_error"},
	}})
	src := loadTrace(b, semconvTrace)
	b.ReportAllocs()
	for b.Loop() {
		// Annotating writes into the spans: work on a fresh copy each time.
		b.StopTimer()
		spans := copySpans(src)
		b.StartTimer()
		e.ScoreTrace(context.Background(), spans)
	}
}

// `when` is any-of: a condition that errors on a span does not hide one that
// holds.
func TestWhenErroringConditionDoesNotHideAnother(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error", "when": []any{
			`Int(attributes["gen_ai.agent.name"]) > 0`, // cannot convert: an error on this span
			`attributes["gen_ai.agent.name"] == "travel_agent"`,
		}},
	}})
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	if _, ok := got["tool_error"]; !ok {
		t.Error("tool_error did not run although its second condition holds")
	}
}
