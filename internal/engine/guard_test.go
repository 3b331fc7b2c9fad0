package engine

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// A caller that has given the spans up (the processor forwarded them at its
// deadline) refuses the claim: the engine then writes nothing onto them,
// and still calls done.
func TestAnnotateGuard(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{map[string]any{"type": "tool_error"}}})
	for _, allow := range []bool{true, false} {
		spans := loadTrace(t, semconvTrace)
		before := snapshot(spans)
		claims := 0
		rep := scoreWith(e, spans, ScoreOptions{Claim: func() bool { claims++; return allow }})
		if claims != 1 {
			t.Fatalf("allow=%v: claim called %d times, want once", allow, claims)
		}
		changed := snapshot(spans) != before
		if allow && (!changed || len(rep.Evaluations) == 0) {
			t.Fatalf("claim granted: want results on the spans and in the report")
		}
		if !allow && (changed || len(rep.Evaluations) != 0) {
			t.Fatalf("claim refused: the spans were written (changed=%v) or results reported (%d)", changed, len(rep.Evaluations))
		}
	}
}

// scoreWith is ScoreTrace with options: it waits for done.
func scoreWith(e *Engine, spans []adapter.SpanRef, opts ScoreOptions) Report {
	ch := make(chan Report, 1)
	e.ScoreTraceAsync(context.Background(), spans, opts, func(r Report) { ch <- r })
	return <-ch
}

func snapshot(spans []adapter.SpanRef) string {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, s := range spans {
		s.Span.CopyTo(ss.Spans().AppendEmpty())
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return string(b)
}
