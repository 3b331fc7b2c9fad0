package adapter

import "testing"

// A span that carries a value in two conventions is read from the first one
// in conventions order; the second fills only what the first lacks.
func TestConventionPrecedence(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent planner", 1, 0, 0, 100, map[string]any{"gen_ai.operation.name": "invoke_agent"})
	b.span("chat", 2, 1, 10, 50, map[string]any{
		"gen_ai.operation.name":                 "chat",
		"gen_ai.request.model":                  "gpt-genai",
		"llm.model_name":                        "gpt-openinference",
		"ai.model.id":                           "gpt-vercel",
		"llm.provider":                          "openai",
		"gen_ai.input.messages":                 js([]any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": "from genai"}}}}),
		"ai.prompt.messages":                    js([]any{map[string]any{"role": "user", "content": "from vercel"}}),
		"llm.output_messages.0.message.role":    "assistant",
		"llm.output_messages.0.message.content": "from openinference",
	})
	b.span("execute_tool get_weather", 3, 1, 50, 60, map[string]any{
		"gen_ai.operation.name": "execute_tool",
		"ai.toolCall.result":    `"sunny"`, // Vercel's JSON-encoded string, before OpenInference's output.value
		"output.value":          `"cloudy"`,
	})
	cases, _ := AdaptWith(b.refs(), Options{LLMCases: true, AgentCases: true})
	var llm, agent *Case
	for i := range cases {
		switch cases[i].Level {
		case LevelLLM:
			llm = &cases[i]
		case LevelAgent:
			agent = &cases[i]
		}
	}
	if llm == nil || agent == nil {
		t.Fatalf("cases: %+v", cases)
	}
	if llm.Model != "gpt-genai" || llm.Provider != "openai" {
		t.Errorf("model %q provider %q: want gpt-genai (GenAI first) and openai (OpenInference fills)", llm.Model, llm.Provider)
	}
	if llm.Input != "from genai" || llm.Output != "from openinference" {
		t.Errorf("input %q output %q", llm.Input, llm.Output)
	}
	if len(agent.ToolCalls) != 1 || agent.ToolCalls[0].Result != "sunny" {
		t.Errorf("tool calls %+v: want the Vercel result, unwrapped", agent.ToolCalls)
	}
}
