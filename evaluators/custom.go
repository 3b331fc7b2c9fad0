package evaluators

import (
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

// The custom evaluators (`cel` and `remote`, contract section 15) see the
// same `case`: the CEL expression as a declared type, the remote endpoint as
// JSON. caseView builds it once in plain maps and lists, so both read the
// same field names and the JSON a user's server gets is what a CEL
// expression would see.
//
// Fields beyond the contract's list: `level` (llm or agent), `llm_calls`
// (LLM call spans the case covers), `documents` (retrieved documents:
// id, content, score), `conversation_id`, `service_name`, `span_name`.

// caseView is the `case` of the custom evaluators. limit > 0 clips each
// free-text field (input, output, a tool result, a document, a string
// attribute) to that many bytes, as judge prompts are clipped; 0 keeps all.
func caseView(c *adapter.Case, limit int) map[string]any {
	clip := func(s string) string { return clipText(s, limit) }
	calls := make([]any, 0, len(c.ToolCalls))
	for i := range c.ToolCalls {
		tc := &c.ToolCalls[i]
		args := tc.Arguments
		if args == nil {
			args = map[string]any{}
		}
		calls = append(calls, map[string]any{
			"name":        tc.Name,
			"arguments":   args,
			"result":      clip(tc.Result),
			"errored":     tc.Errored,
			"duration_ms": millis(tc.Duration),
		})
	}
	total, _ := c.Usage.Total()
	expected := map[string]any{}
	if c.Expected.HasToolCalls {
		exp := make([]any, 0, len(c.Expected.ToolCalls))
		for _, ec := range c.Expected.ToolCalls {
			m := map[string]any{"name": ec.Name}
			if ec.HasArguments {
				m["arguments"] = ec.Arguments
			}
			exp = append(exp, m)
		}
		expected["tool_calls"] = exp
	}
	if c.Expected.HasOutput {
		if s, ok := c.Expected.Output.(string); ok {
			expected["output"] = clip(s)
		} else {
			expected["output"] = c.Expected.Output
		}
	}
	docs := make([]any, 0, len(c.Documents))
	for _, d := range c.Documents {
		docs = append(docs, map[string]any{"id": d.ID, "content": clip(d.Content), "score": d.Score})
	}
	attrs := c.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	} else if limit > 0 {
		clipped := make(map[string]any, len(attrs))
		for k, v := range attrs {
			if s, ok := v.(string); ok {
				v = clip(s)
			}
			clipped[k] = v
		}
		attrs = clipped
	}
	return map[string]any{
		"level":           string(c.Level),
		"input":           clip(c.Input),
		"output":          clip(c.Output),
		"tool_calls":      calls,
		"usage":           map[string]any{"input_tokens": c.Usage.InputTokens, "output_tokens": c.Usage.OutputTokens, "total_tokens": total},
		"model":           c.Model,
		"agent_name":      c.AgentName,
		"latency_ms":      millis(c.Latency),
		"llm_calls":       int64(c.LLMCalls),
		"attributes":      attrs,
		"expected":        expected,
		"documents":       docs,
		"span_name":       c.SpanName,
		"service_name":    c.ServiceName,
		"conversation_id": c.ConversationID,
		// Sessions (contract section 14) fill the turns; a single case has none.
		"turns": []any{},
	}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
