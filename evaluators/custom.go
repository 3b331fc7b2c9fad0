package evaluators

import (
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

// The custom evaluators (`cel` and `remote`, docs/contract.md §15) see the
// same `case`: the CEL expression as a declared type, the remote endpoint as
// JSON. caseView builds it once in plain maps and lists, so both read the
// same field names and the JSON a user's server gets is what a CEL
// expression would see.
//
// Fields beyond the contract's list: `level` (llm or agent), `llm_calls`
// (LLM call spans the case covers), `documents` (retrieved documents:
// id, content, score), `conversation_id`, `service_name`, `span_name`.

// caseFields are the fields of `case`, in the order caseView writes them.
var caseFields = []string{"level", "input", "output", "tool_calls", "usage", "model", "agent_name", "latency_ms",
	"llm_calls", "attributes", "expected", "documents", "span_name", "service_name", "conversation_id", "turns"}

// caseView is the `case` of the custom evaluators. limit > 0 clips each
// free-text field (input, output, a tool result, a document, a string
// attribute) to that many bytes, as judge prompts are clipped; 0 keeps all.
func caseView(c *adapter.Case, limit int) map[string]any {
	m := make(map[string]any, len(caseFields))
	for _, f := range caseFields {
		m[f] = caseField(c, f, limit)
	}
	return m
}

// caseField builds one field of the view; CEL builds only the fields an
// expression reads. nil for an unknown name.
func caseField(c *adapter.Case, name string, limit int) any {
	clip := func(s string) string { return clipText(s, limit) }
	switch name {
	case "level":
		return string(c.Level)
	case "input":
		return clip(c.Input)
	case "output":
		return clip(c.Output)
	case "tool_calls":
		return toolCallsView(c.ToolCalls, limit)
	case "usage":
		total, _ := c.Usage.Total()
		return map[string]any{"input_tokens": c.Usage.InputTokens, "output_tokens": c.Usage.OutputTokens, "total_tokens": total}
	case "model":
		return c.Model
	case "agent_name":
		return c.AgentName
	case "latency_ms":
		return millis(c.Latency)
	case "llm_calls":
		return int64(c.LLMCalls)
	case "attributes":
		return attributesView(c.Attributes, limit)
	case "expected":
		return expectedView(c, limit)
	case "documents":
		docs := make([]any, 0, len(c.Documents))
		for _, d := range c.Documents {
			docs = append(docs, map[string]any{"id": d.ID, "content": clip(d.Content), "score": d.Score})
		}
		return docs
	case "span_name":
		return c.SpanName
	case "service_name":
		return c.ServiceName
	case "conversation_id":
		return c.ConversationID
	case "turns":
		// A session case's turns, oldest first (docs/contract.md §14); an
		// llm or agent case has none.
		turns := make([]any, 0, len(c.Turns))
		for i := range c.Turns {
			t := &c.Turns[i]
			total, _ := t.Usage.Total()
			turns = append(turns, map[string]any{
				"input": clip(t.Input), "output": clip(t.Output),
				"tool_calls": toolCallsView(t.ToolCalls, limit),
				"usage":      map[string]any{"input_tokens": t.Usage.InputTokens, "output_tokens": t.Usage.OutputTokens, "total_tokens": total},
				"model":      t.Model, "latency_ms": millis(t.Latency), "llm_calls": int64(t.LLMCalls),
			})
		}
		return turns
	}
	return nil
}

func toolCallsView(tcs []adapter.ToolCall, limit int) []any {
	calls := make([]any, 0, len(tcs))
	for i := range tcs {
		tc := &tcs[i]
		args := tc.Arguments
		if args == nil {
			args = map[string]any{}
		}
		calls = append(calls, map[string]any{
			"name":        tc.Name,
			"arguments":   args,
			"result":      clipText(tc.Result, limit),
			"errored":     tc.Errored,
			"duration_ms": millis(tc.Duration),
		})
	}
	return calls
}

func expectedView(c *adapter.Case, limit int) map[string]any {
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
			expected["output"] = clipText(s, limit)
		} else {
			expected["output"] = c.Expected.Output
		}
	}
	return expected
}

func attributesView(attrs map[string]any, limit int) map[string]any {
	if attrs == nil {
		return map[string]any{}
	}
	if limit <= 0 {
		return attrs
	}
	clipped := make(map[string]any, len(attrs))
	for k, v := range attrs {
		if s, ok := v.(string); ok {
			v = clipText(s, limit)
		}
		clipped[k] = v
	}
	return clipped
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
