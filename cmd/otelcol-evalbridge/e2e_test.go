package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// newSDK is the Go OTel SDK exporting over OTLP/gRPC to addr, synchronously,
// as service.
func newSDK(t *testing.T, addr, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
}

// startCollector runs the distribution's collector (its real factories,
// config from a file) until the test ends.
func startCollector(t *testing.T, config string) {
	t.Helper()
	testkit.StartCollector(t, components, config)
}

// agentRun emits one travel-agent run with the OTel SDK: an invoke_agent
// span, a chat span before each tool call and after the last, and
// execute_tool spans. failTool fails that tool's span (status Error).
func agentRun(ctx context.Context, tr trace.Tracer, prefix string, expected string, tools []string, failTool string) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "travel_agent"),
		attribute.String("gen_ai.conversation.id", prefix+"-conv"),
	}
	if expected != "" {
		attrs = append(attrs, attribute.String("eval.expected.tool_calls", expected))
	}
	ctx, agent := tr.Start(ctx, prefix+" invoke_agent travel_agent", trace.WithAttributes(attrs...))
	chat := func(i int, output string) {
		_, s := tr.Start(ctx, fmt.Sprintf("%s chat gpt-4o %d", prefix, i), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.request.model", "gpt-4o"),
				attribute.String("gen_ai.provider.name", "openai"),
				attribute.String("gen_ai.response.id", fmt.Sprintf("chatcmpl-%s-%d", prefix, i)),
				attribute.String("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Fly me from SFO to Lisbon on June 12"}]}]`),
				attribute.String("gen_ai.output.messages", output),
				attribute.Int("gen_ai.usage.input_tokens", 120),
				attribute.Int("gen_ai.usage.output_tokens", 20),
			))
		s.End()
	}
	for i, name := range tools {
		args := `{"origin":"SFO","destination":"LIS","date":"2026-06-12"}`
		if name == "book_flight" {
			args = `{"flight_id":"TP236"}`
		}
		chat(i, fmt.Sprintf(`[{"role":"assistant","finish_reason":"tool_call","parts":[{"type":"tool_call","id":"call_%d","name":%q,"arguments":%s}]}]`, i, name, args))
		_, s := tr.Start(ctx, fmt.Sprintf("%s execute_tool %s %d", prefix, name, i), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)),
			attribute.String("gen_ai.tool.call.arguments", args),
			attribute.String("gen_ai.tool.call.result", `{"status":"ok"}`),
		))
		if name == failTool {
			s.SetStatus(codes.Error, "payment declined")
		}
		s.End()
	}
	chat(len(tools), `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"Booked."}]}]`)
	agent.End()
}

// TestEndToEnd runs the real distribution: OTLP/gRPC in from the Go SDK, the
// eval processor, OTLP/HTTP out to a test backend; it checks the results
// written onto the agent spans and that a non-GenAI span goes through.
func TestEndToEnd(t *testing.T) {
	be := testkit.NewSink(t)

	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/e2e.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "e2e-agent")
	tr := tp.Tracer("e2e")

	// bad: a repeated call and a failed tool; the span's own expectation
	// (three calls) overrides the config's (two).
	agentRun(ctx, tr, "bad", `[{"name":"search_flights"},{"name":"book_flight"},{"name":"book_hotel"}]`,
		[]string{"search_flights", "search_flights", "book_flight"}, "book_flight")
	// good: no expectation on the span, so the config's applies.
	agentRun(ctx, tr, "good", "", []string{"search_flights", "book_flight"}, "")
	// plain: not GenAI at all.
	_, plain := tr.Start(ctx, "GET /healthz", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "GET")))
	plain.End()

	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("sending spans: %v", err)
	}

	// bad: agent + 4 chats + 3 tools; good: agent + 3 chats + 2 tools; plain: 1.
	const want = 8 + 6 + 1
	deadline := time.Now().Add(20 * time.Second)
	for be.SpanCount() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := be.SpanCount(); got != want {
		t.Fatalf("backend received %d spans, want %d", got, want)
	}

	bad, _ := be.Span("bad invoke_agent travel_agent")
	// tool_trajectory: LCS([s,s,b], [s,b,h]) = 2 over the longer length 3.
	checkResult(t, bad, "tool_trajectory", 2.0/3, "failed")
	// tool_error: 2 of 3 calls without error.
	checkResult(t, bad, "tool_error", 2.0/3, "failed")
	// tool_efficiency: 2 distinct calls of 3; threshold 0.5.
	checkResult(t, bad, "tool_efficiency", 2.0/3, "passed")
	checkFailed(t, bad, []string{"tool_error", "tool_trajectory"})
	checkEvents(t, bad, map[string]string{"tool_trajectory": "fail", "tool_error": "fail", "tool_efficiency": "pass"})

	good, _ := be.Span("good invoke_agent travel_agent")
	checkResult(t, good, "tool_trajectory", 1, "passed")
	checkResult(t, good, "tool_error", 1, "passed")
	checkResult(t, good, "tool_efficiency", 1, "passed")
	checkFailed(t, good, nil)
	checkEvents(t, good, map[string]string{"tool_trajectory": "pass", "tool_error": "pass", "tool_efficiency": "pass"})

	// Only the agent spans carry results; the other spans are untouched.
	for _, name := range []string{"GET /healthz", "bad chat gpt-4o 0", "bad execute_tool book_flight 2", "good execute_tool search_flights 0"} {
		s, ok := be.Span(name)
		if !ok {
			t.Errorf("span %q did not come through", name)
			continue
		}
		for k := range s.Attributes().All() {
			if len(k) >= 5 && k[:5] == "eval." {
				t.Errorf("span %q has %s, want no eval.* attributes", name, k)
			}
		}
		if s.Events().Len() != 0 {
			t.Errorf("span %q has %d events, want none", name, s.Events().Len())
		}
	}
	plainOut, _ := be.Span("GET /healthz")
	if v, _ := plainOut.Attributes().Get("http.request.method"); v.Str() != "GET" {
		t.Errorf("GET /healthz lost its attributes: %v", plainOut.Attributes().AsRaw())
	}
}

func checkResult(t *testing.T, s ptrace.Span, name string, score float64, status string) {
	t.Helper()
	attrs := s.Attributes()
	if v, ok := attrs.Get("eval." + name + ".status"); !ok || v.Str() != status {
		t.Errorf("%s: eval.%s.status = %v, want %q (attributes %v)", s.Name(), name, rawOf(v, ok), status, attrs.AsRaw())
	}
	if v, ok := attrs.Get("eval." + name + ".score"); !ok || v.Type() != pcommon.ValueTypeDouble || math.Abs(v.Double()-score) > 1e-6 {
		t.Errorf("%s: eval.%s.score = %v, want %.4f", s.Name(), name, rawOf(v, ok), score)
	}
	if v, ok := attrs.Get("eval." + name + ".passed"); !ok || v.Type() != pcommon.ValueTypeBool || v.Bool() != (status == "passed") {
		t.Errorf("%s: eval.%s.passed = %v, want %v", s.Name(), name, rawOf(v, ok), status == "passed")
	}
}

// rawOf is an attribute's value for a message: a missing one is a zero
// Value, which AsRaw does not take.
func rawOf(v pcommon.Value, ok bool) any {
	if !ok {
		return "<missing>"
	}
	return v.AsRaw()
}

func checkFailed(t *testing.T, s ptrace.Span, want []string) {
	t.Helper()
	v, ok := s.Attributes().Get("eval.failed")
	if want == nil {
		if ok {
			t.Errorf("%s: eval.failed = %v, want none", s.Name(), rawOf(v, ok))
		}
		return
	}
	if !ok || v.Type() != pcommon.ValueTypeSlice {
		t.Errorf("%s: eval.failed = %v, want the array %v", s.Name(), rawOf(v, ok), want)
		return
	}
	var got []string
	for _, e := range v.Slice().All() {
		got = append(got, e.Str())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: eval.failed = %v, want %v", s.Name(), got, want)
	}
}

// checkEvents checks one gen_ai.evaluation.result event per evaluator with its label.
func checkEvents(t *testing.T, s ptrace.Span, labels map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, e := range s.Events().All() {
		if e.Name() != "gen_ai.evaluation.result" {
			continue
		}
		name, _ := e.Attributes().Get("gen_ai.evaluation.name")
		label, _ := e.Attributes().Get("gen_ai.evaluation.score.label")
		if _, ok := e.Attributes().Get("gen_ai.evaluation.score.value"); !ok {
			t.Errorf("%s: event for %s has no gen_ai.evaluation.score.value", s.Name(), name.Str())
		}
		if _, dup := got[name.Str()]; dup {
			t.Errorf("%s: two gen_ai.evaluation.result events for %s", s.Name(), name.Str())
		}
		got[name.Str()] = label.Str()
	}
	for name, label := range labels {
		if got[name] != label {
			t.Errorf("%s: gen_ai.evaluation.result for %s has label %q, want %q (events: %v)", s.Name(), name, got[name], label, got)
		}
	}
	if len(got) != len(labels) {
		t.Errorf("%s: %d gen_ai.evaluation.result events, want %d: %v", s.Name(), len(got), len(labels), got)
	}
}
