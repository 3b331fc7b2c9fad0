package adapter

import (
	"strings"
	"testing"
)

// semconv spans for the ordering vectors: an agent (id 1), LLM calls that
// request tool calls, tool spans. Times are milliseconds.

func (b *traceBuilder) agent() {
	b.span("invoke_agent a", 1, 0, 0, 1000, map[string]any{"gen_ai.operation.name": "invoke_agent"})
}

// llm adds an LLM span whose output requests the calls "name#id" in order
// (ids may be empty).
func (b *traceBuilder) llm(id byte, startMs int64, calls ...string) {
	var parts []any
	for _, c := range calls {
		name, cid, _ := strings.Cut(c, "#")
		p := map[string]any{"type": "tool_call", "name": name, "arguments": map[string]any{"q": name}}
		if cid != "" {
			p["id"] = cid
		}
		parts = append(parts, p)
	}
	b.span("chat m", id, 1, startMs, startMs+5, map[string]any{
		"gen_ai.operation.name":  "chat",
		"gen_ai.output.messages": js([]any{map[string]any{"role": "assistant", "parts": parts}}),
	})
}

// tool adds a tool span "name#id" (id may be empty).
func (b *traceBuilder) tool(id byte, call string, startMs, endMs int64) {
	name, cid, _ := strings.Cut(call, "#")
	attrs := map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
	if cid != "" {
		attrs["gen_ai.tool.call.id"] = cid
	}
	b.span("execute_tool "+name, id, 1, startMs, endMs, attrs)
}

func agentCalls(t *testing.T, b *traceBuilder) string {
	t.Helper()
	cases, problems := Adapt(b.refs())
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	for _, c := range cases {
		if c.Level == LevelAgent {
			var out []string
			for _, call := range c.ToolCalls {
				out = append(out, call.Name+"#"+call.ID)
			}
			return strings.Join(out, " ")
		}
	}
	t.Fatal("no agent case")
	return ""
}

func TestToolCallOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *traceBuilder)
		want  string
	}{{
		// the bug: same start millisecond, the second call ends first
		name: "tie, second ends first, ids on both sides",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "b#c2")
			b.tool(3, "b#c2", 20, 21)
			b.tool(4, "a#c1", 20, 30)
		},
		want: "a#c1 b#c2",
	}, {
		name: "request order beats start order",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "b#c2")
			b.tool(3, "b#c2", 20, 21)
			b.tool(4, "a#c1", 22, 30)
		},
		want: "a#c1 b#c2",
	}, {
		name: "LLM call by LLM call",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "b#c2")
			b.tool(3, "b#c2", 20, 21)
			b.tool(4, "a#c1", 20, 30)
			b.llm(5, 40, "a#c3")
			b.tool(6, "a#c3", 50, 51)
		},
		want: "a#c1 b#c2 a#c3",
	}, {
		// tool spans without ids (OpenInference helpers, Traceloop 0.22):
		// matched by name and arguments; the ids come from the request
		name: "tool spans without ids, matched by name",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "b#c2")
			b.tool(3, "b", 20, 21)
			b.tool(4, "a", 20, 30)
		},
		want: "a#c1 b#c2",
	}, {
		name: "no ids anywhere, matched by name",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a", "b")
			b.tool(3, "b", 20, 21)
			b.tool(4, "a", 20, 30)
		},
		want: "a# b#",
	}, {
		// nothing requested: start time, ties by export position, never end
		name: "unrequested, tie broken by export position",
		build: func(b *traceBuilder) {
			b.tool(3, "b#x2", 20, 21)
			b.tool(4, "a#x1", 20, 30)
		},
		want: "b#x2 a#x1",
	}, {
		name: "unrequested, start time first",
		build: func(b *traceBuilder) {
			b.tool(3, "b#x2", 25, 26)
			b.tool(4, "a#x1", 20, 30)
		},
		want: "a#x1 b#x2",
	}, {
		// an unrequested call keeps its place in time; the requested ones
		// take the other places in request order
		name: "unrequested call between requested ones",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "b#c2")
			b.tool(3, "b#c2", 20, 21)
			b.tool(4, "z#u1", 20, 22)
			b.tool(5, "a#c1", 20, 30)
		},
		want: "a#c1 z#u1 b#c2",
	}, {
		// a span without id does not take a request that another span
		// names by id
		name: "ids are matched before names",
		build: func(b *traceBuilder) {
			b.llm(2, 10, "a#c1", "a#c2")
			b.tool(3, "a", 20, 21)
			b.tool(4, "a#c1", 20, 30)
		},
		want: "a#c1 a#c2",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			b.agent()
			tc.build(b)
			if got := agentCalls(t, b); got != tc.want {
				t.Errorf("calls = %s, want %s", got, tc.want)
			}
		})
	}
}

// LLM calls that tie on start time are taken in export order.
func TestLLMTieByExportPosition(t *testing.T) {
	b := newTB(t)
	b.agent()
	b.llm(2, 10, "b#c2")
	b.llm(3, 10, "a#c1")
	b.tool(4, "a#c1", 20, 21)
	b.tool(5, "b#c2", 20, 30)
	if got := agentCalls(t, b); got != "b#c2 a#c1" {
		t.Errorf("calls = %s, want b#c2 a#c1 (LLM spans in export order)", got)
	}
}

// Without an agent span, a root LLM call's own requests order its tool
// spans too.
func TestToolCallOrderLLMRoot(t *testing.T) {
	b := newTB(t)
	b.span("chat m", 1, 0, 0, 100, map[string]any{
		"gen_ai.operation.name": "chat",
		"gen_ai.output.messages": js([]any{map[string]any{"role": "assistant", "parts": []any{
			map[string]any{"type": "tool_call", "id": "c1", "name": "a"},
			map[string]any{"type": "tool_call", "id": "c2", "name": "b"},
		}}}),
	})
	b.tool(3, "b#c2", 20, 21)
	b.tool(4, "a#c1", 20, 30)
	if got := agentCalls(t, b); got != "a#c1 b#c2" {
		t.Errorf("calls = %s, want a#c1 b#c2", got)
	}
}
