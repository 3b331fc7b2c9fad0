package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// One `eval` in two traces pipelines (contract §17, finding 1): over
// several starts of the real distribution, each tenant's spans reach only
// its own backend, all of them, scored. Before, all traces of both reached
// one backend (which one depended on the start).
func TestTwoPipelinesKeepTheirTenants(t *testing.T) {
	for start := 1; start <= 3; start++ {
		t.Run(fmt.Sprintf("start%d", start), func(t *testing.T) {
			beA, beB := testkit.NewSink(t), testkit.NewSink(t)
			addrA, addrB := freeAddr(t), freeAddr(t)
			startCollector(t, testkit.Config(t, "testdata/two-pipelines.yaml", map[string]string{"OTLPA": addrA, "OTLPB": addrB, "BackendA": beA.URL, "BackendB": beB.URL}))

			ctx := context.Background()
			tpA, tpB := newSDK(t, addrA, "tenant-a"), newSDK(t, addrB, "tenant-b")
			for i := 0; i < 3; i++ {
				agentRun(ctx, tpA.Tracer("a"), fmt.Sprintf("a%d", i), "", []string{"search_flights", "book_flight"}, "")
				agentRun(ctx, tpB.Tracer("b"), fmt.Sprintf("b%d", i), "", []string{"search_flights"}, "search_flights")
			}
			if err := tpA.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tpB.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			const wantA, wantB = 3 * 6, 3 * 4 // agent + chats + tools
			deadline := time.Now().Add(20 * time.Second)
			for (beA.SpanCount() < wantA || beB.SpanCount() < wantB) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if beA.SpanCount() != wantA || beB.SpanCount() != wantB {
				t.Fatalf("backend A got %d spans (want %d), B %d (want %d)", beA.SpanCount(), wantA, beB.SpanCount(), wantB)
			}
			for be, prefix := range map[*testkit.Sink]string{beA: "a", beB: "b"} {
				for _, s := range be.Spans() {
					if !strings.HasPrefix(s.Name(), prefix) {
						t.Errorf("backend %s got span %q of the other tenant", prefix, s.Name())
					}
				}
			}
			for i := 0; i < 3; i++ {
				a, _ := beA.Span(fmt.Sprintf("a%d invoke_agent travel_agent", i))
				checkResult(t, a, "tool_error", 1, "passed")
				b, _ := beB.Span(fmt.Sprintf("b%d invoke_agent travel_agent", i))
				checkResult(t, b, "tool_error", 0, "failed")
			}
		})
	}
}
