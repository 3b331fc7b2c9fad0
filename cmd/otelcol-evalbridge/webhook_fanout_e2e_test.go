package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// eval → [otlp_http, webhook] with the alert endpoint down and a queue of
// one request: the webhook's queue is full after two alerts. The webhook
// must not refuse the rest (docs/contract.md §17): a refusal went back to
// the eval processor, whose release was retried whole, so the healthy
// backend got every span again and again while later traces waited.
func TestFanOutWithAlertEndpointDown(t *testing.T) {
	const runs = 20 // every one fails tools_ok: an alert each
	be := testkit.NewSink(t)
	down := testkit.DownURL(t) // connection refused

	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/webhook-fanout-down.yaml",
		map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Webhook": down}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "travel-service")
	tr := tp.Tracer("e2e")
	send := func(prefix string) {
		agentRun(ctx, tr, prefix, "", []string{"search_flights", "book_flight"}, "book_flight")
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatalf("sending spans: %v", err)
		}
	}
	for i := range runs {
		send(fmt.Sprintf("run%02d", i))
	}
	// A last trace, sent once the others are in: it must not wait behind
	// them (head-of-line), and when it is in, every earlier span is too.
	waitFor(t, 20*time.Second, "the 20 traces at the backend", func() bool { return be.SpanCount() >= runs*6 })
	send("last")
	waitFor(t, 20*time.Second, "the last trace at the backend", func() bool {
		_, ok := be.Span("last invoke_agent travel_agent")
		return ok
	})
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	all := be.Spans()
	seen := map[string]int{}
	for _, s := range all {
		seen[s.Name()]++
	}
	dup := 0
	for name, n := range seen {
		if n != 1 {
			dup += n - 1
			t.Errorf("span %q received %d times, want once", name, n)
		}
	}
	if len(seen) != (runs+1)*6 {
		t.Errorf("backend has %d distinct spans, want %d", len(seen), (runs+1)*6)
	}
	t.Logf("spans received %d, distinct %d, duplicates %d", len(all), len(seen), dup)
}
