package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// The eval processor moves the spans it holds out of the request (it
// declares MutatesData). Behind a real receiver's fan-out to four
// pipelines, eval in two (two instances) and in neither of the others,
// every backend gets every span exactly once: the eval pipelines scored,
// the plain ones as sent (nothing of eval's results, no span missing
// because another pipeline moved it). Requests come both ways: one span
// per request (whole resources move) and batches of several traces mixed
// with plain spans (spans move one by one). The second eval pipeline lists
// another instance (eval/b) or the same one (eval: it gets every span twice,
// scores each trace once and writes the results on both pipelines' copies).
func TestFanoutEvalMovesOnlyItsOwnCopy(t *testing.T) {
	for _, evalB := range []string{"eval/b", "eval"} {
		t.Run(evalB, func(t *testing.T) { fanoutEvalMovesOnlyItsOwnCopy(t, evalB) })
	}
}

func fanoutEvalMovesOnlyItsOwnCopy(t *testing.T, evalB string) {
	be := map[string]*testkit.Sink{}
	vars := map[string]string{"EvalB": evalB}
	for _, n := range []string{"A", "B", "C", "D"} {
		be[n] = testkit.NewSink(t)
		vars["Backend"+n] = be[n].URL
	}
	grpcAddr := freeAddr(t)
	vars["OTLP"] = grpcAddr
	startCollector(t, testkit.Config(t, "testdata/fanout-move.yaml", vars))

	ctx := context.Background()
	one := newSDK(t, grpcAddr, "one-span-a-request")
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	batched := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "batched"))))

	want := map[string]bool{}
	for i := 0; i < 3; i++ {
		agentRun(ctx, one.Tracer("e2e"), fmt.Sprintf("one%d", i), "", []string{"search_flights", "book_flight"}, "book_flight")
		agentRun(ctx, batched.Tracer("e2e"), fmt.Sprintf("bat%d", i), "", []string{"search_flights"}, "")
		for _, tp := range []*sdktrace.TracerProvider{one, batched} {
			_, s := tp.Tracer("e2e").Start(ctx, fmt.Sprintf("plain %p %d GET /health", tp, i))
			s.End()
			want[fmt.Sprintf("plain %p %d GET /health", tp, i)] = true
		}
	}
	if err := batched.ForceFlush(ctx); err != nil { // one request: three traces and plain spans
		t.Fatal(err)
	}
	for _, tp := range []*sdktrace.TracerProvider{one, batched} {
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const total = 3*6 + 3*4 + 6 // agent runs of 2 and 1 tools, plain spans
	for name, s := range be {
		waitFor(t, 20*time.Second, "every span at backend "+name, func() bool { return s.SpanCount() >= total })
	}
	time.Sleep(300 * time.Millisecond) // more than wait: a duplicate would have come by now
	for name, s := range be {
		seen := map[string]int{}
		for _, sp := range s.Spans() {
			seen[sp.Name()]++
		}
		if len(seen) != total || s.SpanCount() != total {
			t.Errorf("backend %s: %d spans, %d distinct names, want %d each", name, s.SpanCount(), len(seen), total)
		}
		for n := range want {
			if seen[n] != 1 {
				t.Errorf("backend %s: plain span %q %d times, want once", name, n, seen[n])
			}
		}
		for i := 0; i < 3; i++ {
			a, ok := s.Span(fmt.Sprintf("one%d invoke_agent travel_agent", i))
			b, ok2 := s.Span(fmt.Sprintf("bat%d invoke_agent travel_agent", i))
			if !ok || !ok2 {
				t.Fatalf("backend %s: agent spans of run %d missing", name, i)
			}
			if name == "A" || name == "B" {
				checkResult(t, a, "tool_error", 0.5, "failed") // one of two tools failed
				checkResult(t, b, "tool_error", 1, "passed")
				continue
			}
			if _, scored := a.Attributes().Get("eval.tool_error.status"); scored {
				t.Errorf("backend %s (no eval in its pipeline) got a scored span: another pipeline's eval wrote into its data", name)
			}
		}
	}
}
