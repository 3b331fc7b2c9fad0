package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const twoPipelinesConfig = `
receivers:
  otlp/a:
    protocols:
      grpc:
        endpoint: %[1]s
  otlp/b:
    protocols:
      grpc:
        endpoint: %[2]s
processors:
  eval:
    wait: 200ms
    evaluators:
      - type: tool_error
exporters:
  otlp_http/a:
    endpoint: %[3]s
  otlp_http/b:
    endpoint: %[4]s
` + quietService + `    traces/a:
      receivers: [otlp/a]
      processors: [eval]
      exporters: [otlp_http/a]
    traces/b:
      receivers: [otlp/b]
      processors: [eval]
      exporters: [otlp_http/b]
`

// One `eval` in two traces pipelines (contract §17, finding 1): over
// several starts of the real distribution, each tenant's spans reach only
// its own backend, all of them, scored. Before, all traces of both reached
// one backend (which one depended on the start).
func TestTwoPipelinesKeepTheirTenants(t *testing.T) {
	for start := 1; start <= 3; start++ {
		t.Run(fmt.Sprintf("start%d", start), func(t *testing.T) {
			beA, beB := &backend{spans: map[string]ptrace.Span{}}, &backend{spans: map[string]ptrace.Span{}}
			srvA, srvB := httptest.NewServer(beA), httptest.NewServer(beB)
			defer srvA.Close()
			defer srvB.Close()
			addrA, addrB := freeAddr(t), freeAddr(t)
			startCollector(t, fmt.Sprintf(twoPipelinesConfig, addrA, addrB, srvA.URL, srvB.URL))

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
			for (beA.count() < wantA || beB.count() < wantB) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if beA.count() != wantA || beB.count() != wantB {
				t.Fatalf("backend A got %d spans (want %d), B %d (want %d)", beA.count(), wantA, beB.count(), wantB)
			}
			for be, prefix := range map[*backend]string{beA: "a", beB: "b"} {
				be.mu.Lock()
				for name := range be.spans {
					if !strings.HasPrefix(name, prefix) {
						t.Errorf("backend %s got span %q of the other tenant", prefix, name)
					}
				}
				be.mu.Unlock()
			}
			for i := 0; i < 3; i++ {
				a, _ := beA.get(fmt.Sprintf("a%d invoke_agent travel_agent", i))
				checkResult(t, a, "tool_error", 1, "passed")
				b, _ := beB.get(fmt.Sprintf("b%d invoke_agent travel_agent", i))
				checkResult(t, b, "tool_error", 0, "failed")
			}
		})
	}
}
