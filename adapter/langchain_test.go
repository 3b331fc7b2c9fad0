package adapter

import "testing"

func lcMessage(class string, kwargs map[string]any) map[string]any {
	return map[string]any{"lc": 1, "type": "constructor", "id": []any{"langchain_core", "messages", class}, "kwargs": kwargs}
}

// buildLangGraph writes what @arizeai/openinference-instrumentation-langchain
// writes for a LangGraph createReactAgent run (see interop/testdata/
// langchain*.json for real captures): a CHAIN root, plumbing chains, an LLM
// span without ids in its flattened messages, two TOOL spans whose output is
// a serialized ToolMessage (the second failed).
func buildLangGraph(t *testing.T) *traceBuilder {
	b := newTB(t)
	b.span("travel-agent", 1, 0, 0, 100, map[string]any{"openinference.span.kind": "CHAIN",
		"input.value": `{"messages":[]}`, "output.value": `{"messages":[]}`})
	b.span("agent", 2, 1, 1, 20, map[string]any{"openinference.span.kind": "CHAIN"})
	b.span("RunnableSequence", 3, 2, 2, 19, map[string]any{"openinference.span.kind": "CHAIN"})
	aiKw := map[string]any{"content": "", "tool_calls": []any{
		map[string]any{"name": "search_flights", "args": flightArgs, "id": "call_1", "type": "tool_call"},
		map[string]any{"name": "book_hotel", "args": hotelArgs, "id": "call_2", "type": "tool_call"},
	}}
	b.span("ChatOpenAI", 4, 3, 3, 18, map[string]any{
		"openinference.span.kind":               "LLM",
		"llm.model_name":                        "gpt-4o-mini",
		"metadata":                              `{"ls_provider":"openai","ls_model_name":"gpt-4o-mini"}`,
		"llm.input_messages.0.message.role":     "user",
		"llm.input_messages.0.message.content":  userAsk,
		"llm.output_messages.0.message.role":    "assistant",
		"llm.output_messages.0.message.content": "",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.name":      "search_flights",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": js(flightArgs),
		"llm.output_messages.0.message.tool_calls.1.tool_call.function.name":      "book_hotel",
		"llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": js(hotelArgs),
		"output.value": js(map[string]any{"generations": []any{[]any{map[string]any{"text": "", "message": lcMessage("AIMessage", aiKw)}}}}),
	})
	b.span("tools", 5, 1, 21, 40, map[string]any{"openinference.span.kind": "CHAIN"})
	toolMsg := func(content, id, status string) string {
		return js(map[string]any{"output": lcMessage("ToolMessage", map[string]any{"content": content, "tool_call_id": id, "status": status})})
	}
	// parallel: same start, the hotel booking (asked second) fails first
	b.span("book_hotel", 6, 5, 22, 23, map[string]any{"openinference.span.kind": "TOOL", "tool.name": "book_hotel",
		"input.value": js(hotelArgs), "output.value": toolMsg("Error: no rooms", "call_2", "error")})
	b.span("search_flights", 7, 5, 22, 30, map[string]any{"openinference.span.kind": "TOOL", "tool.name": "search_flights",
		"input.value": js(flightArgs), "output.value": toolMsg(flightsRes, "call_1", "success")})
	return b
}

func TestLangGraphOpenInference(t *testing.T) {
	b := buildLangGraph(t)
	cases, problems := Adapt(b.refs())
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	var agents, llms []Case
	for _, c := range cases {
		if c.Level == LevelAgent {
			agents = append(agents, c)
		} else {
			llms = append(llms, c)
		}
	}
	if len(agents) != 1 || len(llms) != 1 {
		t.Fatalf("%d agent and %d llm cases, want one agent case (the CHAIN root) and one llm case", len(agents), len(llms))
	}
	a := agents[0]
	if a.SpanName != "travel-agent" || a.Provider != "openai" {
		t.Errorf("agent case %q provider %q", a.SpanName, a.Provider)
	}
	if len(a.ToolCalls) != 2 {
		t.Fatalf("tool calls %+v", a.ToolCalls)
	}
	f, h := a.ToolCalls[0], a.ToolCalls[1]
	if f.Name != "search_flights" || f.ID != "call_1" || f.Result != flightsRes || !f.HasResult || f.Errored {
		t.Errorf("first call %+v, want search_flights call_1 with the ToolMessage content", f)
	}
	if h.Name != "book_hotel" || h.ID != "call_2" || h.Result != "Error: no rooms" || !h.Errored || h.ErrorMessage != "Error: no rooms" {
		t.Errorf("second call %+v, want book_hotel call_2 errored (ToolMessage status error)", h)
	}
	l := llms[0]
	if l.Provider != "openai" || len(l.ToolCalls) != 2 || l.ToolCalls[0].ID != "call_1" || l.ToolCalls[1].ID != "call_2" {
		t.Errorf("llm case provider %q calls %+v, want ids recovered from output.value", l.Provider, l.ToolCalls)
	}
}

// A CHAIN root around an AGENT span only wraps it: one agent case.
func TestChainRootAroundAgent(t *testing.T) {
	b := newTB(t)
	b.span("chain", 1, 0, 0, 100, map[string]any{"openinference.span.kind": "CHAIN"})
	b.span("agent", 2, 1, 1, 99, map[string]any{"openinference.span.kind": "AGENT"})
	b.span("llm", 3, 2, 2, 10, map[string]any{"openinference.span.kind": "LLM"})
	cases, _ := Adapt(b.refs())
	n := 0
	for _, c := range cases {
		if c.Level == LevelAgent {
			n++
			if c.SpanName != "agent" {
				t.Errorf("agent case on %q, want the AGENT span", c.SpanName)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d agent cases, want 1", n)
	}
}

// Vercel AI SDK 5: provider ids, tool-call input as an object or a JSON
// string, usage summed over the steps (the root has the last step's).
func TestAISDK5Shapes(t *testing.T) {
	b := newTB(t)
	b.span("ai.generateText", 1, 0, 0, 100, map[string]any{"ai.operationId": "ai.generateText",
		"gen_ai.system": "openai.chat", "ai.usage.promptTokens": 30, "ai.usage.completionTokens": 4})
	b.span("ai.generateText.doGenerate", 2, 1, 1, 10, map[string]any{"ai.operationId": "ai.generateText.doGenerate",
		"gen_ai.system": "openai.chat", "ai.response.finishReason": "tool-calls",
		"ai.response.toolCalls": js([]any{
			map[string]any{"toolCallId": "c1", "toolName": "search_flights", "input": js(flightArgs)},
			map[string]any{"toolCallId": "c2", "toolName": "book_hotel", "input": hotelArgs},
		}),
		"ai.usage.promptTokens": 20, "ai.usage.completionTokens": 5})
	b.span("ai.toolCall", 3, 1, 11, 12, map[string]any{"ai.operationId": "ai.toolCall", "ai.toolCall.name": "book_hotel", "ai.toolCall.id": "c2"})
	b.span("ai.toolCall", 4, 1, 11, 20, map[string]any{"ai.operationId": "ai.toolCall", "ai.toolCall.name": "search_flights", "ai.toolCall.id": "c1"})
	b.span("ai.generateText.doGenerate", 5, 1, 21, 30, map[string]any{"ai.operationId": "ai.generateText.doGenerate",
		"gen_ai.system": "openai.chat", "ai.response.text": "done", "ai.usage.promptTokens": 30, "ai.usage.completionTokens": 4})
	cases, problems := Adapt(b.refs())
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	for _, c := range cases {
		if c.Provider != "openai" {
			t.Errorf("%s case provider %q, want openai", c.Level, c.Provider)
		}
		if c.Level != LevelAgent {
			continue
		}
		if c.Usage.InputTokens != 50 || c.Usage.OutputTokens != 9 {
			t.Errorf("usage %+v, want the steps' sum 50/9", c.Usage)
		}
		if len(c.ToolCalls) != 2 || c.ToolCalls[0].ID != "c1" || c.ToolCalls[1].ID != "c2" ||
			!jsonEqual(c.ToolCalls[0].Arguments, flightArgs) || !jsonEqual(c.ToolCalls[1].Arguments, hotelArgs) {
			t.Errorf("tool calls %+v, want c1 then c2 with arguments from the string and the object form", c.ToolCalls)
		}
	}
}

func TestNormProvider(t *testing.T) {
	for in, want := range map[string]string{
		"openai.chat": "openai", "openai.responses": "openai", "anthropic.messages": "anthropic",
		"google.generative-ai": "google", "openai": "openai", "aws.bedrock": "aws.bedrock",
		"az.ai.openai": "az.ai.openai", ".chat": ".chat", "": "",
	} {
		if got := normProvider(in); got != want {
			t.Errorf("normProvider(%q) = %q, want %q", in, got, want)
		}
	}
}
