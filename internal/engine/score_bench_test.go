package engine

import (
	"context"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

// BenchmarkScoreAgentTrace scores example agent traces with the five
// deterministic evaluators of bench/procbench (what the processor does per
// trace, without the processor): adapting, evaluating and writing the
// results back. Annotating writes into the spans, so each trace is scored on
// a fresh copy, made with the timer stopped in chunks of copies.
func BenchmarkScoreAgentTrace(b *testing.B) {
	e := newEngine(b, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_trajectory", "mode": "in_order", "expected": []any{
			map[string]any{"name": "search_flights"}, map[string]any{"name": "book_hotel"}}},
		map[string]any{"type": "tool_call_validity"},
		map[string]any{"type": "tool_error"},
		map[string]any{"type": "tool_efficiency"},
		map[string]any{"type": "token_usage", "max_total": 100000},
	}})
	for name, path := range map[string]string{
		"semconv":       semconvTrace,
		"openinference": "../../examples/traces/travel-agent-openinference.json",
	} {
		b.Run(name, func(b *testing.B) {
			src := loadTrace(b, path)
			const chunk = 256
			copies := make([][]adapter.SpanRef, chunk)
			refill := func() {
				for k := range copies {
					copies[k] = copySpans(src)
				}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if n%chunk == 0 {
					b.StopTimer()
					refill()
					b.StartTimer()
				}
				e.ScoreTrace(context.Background(), copies[n%chunk])
				n++
			}
		})
	}
}
