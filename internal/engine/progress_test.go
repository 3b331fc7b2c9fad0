package engine

import (
	"context"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

// stuckEval ignores its context until released.
type stuckEval struct{ started, release chan struct{} }

func (s stuckEval) Evaluate(context.Context, *adapter.Case) evaluators.Result {
	close(s.started)
	<-s.release
	return evaluators.Scored(1, "late", nil)
}

// A trace taken over while an evaluator ignores its deadline carries the
// results that finished and `timeout` for the rest (contract §5 "with what
// finished"); the engine then writes nothing on the spans and reads them no
// more. Before, the caller could only forward the trace with no results.
func TestTakeOverGivesWhatFinished(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error"},
		map[string]any{"type": "tool_efficiency"},
	}})
	stuck := stuckEval{started: make(chan struct{}), release: make(chan struct{})}
	// a third instance, between the two, that hangs
	e.instances = append(e.instances[:1], append([]instance{{Instance: &evaluators.Instance{
		Name: "hangs", Type: "hangs", Threshold: 0.5, Level: adapter.LevelAgent, SampleRate: 1, Evaluator: stuck,
	}, sampleAll: true}}, e.instances[1:]...)...)
	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	prog := NewProgress()
	done := make(chan Report, 1)
	go e.ScoreTraceAsync(context.Background(), spans, ScoreOptions{Progress: prog}, func(r Report) { done <- r })
	<-stuck.started
	partial, ok := prog.TakeOver()
	if !ok || len(partial) != 1 {
		t.Fatalf("TakeOver = %v, %v", partial, ok)
	}
	got := map[string]evaluators.Status{}
	for _, r := range partial[0].Results {
		got[r.Name] = r.Status
	}
	want := map[string]evaluators.Status{"tool_error": evaluators.StatusFailed, "hangs": evaluators.StatusTimeout,
		"tool_efficiency": evaluators.StatusTimeout}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if partial[0].Ref.Span.Name() != "invoke_agent travel_agent" {
		t.Errorf("case span %q", partial[0].Ref.Span.Name())
	}
	close(stuck.release)
	rep := <-done
	if len(rep.Evaluations) != 0 {
		t.Errorf("the engine reported %d evaluations after the take-over", len(rep.Evaluations))
	}
	if _, ok := findSpan(spans, "invoke_agent travel_agent").Attributes().Get("eval.tool_error.status"); ok {
		t.Error("the engine wrote on spans it no longer owns")
	}
	if _, ok := prog.TakeOver(); ok {
		t.Error("taken over twice")
	}
}

// Once the deterministic part is over, it is too late to take over: the
// engine finishes the trace (judges report `timeout` at the deadline).
func TestTakeOverTooLate(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error"}}})
	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	prog := NewProgress()
	rep := scoreWith(e, spans, ScoreOptions{Progress: prog})
	if len(rep.Evaluations) != 1 {
		t.Fatalf("evaluations %d", len(rep.Evaluations))
	}
	if _, ok := prog.TakeOver(); ok {
		t.Error("took over a finished trace")
	}
}

// What a take-over hands back is written on the spans by the caller, so
// it is masked like every result written back (docs/contract.md §20): a
// reason that quotes a card number and an e-mail address in the
// spellings people type does not reach the spans.
func TestTakeOverRedactsReasons(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "cel", "name": "echo", "expression": `{"score": 0.0, "reason": "Card:4111111111111111 mail bob%40example.com"}`},
	}})
	stuck := stuckEval{started: make(chan struct{}), release: make(chan struct{})}
	e.instances = append(e.instances, instance{Instance: &evaluators.Instance{
		Name: "hangs", Type: "hangs", Threshold: 0.5, Level: adapter.LevelAgent, SampleRate: 1, Evaluator: stuck,
	}, sampleAll: true})
	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	prog := NewProgress()
	done := make(chan Report, 1)
	go e.ScoreTraceAsync(context.Background(), spans, ScoreOptions{Progress: prog}, func(r Report) { done <- r })
	<-stuck.started
	partial, ok := prog.TakeOver()
	close(stuck.release)
	<-done
	if !ok || len(partial) != 1 {
		t.Fatalf("TakeOver = %v, %v", partial, ok)
	}
	for _, r := range partial[0].Results {
		if r.Name == "echo" && r.Reason != "Card:[REDACTED:credit_card#1] mail [REDACTED:email#1]" {
			t.Errorf("reason %q", r.Reason)
		}
	}
}
