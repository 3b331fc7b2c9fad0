package adapter

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchTrace: 1 agent span, 3 LLM spans with ~2 KB of message JSON each in
// gen_ai.input.messages / gen_ai.output.messages, 4 tool spans.
func benchTrace(tb testing.TB) *traceBuilder {
	b := newTB(tb)
	filler := strings.Repeat("The traveller prefers aisle seats and quiet rooms. ", 18) // ~900 B
	type msg = map[string]any
	text := func(role, s string) msg {
		return msg{"role": role, "parts": []any{msg{"type": "text", "content": s}}}
	}
	call := func(id, name string, args msg) msg {
		return msg{"role": "assistant", "parts": []any{msg{"type": "tool_call", "id": id, "name": name, "arguments": args}}}
	}
	resp := func(id, s string) msg {
		return msg{"role": "tool", "parts": []any{msg{"type": "tool_call_response", "id": id, "response": s}}}
	}
	history := []any{text("user", userAsk+" "+filler), text("assistant", filler)}
	b.span("invoke_agent travel_agent", 1, 0, 0, 1000, msg{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"})
	tools := []struct {
		name string
		args msg
	}{{"search_flights", flightArgs}, {"search_hotels", msg{"city": "Paris"}}, {"book_hotel", hotelArgs}, {"send_email", msg{"to": "me@example.com"}}}
	id := byte(2)
	start := int64(10)
	for l := 0; l < 3; l++ {
		var out []any
		if l < 2 {
			out = []any{call("c"+itoa(2*l), tools[2*l].name, tools[2*l].args), call("c"+itoa(2*l+1), tools[2*l+1].name, tools[2*l+1].args)}
		} else {
			out = []any{text("assistant", finalAnswer+" "+filler)}
		}
		b.span("chat gpt-4o", id, 1, start, start+100, msg{
			"gen_ai.operation.name":      "chat",
			"gen_ai.provider.name":       "openai",
			"gen_ai.request.model":       "gpt-4o",
			"gen_ai.input.messages":      js(history),
			"gen_ai.output.messages":     js(out),
			"gen_ai.system_instructions": js([]any{msg{"type": "text", "content": sysPrompt}}),
			"gen_ai.tool.definitions":    js(otelDefs()),
			"gen_ai.usage.input_tokens":  int64(500),
			"gen_ai.usage.output_tokens": int64(50),
		})
		id++
		start += 100
		if l < 2 {
			for k := 0; k < 2; k++ {
				tl := tools[2*l+k]
				b.span("execute_tool "+tl.name, id, 1, start, start+50, msg{
					"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tl.name, "gen_ai.tool.call.id": "c" + itoa(2*l+k),
					"gen_ai.tool.call.arguments": js(tl.args), "gen_ai.tool.call.result": flightsRes,
				})
				id++
				start += 50
				history = append(history, resp("c"+itoa(2*l+k), flightsRes))
			}
		}
	}
	return b
}

func BenchmarkAdapt(b *testing.B) {
	refs := benchTrace(b).refs()
	if len(refs) != 8 {
		b.Fatalf("%d spans", len(refs))
	}
	cases, problems := Adapt(refs)
	if len(problems) > 0 || len(cases) != 4 {
		b.Fatalf("cases %d problems %v", len(cases), problems)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		cs, _ := Adapt(refs)
		n += len(cs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "cases/s")
}

func BenchmarkUnmarshalOTLPProto(b *testing.B) {
	tr := benchTrace(b)
	var m ptrace.ProtoMarshaler
	buf, err := m.MarshalTraces(tr.td)
	if err != nil {
		b.Fatal(err)
	}
	var u ptrace.ProtoUnmarshaler
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := u.UnmarshalTraces(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchTraceSize(t *testing.T) {
	refs := benchTrace(t).refs()
	for _, r := range refs {
		if v, ok := r.Span.Attributes().Get("gen_ai.input.messages"); ok && len(v.Str()) < 1500 {
			t.Errorf("input messages only %d bytes", len(v.Str()))
		}
	}
}

// httpServerSpan is a realistic non-GenAI span: an HTTP server span with 12
// attributes.
func httpServerSpan(tb testing.TB) ptrace.Span {
	b := newTB(tb)
	sp := b.span("GET /api/orders/{id}", 2, 1, 0, 5, map[string]any{
		"http.request.method": "GET", "http.route": "/api/orders/{id}", "http.response.status_code": int64(200),
		"url.full": "https://shop.example.com/api/orders/12345", "url.scheme": "https", "server.address": "shop.example.com",
		"server.port": int64(443), "network.protocol.version": "1.1", "user_agent.original": "Mozilla/5.0",
		"client.address": "10.0.0.7", "db.system.name": "postgresql", "thread.name": "worker-3",
	})
	sp.SetKind(ptrace.SpanKindServer)
	return sp
}

// chatSpan is an OTel GenAI chat span with 10 attributes in a fixed order,
// gen_ai.operation.name first or last.
func chatSpan(tb testing.TB, kindFirst bool) ptrace.Span {
	sp := newTB(tb).span("chat gpt-4o", 2, 1, 0, 5, nil)
	a := sp.Attributes()
	if kindFirst {
		a.PutStr("gen_ai.operation.name", "chat")
	}
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutStr("gen_ai.response.model", "gpt-4o-2024-08-06")
	a.PutStr("gen_ai.response.id", "resp_1")
	a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`)
	a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"hello"}]}]`)
	a.PutInt("gen_ai.usage.input_tokens", 10)
	a.PutInt("gen_ai.usage.output_tokens", 2)
	a.PutStr("server.address", "api.openai.com")
	if !kindFirst {
		a.PutStr("gen_ai.operation.name", "chat")
	}
	return sp
}

func BenchmarkIsGenAI(b *testing.B) {
	for _, tc := range []struct {
		name string
		span ptrace.Span
		want bool
	}{
		{"http_server_12attrs", httpServerSpan(b), false},
		{"otel_chat_kind_first", chatSpan(b, true), true},
		{"otel_chat_kind_last", chatSpan(b, false), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if IsGenAI(tc.span) != tc.want {
				b.Fatalf("IsGenAI = %v", !tc.want)
			}
			b.ReportAllocs()
			n := 0
			for i := 0; i < b.N; i++ {
				if IsGenAI(tc.span) {
					n++
				}
			}
			if n != 0 && n != b.N {
				b.Fatal(n)
			}
		})
	}
}

// BenchmarkAdaptAgentCases builds the agent cases only, as the engine does
// when no configured evaluator scores llm cases.
func BenchmarkAdaptAgentCases(b *testing.B) {
	refs := benchTrace(b).refs()
	cases, problems := AdaptWith(refs, Options{AgentCases: true})
	if len(problems) > 0 || len(cases) != 1 {
		b.Fatalf("cases %d problems %v", len(cases), problems)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		AdaptWith(refs, Options{AgentCases: true})
	}
}

// BenchmarkAdaptAgentCasesSkipConversation builds the agent cases without
// their conversation, as the engine does when the configured evaluators
// read only tool calls, definitions and metadata.
func BenchmarkAdaptAgentCasesSkipConversation(b *testing.B) {
	refs := benchTrace(b).refs()
	opts := Options{AgentCases: true, SkipConversation: true}
	cases, problems := AdaptWith(refs, opts)
	if len(problems) > 0 || len(cases) != 1 || len(cases[0].ToolCalls) != 4 {
		b.Fatalf("cases %+v problems %v", cases, problems)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		AdaptWith(refs, opts)
	}
}
