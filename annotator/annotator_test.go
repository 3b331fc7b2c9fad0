package annotator

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/evaluators"
)

func TestAnnotateWritesAttributesAndEvents(t *testing.T) {
	span := ptrace.NewSpan()
	span.Attributes().PutStr("gen_ai.response.id", "chatcmpl-1")
	ts := pcommon.Timestamp(42)
	Annotate(span, []evaluators.Result{
		{Name: "booking_flow", Status: evaluators.StatusFailed, Score: 0.5, Threshold: 1, Reason: "book_hotel came before search_flights"},
		{Name: "tool_error", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "validity", Status: evaluators.StatusSkipped, Reason: "no tool definitions"},
		{Name: "judge", Status: evaluators.StatusError, Reason: "judge timed out"},
	}, ts)

	attrs := span.Attributes()
	wantDouble := map[string]float64{"eval.booking_flow.score": 0.5, "eval.tool_error.score": 1, "eval.booking_flow.threshold": 1}
	for k, want := range wantDouble {
		v, ok := attrs.Get(k)
		if !ok || v.Type() != pcommon.ValueTypeDouble || v.Double() != want {
			t.Errorf("%s = %v (present %v), want double %v", k, v.AsRaw(), ok, want)
		}
	}
	wantStr := map[string]string{
		"eval.booking_flow.status": "failed", "eval.tool_error.status": "passed",
		"eval.validity.status": "skipped", "eval.judge.status": "error",
		"eval.booking_flow.reason": "book_hotel came before search_flights", "eval.judge.reason": "judge timed out",
	}
	for k, want := range wantStr {
		if v, ok := attrs.Get(k); !ok || v.Str() != want {
			t.Errorf("%s = %q, want %q", k, v.AsString(), want)
		}
	}
	if v, ok := attrs.Get("eval.booking_flow.passed"); !ok || v.Bool() {
		t.Errorf("eval.booking_flow.passed = %v, want false", v.AsRaw())
	}
	if v, ok := attrs.Get("eval.tool_error.passed"); !ok || !v.Bool() {
		t.Errorf("eval.tool_error.passed = %v, want true", v.AsRaw())
	}
	for _, k := range []string{"eval.validity.score", "eval.validity.passed", "eval.judge.score"} {
		if _, ok := attrs.Get(k); ok {
			t.Errorf("%s must be absent for an unscored result", k)
		}
	}
	failed, ok := attrs.Get("eval.failed")
	if !ok || failed.Type() != pcommon.ValueTypeSlice || failed.Slice().Len() != 1 || failed.Slice().At(0).Str() != "booking_flow" {
		t.Errorf("eval.failed = %v, want [booking_flow]", failed.AsRaw())
	}

	// One event per scored result.
	if n := span.Events().Len(); n != 2 {
		t.Fatalf("events = %d, want 2", n)
	}
	ev := span.Events().At(0)
	if ev.Name() != "gen_ai.evaluation.result" || ev.Timestamp() != ts {
		t.Errorf("event name %q ts %v", ev.Name(), ev.Timestamp())
	}
	want := map[string]any{
		"gen_ai.evaluation.name": "booking_flow", "gen_ai.evaluation.score.value": 0.5,
		"gen_ai.evaluation.score.label": "fail", "gen_ai.evaluation.explanation": "book_hotel came before search_flights",
		"gen_ai.response.id": "chatcmpl-1",
	}
	got := ev.Attributes().AsRaw()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("event %s = %v, want %v", k, got[k], v)
		}
	}
	if l := span.Events().At(1).Attributes().AsRaw()["gen_ai.evaluation.score.label"]; l != "pass" {
		t.Errorf("second event label = %v, want pass", l)
	}
}

func TestAnnotateMergesFailedAcrossCalls(t *testing.T) {
	span := ptrace.NewSpan()
	Annotate(span, []evaluators.Result{{Name: "a", Status: evaluators.StatusFailed}}, 0)
	Annotate(span, []evaluators.Result{{Name: "b", Status: evaluators.StatusFailed}, {Name: "a", Status: evaluators.StatusFailed}}, 0)
	v, _ := span.Attributes().Get("eval.failed")
	if got := v.AsRaw(); len(got.([]any)) != 2 {
		t.Errorf("eval.failed = %v, want [a b]", got)
	}
}

func TestAnnotateNoResponseIDNoEventAttr(t *testing.T) {
	span := ptrace.NewSpan()
	Annotate(span, []evaluators.Result{{Name: "a", Status: evaluators.StatusPassed, Score: 1}}, 0)
	if _, ok := span.Events().At(0).Attributes().Get("gen_ai.response.id"); ok {
		t.Error("gen_ai.response.id must be absent when the span has none")
	}
}

func TestReasonIsTruncatedOnRuneBoundary(t *testing.T) {
	span := ptrace.NewSpan()
	long := strings.Repeat("é", 1000) // 2000 bytes
	Annotate(span, []evaluators.Result{{Name: "a", Status: evaluators.StatusFailed, Reason: long}}, 0)
	v, _ := span.Attributes().Get("eval.a.reason")
	if len(v.Str()) > maxReasonBytes || !utf8.ValidString(v.Str()) || len(v.Str()) < maxReasonBytes-1 {
		t.Errorf("reason len %d valid %v", len(v.Str()), utf8.ValidString(v.Str()))
	}
}

func TestKeysOf(t *testing.T) {
	for i := 0; i < 2; i++ { // built, then cached
		k := keysOf("traj")
		if k.status != "eval.traj.status" || k.reason != "eval.traj.reason" || k.score != "eval.traj.score" ||
			k.passed != "eval.traj.passed" || k.threshold != "eval.traj.threshold" {
			t.Fatalf("keys %+v", *k)
		}
	}
}
