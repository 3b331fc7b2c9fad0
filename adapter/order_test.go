package adapter

import (
	"math/rand/v2"
	"strconv"
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

// add adds the spans spec lists, separated by "|": "llm ID START CALL..."
// (b.llm) or "tool ID CALL START END" (b.tool).
func (b *traceBuilder) add(t *testing.T, spec string) {
	t.Helper()
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("spec %q: %v", spec, err)
		}
		return n
	}
	for _, step := range strings.Split(spec, "|") {
		switch f := strings.Fields(step); {
		case len(f) >= 3 && f[0] == "llm":
			b.llm(byte(num(f[1])), num(f[2]), f[3:]...)
		case len(f) == 5 && f[0] == "tool":
			b.tool(byte(num(f[1])), f[2], num(f[3]), num(f[4]))
		default:
			t.Fatalf("spec %q: bad step %q", spec, step)
		}
	}
}

func agentCalls(t *testing.T, b *traceBuilder) string {
	t.Helper()
	cases, problems := Adapt(b.refs())
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	for _, c := range cases {
		if c.Level == LevelAgent {
			return callOrder(c.ToolCalls)
		}
	}
	t.Fatal("no agent case")
	return ""
}

func TestToolCallOrder(t *testing.T) {
	for _, tc := range []struct {
		name, spans, want string // spans: see traceBuilder.add
	}{
		// the bug: same start millisecond, the second call ends first
		{"tie, second ends first, ids on both sides", "llm 2 10 a#c1 b#c2 | tool 3 b#c2 20 21 | tool 4 a#c1 20 30", "a#c1 b#c2"},
		{"request order beats start order", "llm 2 10 a#c1 b#c2 | tool 3 b#c2 20 21 | tool 4 a#c1 22 30", "a#c1 b#c2"},
		{"LLM call by LLM call", "llm 2 10 a#c1 b#c2 | tool 3 b#c2 20 21 | tool 4 a#c1 20 30 | llm 5 40 a#c3 | tool 6 a#c3 50 51", "a#c1 b#c2 a#c3"},
		// tool spans without ids (OpenInference helpers, Traceloop 0.22):
		// matched by name and arguments; the ids come from the request
		{"tool spans without ids, matched by name", "llm 2 10 a#c1 b#c2 | tool 3 b 20 21 | tool 4 a 20 30", "a#c1 b#c2"},
		{"no ids anywhere, matched by name", "llm 2 10 a b | tool 3 b 20 21 | tool 4 a 20 30", "a# b#"},
		// nothing requested: start time, ties by export position, never end
		{"unrequested, tie broken by export position", "tool 3 b#x2 20 21 | tool 4 a#x1 20 30", "b#x2 a#x1"},
		{"unrequested, start time first", "tool 3 b#x2 25 26 | tool 4 a#x1 20 30", "a#x1 b#x2"},
		// an unrequested call keeps its place in time; the requested ones
		// take the other places in request order
		{"unrequested call between requested ones", "llm 2 10 a#c1 b#c2 | tool 3 b#c2 20 21 | tool 4 z#u1 20 22 | tool 5 a#c1 20 30", "a#c1 z#u1 b#c2"},
		// a span without id does not take a request that another span
		// names by id
		{"ids are matched before names", "llm 2 10 a#c1 a#c2 | tool 3 a 20 21 | tool 4 a#c1 20 30", "a#c1 a#c2"},
		// LLM calls that tie on start time are taken in export order
		{"LLM tie by export position", "llm 2 10 b#c2 | llm 3 10 a#c1 | tool 4 a#c1 20 21 | tool 5 b#c2 20 30", "b#c2 a#c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			b.agent()
			b.add(t, tc.spans)
			if got := agentCalls(t, b); got != tc.want {
				t.Errorf("calls = %s, want %s", got, tc.want)
			}
		})
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

// randomAgentTrace builds an agent run of 1–4 LLM calls, each requesting
// 1–3 calls (names repeat; arguments are unique per call, so a call is
// never ambiguous by name and arguments), each executed by a tool span
// that starts after its LLM call, at a random millisecond, with a random
// end, written in a random export order; 70% of the tool spans carry their
// call id. It returns the calls in request order ("name#id").
func randomAgentTrace(t *testing.T, rng *rand.Rand) (*traceBuilder, []string) {
	b := newTB(t)
	type span struct {
		id           byte
		name, callID string
		args         map[string]any
		start, end   int64
		withID       bool
	}
	var tools []span
	var want []string
	id, at, n := byte(2), int64(10), 0
	turns := 1 + rng.IntN(4)
	var llms []func()
	for turn := 0; turn < turns; turn++ {
		var parts []any
		var reqs []span
		for k := 0; k < 1+rng.IntN(3); k++ {
			n++
			name := []string{"search", "book", "email"}[rng.IntN(3)]
			s := span{name: name, callID: "call_" + itoa(n), args: map[string]any{"n": float64(n)}, withID: rng.IntN(10) < 7}
			parts = append(parts, map[string]any{"type": "tool_call", "id": s.callID, "name": name, "arguments": s.args})
			reqs = append(reqs, s)
			want = append(want, name+"#"+s.callID)
		}
		llmID, llmStart := id, at
		out := js([]any{map[string]any{"role": "assistant", "parts": parts}})
		llms = append(llms, func() {
			b.span("chat m", llmID, 1, llmStart, llmStart+5, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.output.messages": out})
		})
		id++
		at += 10
		for _, s := range reqs {
			s.id = id
			id++
			s.start = at + int64(rng.IntN(3)) // often the same millisecond
			s.end = s.start + int64(rng.IntN(20))
			tools = append(tools, s)
		}
		at += 30
	}
	b.agent()
	// LLM spans first (their order among themselves is their time order),
	// tool spans in a random export order
	for _, f := range llms {
		f()
	}
	rng.Shuffle(len(tools), func(i, j int) { tools[i], tools[j] = tools[j], tools[i] })
	for _, s := range tools {
		attrs := map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": s.name, "gen_ai.tool.call.arguments": js(s.args)}
		if s.withID {
			attrs["gen_ai.tool.call.id"] = s.callID
		}
		b.span("execute_tool "+s.name, s.id, 1, s.start, s.end, attrs)
	}
	return b, want
}

// Property: whatever the tool spans' start times, end times and export
// order, an agent case's calls are in request order when the LLM spans
// carry the call ids.
func TestToolCallOrderProperty(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		b, want := randomAgentTrace(t, rand.New(rand.NewPCG(seed, 1)))
		if got := agentCalls(t, b); got != strings.Join(want, " ") {
			t.Fatalf("seed %d: calls %s, want %s", seed, got, strings.Join(want, " "))
		}
	}
}

// The quick read of the requests (ids only, no decoding) orders exactly as
// decoding does, whatever the case levels and SkipConversation.
func TestToolCallOrderQuickReadSameAsDecoding(t *testing.T) {
	order := func(refs []SpanRef, opts Options) string {
		cases, _ := AdaptWith(refs, opts)
		for _, c := range cases {
			if c.Level == LevelAgent {
				return callOrder(c.ToolCalls)
			}
		}
		return ""
	}
	for seed := uint64(1); seed <= 200; seed++ {
		b, _ := randomAgentTrace(t, rand.New(rand.NewPCG(seed, 2)))
		refs := b.refs()
		full := order(refs, Options{LLMCases: true, AgentCases: true})
		for _, opts := range []Options{{AgentCases: true}, {AgentCases: true, SkipConversation: true}} {
			if got := order(refs, opts); got != full {
				t.Fatalf("seed %d, %+v: %s, want %s", seed, opts, got, full)
			}
		}
	}
}

func callOrder(calls []ToolCall) string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name+"#"+c.ID)
	}
	return strings.Join(out, " ")
}

func TestQuickOTelCalls(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" with ok false: not this shape
		ok   bool
	}{
		{`[{"role":"assistant","parts":[{"type":"text","content":"x"},{"type":"tool_call","id":"c1","name":"a","arguments":{"q":1}},{"type":"tool_call","id":"c\u0032","name":"b"}],"finish_reason":"tool_call"}]`, "a#c1 b#c2", true},
		{`[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]`, "", true},
		{`[{"role":"assistant","parts":[{"type":"tool_call","name":"a"}]}]`, "", false}, // no id
		{`[{"role":"assistant","parts":[],"tool_calls":[{"id":"c1"}]}]`, "", false},     // other keys
		{`[{"role":"assistant","content":"[{\"type\":\"tool_call\"}]"}]`, "", false},    // content
		{`[{"role":"assistant","parts":"text"}]`, "", false},                            // parts not an array
		{`[]`, "", false},
		{`{"role":"assistant"}`, "", false},
		{``, "", false},
	} {
		calls, ok := quickOTelCalls(tc.in, nil)
		if ok != tc.ok || callOrder(calls) != tc.want {
			t.Errorf("%s: %q %v, want %q %v", tc.in, callOrder(calls), ok, tc.want, tc.ok)
		}
	}
}
