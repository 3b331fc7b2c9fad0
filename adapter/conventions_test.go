package adapter

import (
	"testing"
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
