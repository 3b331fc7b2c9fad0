package adapter

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// enc returns v as is (structured) or as a JSON string.
func enc(v any, asJSON bool) any {
	if asJSON {
		return js(v)
	}
	return v
}

func otelDefs() []any {
	return []any{
		map[string]any{"type": "function", "name": "search_flights", "description": flightDesc, "parameters": flightSchema},
		map[string]any{"type": "function", "function": map[string]any{"name": "book_hotel", "description": hotelDesc, "parameters": hotelSchema}},
	}
}

// buildOTel: OTel GenAI semconv, content structured or JSON strings.
func buildOTel(t testing.TB, asJSON bool) *traceBuilder {
	b := newTB(t)
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": userAsk}}}
	call1 := map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": "call_1", "name": "search_flights", "arguments": flightArgs}}, "finish_reason": "tool_call"}
	res1 := map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": "call_1", "response": flightsRes}}}
	call2 := map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": "call_2", "name": "book_hotel", "arguments": js(hotelArgs)}}}
	res2 := map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": "call_2", "result": hotelRes}}}
	final := map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": finalAnswer}}, "finish_reason": "stop"}
	sys := []any{map[string]any{"type": "text", "content": sysPrompt}}
	llm := func(id byte, start, end int64, in, out []any, inTok int64) {
		b.span("chat gpt-4o", id, 1, start, end, map[string]any{
			"gen_ai.operation.name":      "chat",
			"gen_ai.provider.name":       "openai",
			"gen_ai.request.model":       "gpt-4o",
			"gen_ai.response.model":      "gpt-4o-2024-08-06",
			"gen_ai.response.id":         "resp_" + string('0'+id),
			"gen_ai.input.messages":      enc(in, asJSON),
			"gen_ai.output.messages":     enc(out, asJSON),
			"gen_ai.system_instructions": enc(sys, asJSON),
			"gen_ai.tool.definitions":    enc(otelDefs(), asJSON),
			"gen_ai.usage.input_tokens":  inTok,
			"gen_ai.usage.output_tokens": int64(20),
		})
	}
	b.span("invoke_agent travel_agent", 1, 0, 0, 1000, map[string]any{
		"gen_ai.operation.name":  "invoke_agent",
		"gen_ai.agent.name":      "travel_agent",
		"gen_ai.conversation.id": "conv-1",
	})
	llm(2, 10, 100, []any{user}, []any{call1}, 100)
	b.span("execute_tool search_flights", 3, 1, 100, 200, map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           "search_flights",
		"gen_ai.tool.call.id":        "call_1",
		"gen_ai.tool.call.arguments": enc(flightArgs, asJSON),
		"gen_ai.tool.call.result":    flightsRes,
	})
	b.span("retrieval hotels", 4, 1, 200, 250, map[string]any{
		"gen_ai.operation.name":      "retrieval",
		"gen_ai.retrieval.documents": enc([]any{hotelDoc}, asJSON),
	})
	llm(5, 250, 400, []any{user, call1, res1}, []any{call2}, 200)
	b.span("execute_tool book_hotel", 6, 1, 400, 500, map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           "book_hotel",
		"gen_ai.tool.call.id":        "call_2",
		"gen_ai.tool.call.arguments": enc(hotelArgs, asJSON),
		"gen_ai.tool.call.result":    hotelRes,
	})
	llm(7, 500, 900, []any{user, call1, res1, call2, res2}, []any{final}, 300)
	return b
}

func agentCase(t *testing.T, cases []Case) Case {
	t.Helper()
	var out []Case
	for _, c := range cases {
		if c.Level == LevelAgent {
			out = append(out, c)
		}
	}
	if len(out) != 1 {
		t.Fatalf("want 1 agent case, got %d of %d", len(out), len(cases))
	}
	return out[0]
}

func TestOTelGenAI(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		name := "structured"
		if asJSON {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			cases, problems := Adapt(buildOTel(t, asJSON).refs())
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			if len(cases) != 4 {
				t.Fatalf("want 4 cases (3 llm + 1 agent), got %d", len(cases))
			}
			if cases[0].Level != LevelAgent {
				t.Errorf("first case should be the agent (earliest anchor), got %s", cases[0].Level)
			}
			a := agentCase(t, cases)
			checkTravelAgent(t, a, true)
			if a.SystemInstructions != sysPrompt {
				t.Errorf("system %q", a.SystemInstructions)
			}
			if a.AgentName != "travel_agent" || a.ConversationID != "conv-1" || a.ServiceName != "travel-app" {
				t.Errorf("agent meta %q %q %q", a.AgentName, a.ConversationID, a.ServiceName)
			}
			if a.Model != "gpt-4o-2024-08-06" || a.Provider != "openai" || a.ResponseID != "resp_7" {
				t.Errorf("model %q provider %q resp %q", a.Model, a.Provider, a.ResponseID)
			}
			if a.Usage.InputTokens != 600 || a.Usage.OutputTokens != 60 || !a.Usage.HasInputTokens {
				t.Errorf("usage %+v", a.Usage)
			}
			if a.Latency.Milliseconds() != 1000 {
				t.Errorf("latency %v", a.Latency)
			}
			if len(a.Documents) != 1 || a.Documents[0].ID != "h1" || a.Documents[0].Score != 0.92 {
				t.Errorf("documents %+v", a.Documents)
			}
			if len(a.Messages) != 6 || a.Messages[2].Role != "tool" || a.Messages[2].ToolCallID != "call_1" || a.Messages[2].Content != flightsRes {
				t.Errorf("messages %+v", a.Messages)
			}
			if a.ToolCalls[0].Duration.Milliseconds() != 100 || a.ToolCalls[0].SpanID != sid(3) {
				t.Errorf("tool call span data %+v", a.ToolCalls[0])
			}
			// llm cases
			l1 := cases[1]
			if l1.Level != LevelLLM || l1.SpanID != sid(2) || l1.Input != userAsk || l1.Output != "" || len(l1.ToolCalls) != 1 || l1.ToolCalls[0].Name != "search_flights" || !jsonEqual(l1.ToolCalls[0].Arguments, flightArgs) {
				t.Errorf("llm case 1 %+v", l1)
			}
			l3 := cases[3]
			if l3.Output != finalAnswer || l3.AgentName != "travel_agent" || l3.Usage.InputTokens != 300 || len(l3.Documents) != 1 {
				t.Errorf("llm case 3 %+v", l3)
			}
		})
	}
}

// buildOpenInference: flattened llm.* attributes, input.value/output.value.
func buildOpenInference(t testing.TB) *traceBuilder {
	b := newTB(t)
	type msg = map[string]any
	put := func(attrs msg, prefix string, msgs []msg) {
		for i, m := range msgs {
			p := prefix + "." + itoa(i) + ".message."
			for k, v := range m {
				attrs[p+k] = v
			}
		}
	}
	user := msg{"role": "user", "contents.0.message_content.type": "text", "contents.0.message_content.text": userAsk}
	sys := msg{"role": "system", "content": sysPrompt}
	call1 := msg{"role": "assistant", "tool_calls.0.tool_call.id": "call_1", "tool_calls.0.tool_call.function.name": "search_flights", "tool_calls.0.tool_call.function.arguments": js(flightArgs)}
	res1 := msg{"role": "tool", "tool_call_id": "call_1", "content": flightsRes}
	call2 := msg{"role": "assistant", "tool_calls.0.tool_call.id": "call_2", "tool_calls.0.tool_call.function.name": "book_hotel", "tool_calls.0.tool_call.function.arguments": js(hotelArgs)}
	res2 := msg{"role": "tool", "tool_call_id": "call_2", "content": hotelRes}
	final := msg{"role": "assistant", "content": finalAnswer}
	llm := func(id byte, start, end int64, in, out []msg) {
		attrs := msg{
			"openinference.span.kind":      "LLM",
			"llm.model_name":               "gpt-4o-2024-08-06",
			"llm.provider":                 "openai",
			"llm.token_count.prompt":       int64(100),
			"llm.tools.0.tool.json_schema": js(msg{"type": "function", "function": msg{"name": "search_flights", "description": flightDesc, "parameters": flightSchema}}),
			"llm.tools.1.tool.json_schema": js(msg{"type": "function", "function": msg{"name": "book_hotel", "description": hotelDesc, "parameters": hotelSchema}}),
			"input.value":                  js(msg{"model": "gpt-4o", "messages": []any{}}),
			"input.mime_type":              "application/json",
		}
		put(attrs, "llm.input_messages", in)
		put(attrs, "llm.output_messages", out)
		b.span("ChatCompletion", id, 1, start, end, attrs)
	}
	b.span("travel_agent", 1, 0, 0, 1000, msg{
		"openinference.span.kind": "AGENT", "agent.name": "travel_agent", "session.id": "conv-1",
		"input.value": userAsk, "output.value": finalAnswer,
	})
	llm(2, 10, 100, []msg{sys, user}, []msg{call1})
	b.span("search_flights", 3, 1, 100, 200, msg{
		"openinference.span.kind": "TOOL", "tool.name": "search_flights", "input.value": js(flightArgs), "output.value": flightsRes,
	})
	b.span("hotel_retriever", 4, 1, 200, 250, msg{
		"openinference.span.kind":                "RETRIEVER",
		"retrieval.documents.0.document.id":      "h1",
		"retrieval.documents.0.document.content": "Hotel Lumiere, Paris, 4 stars",
		"retrieval.documents.0.document.score":   0.92,
	})
	llm(5, 250, 400, []msg{sys, user, call1, res1}, []msg{call2})
	b.span("book_hotel", 6, 1, 400, 500, msg{
		"openinference.span.kind": "TOOL", "tool.name": "book_hotel", "input.value": js(hotelArgs), "output.value": hotelRes,
	})
	llm(7, 500, 900, []msg{sys, user, call1, res1, call2, res2}, []msg{final})
	return b
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// buildOpenLLMetry: legacy flattened gen_ai.prompt.N / gen_ai.completion.N.
func buildOpenLLMetry(t testing.TB) *traceBuilder {
	b := newTB(t)
	type msg = map[string]any
	llm := func(id byte, start, end int64, prompt []msg, completion msg) {
		attrs := msg{
			"llm.request.type":                    "chat",
			"gen_ai.system":                       "openai",
			"gen_ai.request.model":                "gpt-4o",
			"gen_ai.response.model":               "gpt-4o-2024-08-06",
			"gen_ai.usage.prompt_tokens":          int64(100),
			"gen_ai.usage.completion_tokens":      int64(20),
			"llm.usage.total_tokens":              int64(120),
			"llm.request.functions.0.name":        "search_flights",
			"llm.request.functions.0.description": flightDesc,
			"llm.request.functions.0.parameters":  js(flightSchema),
			"llm.request.functions.1.name":        "book_hotel",
			"llm.request.functions.1.description": hotelDesc,
			"llm.request.functions.1.arguments":   js(hotelSchema), // JS instrumentation
		}
		for i, m := range prompt {
			for k, v := range m {
				attrs["gen_ai.prompt."+itoa(i)+"."+k] = v
			}
		}
		for k, v := range completion {
			attrs["gen_ai.completion.0."+k] = v
		}
		b.span("openai.chat", id, 1, start, end, attrs)
	}
	sys := msg{"role": "system", "content": sysPrompt}
	user := msg{"role": "user", "content": userAsk}
	asst := msg{"role": "assistant", "content": "null"}
	b.span("travel_agent.workflow", 1, 0, 0, 1000, msg{
		"traceloop.span.kind": "workflow", "traceloop.entity.name": "travel_agent",
		"traceloop.entity.input":  js(msg{"args": []any{userAsk}, "kwargs": msg{}}),
		"traceloop.entity.output": js(finalAnswer),
	})
	llm(2, 10, 100, []msg{sys, user}, msg{"role": "assistant", "finish_reason": "tool_calls",
		"tool_calls.0.name": "search_flights", "tool_calls.0.arguments": js(flightArgs)})
	b.span("search_flights.tool", 3, 1, 100, 200, msg{
		"traceloop.span.kind": "tool", "traceloop.entity.name": "search_flights",
		"traceloop.entity.input":  js(msg{"args": []any{}, "kwargs": flightArgs}),
		"traceloop.entity.output": js(flightsRes),
	})
	llm(5, 250, 400, []msg{sys, user, asst, {"role": "tool", "content": flightsRes}}, msg{"role": "assistant", "finish_reason": "tool_calls",
		"tool_calls.0.name": "book_hotel", "tool_calls.0.arguments": js(hotelArgs)})
	b.span("book_hotel.tool", 6, 1, 400, 500, msg{
		"traceloop.span.kind": "tool", "traceloop.entity.name": "book_hotel",
		"traceloop.entity.input":  js(hotelArgs),
		"traceloop.entity.output": hotelRes,
	})
	llm(7, 500, 900, []msg{sys, user, asst, {"role": "tool", "content": flightsRes}, asst, {"role": "tool", "content": hotelRes}},
		msg{"role": "assistant", "content": finalAnswer, "finish_reason": "stop"})
	return b
}

// buildVercel: legacy ai.* spans.
func buildVercel(t testing.TB) *traceBuilder {
	b := newTB(t)
	type msg = map[string]any
	tools := []any{
		js(msg{"type": "function", "name": "search_flights", "description": flightDesc, "inputSchema": flightSchema}),
		js(msg{"type": "function", "name": "book_hotel", "description": hotelDesc, "parameters": hotelSchema}),
	}
	sys := msg{"role": "system", "content": sysPrompt}
	user := msg{"role": "user", "content": []any{msg{"type": "text", "text": userAsk}}}
	call1 := msg{"role": "assistant", "content": []any{msg{"type": "tool-call", "toolCallId": "call_1", "toolName": "search_flights", "input": flightArgs}}}
	res1 := msg{"role": "tool", "content": []any{msg{"type": "tool-result", "toolCallId": "call_1", "toolName": "search_flights", "output": msg{"type": "text", "value": flightsRes}}}}
	call2 := msg{"role": "assistant", "content": []any{msg{"type": "tool-call", "toolCallId": "call_2", "toolName": "book_hotel", "args": hotelArgs}}}
	res2 := msg{"role": "tool", "content": []any{msg{"type": "tool-result", "toolCallId": "call_2", "toolName": "book_hotel", "result": hotelRes}}}
	llm := func(id byte, start, end int64, in []any, out msg) {
		attrs := msg{
			"operation.name":        "ai.generateText.doGenerate",
			"ai.operationId":        "ai.generateText.doGenerate",
			"ai.model.id":           "gpt-4o-2024-08-06",
			"ai.model.provider":     "openai.chat",
			"ai.prompt.messages":    js(in),
			"ai.prompt.tools":       tools,
			"ai.usage.inputTokens":  int64(100),
			"ai.usage.outputTokens": int64(20),
		}
		for k, v := range out {
			attrs[k] = v
		}
		b.span("ai.generateText.doGenerate", id, 1, start, end, attrs)
	}
	b.span("ai.generateText", 1, 0, 0, 1000, msg{
		"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "travel_agent",
		"ai.prompt":        js(msg{"system": sysPrompt, "prompt": userAsk}),
		"ai.response.text": finalAnswer,
	})
	llm(2, 10, 100, []any{sys, user}, msg{"ai.response.toolCalls": js([]any{msg{"toolCallId": "call_1", "toolName": "search_flights", "input": js(flightArgs)}})})
	b.span("ai.toolCall", 3, 1, 100, 200, msg{
		"ai.operationId": "ai.toolCall", "ai.toolCall.name": "search_flights", "ai.toolCall.id": "call_1",
		"ai.toolCall.args": js(flightArgs), "ai.toolCall.result": flightsRes,
	})
	llm(5, 250, 400, []any{sys, user, call1, res1}, msg{"ai.response.toolCalls": js([]any{msg{"toolCallId": "call_2", "toolName": "book_hotel", "args": hotelArgs}})})
	b.span("ai.toolCall", 6, 1, 400, 500, msg{
		"ai.operationId": "ai.toolCall", "ai.toolCall.name": "book_hotel", "ai.toolCall.id": "call_2",
		"ai.toolCall.input": js(hotelArgs), "ai.toolCall.output": js(hotelRes),
	})
	llm(7, 500, 900, []any{sys, user, call1, res1, call2, res2}, msg{"ai.response.text": finalAnswer})
	return b
}

// buildOTelEvents: the older OTel GenAI event forms (v1.26 content events on
// the first LLM span, v1.28 message events on the others).
func buildOTelEvents(t testing.TB) *traceBuilder {
	b := newTB(t)
	type msg = map[string]any
	openaiCall1 := msg{"role": "assistant", "content": nil, "tool_calls": []any{msg{"id": "call_1", "type": "function", "function": msg{"name": "search_flights", "arguments": js(flightArgs)}}}}
	openaiCall2 := []any{msg{"id": "call_2", "type": "function", "function": msg{"name": "book_hotel", "arguments": js(hotelArgs)}}}
	llm := func(id byte, start, end int64) ptrace.Span {
		return b.span("chat gpt-4o", id, 1, start, end, msg{
			"gen_ai.operation.name":   "chat",
			"gen_ai.system":           "openai",
			"gen_ai.request.model":    "gpt-4o",
			"gen_ai.tool.definitions": js(otelDefs()),
		})
	}
	b.span("invoke_agent travel_agent", 1, 0, 0, 1000, msg{"gen_ai.operation.name": "invoke_agent"})
	s2 := llm(2, 10, 100)
	b.event(s2, "gen_ai.content.prompt", msg{"gen_ai.prompt": js([]any{msg{"role": "system", "content": sysPrompt}, msg{"role": "user", "content": userAsk}})})
	b.event(s2, "gen_ai.content.completion", msg{"gen_ai.completion": js([]any{openaiCall1})})
	b.span("execute_tool search_flights", 3, 1, 100, 200, msg{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights", "gen_ai.tool.call.id": "call_1",
		"gen_ai.tool.call.arguments": js(flightArgs), "gen_ai.tool.call.result": flightsRes,
	})
	history := func(sp ptrace.Span, upto int) {
		b.event(sp, "gen_ai.system.message", msg{"content": sysPrompt})
		b.event(sp, "gen_ai.user.message", msg{"content": userAsk})
		b.event(sp, "gen_ai.assistant.message", msg{"tool_calls": js(openaiCall1["tool_calls"])})
		b.event(sp, "gen_ai.tool.message", msg{"content": flightsRes, "id": "call_1"})
		if upto > 1 {
			b.event(sp, "gen_ai.assistant.message", msg{"tool_calls": openaiCall2})
			b.event(sp, "gen_ai.tool.message", msg{"content": hotelRes, "id": "call_2"})
		}
	}
	s5 := llm(5, 250, 400)
	history(s5, 1)
	b.event(s5, "gen_ai.choice", msg{"index": int64(0), "finish_reason": "tool_calls", "message": js(msg{"role": "assistant", "tool_calls": openaiCall2})})
	b.span("execute_tool book_hotel", 6, 1, 400, 500, msg{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_hotel", "gen_ai.tool.call.id": "call_2",
		"gen_ai.tool.call.arguments": js(hotelArgs), "gen_ai.tool.call.result": hotelRes,
	})
	s7 := llm(7, 500, 900)
	history(s7, 2)
	b.event(s7, "gen_ai.choice", msg{"index": int64(0), "finish_reason": "stop", "message": msg{"content": finalAnswer}})
	return b
}

func TestSameRunAcrossConventions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func(testing.TB) *traceBuilder
		withIDs bool
		docs    int
	}{
		{"otel-structured", func(t testing.TB) *traceBuilder { return buildOTel(t, false) }, true, 1},
		{"otel-json", func(t testing.TB) *traceBuilder { return buildOTel(t, true) }, true, 1},
		{"otel-events", buildOTelEvents, true, 0},
		{"openinference", buildOpenInference, true, 1},
		{"openllmetry", buildOpenLLMetry, false, 0},
		{"vercel", buildVercel, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, problems := Adapt(tc.build(t).refs())
			if len(problems) != 0 {
				t.Errorf("problems: %v", problems)
			}
			if len(cases) != 4 {
				t.Fatalf("want 3 llm cases and 1 agent case, got %d", len(cases))
			}
			a := agentCase(t, cases)
			checkTravelAgent(t, a, tc.withIDs)
			if a.SystemInstructions != sysPrompt {
				t.Errorf("system %q", a.SystemInstructions)
			}
			if len(a.Documents) != tc.docs {
				t.Errorf("documents %+v", a.Documents)
			}
			if tc.docs > 0 && (a.Documents[0].ID != "h1" || a.Documents[0].Content != "Hotel Lumiere, Paris, 4 stars" || !a.Documents[0].HasScore) {
				t.Errorf("document %+v", a.Documents[0])
			}
			last := cases[3]
			if last.Level != LevelLLM || last.Output != finalAnswer || last.Input != userAsk {
				t.Errorf("last llm case: level %s input %q output %q", last.Level, last.Input, last.Output)
			}
			first := cases[1]
			if len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "search_flights" || !jsonEqual(first.ToolCalls[0].Arguments, flightArgs) {
				t.Errorf("first llm case calls %+v", first.ToolCalls)
			}
			for _, c := range cases {
				if c.Model == "" {
					t.Errorf("%s case %s without model", c.Level, c.SpanName)
				}
			}
		})
	}
}
