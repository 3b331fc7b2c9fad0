package adapter

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

type attrs = map[string]any

func TestIsGenAI(t *testing.T) {
	b := newTB(t)
	for _, tc := range []struct {
		name   string
		parent byte
		a      attrs
		want   bool
	}{
		{"chat", 1, attrs{"gen_ai.operation.name": "chat"}, true},
		{"embeddings", 1, attrs{"gen_ai.operation.name": "embeddings"}, false},
		{"invoke_workflow", 1, attrs{"gen_ai.operation.name": "invoke_workflow"}, true},
		{"retrieval", 1, attrs{"gen_ai.operation.name": "retrieval"}, true},
		{"oi-llm", 1, attrs{"openinference.span.kind": "LLM"}, true},
		{"oi-chain-child", 1, attrs{"openinference.span.kind": "CHAIN"}, false},
		{"oi-chain-root", 0, attrs{"openinference.span.kind": "CHAIN"}, true},
		{"oi-retriever", 1, attrs{"openinference.span.kind": "RETRIEVER"}, true},
		{"ol-completion", 1, attrs{"llm.request.type": "completion"}, true},
		{"ol-task", 1, attrs{"traceloop.span.kind": "task"}, false},
		{"ol-tool", 1, attrs{"traceloop.span.kind": "tool"}, true},
		{"ai.streamText.doStream", 1, attrs{}, true},
		{"vercel-opid", 1, attrs{"ai.operationId": "ai.toolCall"}, true},
		{"GET /api", 0, attrs{"http.method": "GET"}, false},
		{"wrong-type", 1, attrs{"gen_ai.operation.name": int64(3)}, false},
	} {
		sp := b.span(tc.name, 9, tc.parent, 0, 1, tc.a)
		if got := IsGenAI(sp); got != tc.want {
			t.Errorf("%s: IsGenAI = %v", tc.name, got)
		}
		if n := testing.AllocsPerRun(100, func() { IsGenAI(sp) }); n != 0 {
			t.Errorf("%s: IsGenAI allocates %v", tc.name, n)
		}
	}
}

func TestGroupByTrace(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	ss2 := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for i, s := range []ptrace.ScopeSpans{ss, ss2, ss} {
		sp := s.Spans().AppendEmpty()
		sp.SetTraceID([16]byte{byte(i % 2)})
		sp.SetSpanID(sid(byte(i + 1)))
	}
	g := GroupByTrace(td)
	if len(g) != 2 || len(g[[16]byte{0}]) != 2 || g[[16]byte{0}][0].Span.SpanID() != sid(1) || g[[16]byte{0}][1].Span.SpanID() != sid(3) {
		t.Fatalf("groups %v", g)
	}
}

func TestToolSpanErrored(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(sp ptrace.Span)
		a       attrs
		wantMsg string
	}{
		{"status message", func(sp ptrace.Span) { sp.Status().SetCode(ptrace.StatusCodeError); sp.Status().SetMessage("timeout") }, attrs{}, "timeout"},
		{"error.type", func(sp ptrace.Span) { sp.Status().SetCode(ptrace.StatusCodeError) }, attrs{"error.type": "HTTPError"}, "HTTPError"},
		{"exception event", func(sp ptrace.Span) {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Events().AppendEmpty().SetName("exception")
			sp.Events().At(0).Attributes().PutStr("exception.message", "boom")
		}, attrs{}, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			b.span("invoke_agent a", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent"})
			a := attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights"}
			for k, v := range tc.a {
				a[k] = v
			}
			tc.setup(b.span("execute_tool search_flights", 2, 1, 10, 20, a))
			b.span("execute_tool ok", 3, 1, 30, 40, attrs{"gen_ai.operation.name": "execute_tool"})
			cases, _ := Adapt(b.refs())
			c := agentCase(t, cases)
			if len(c.ToolCalls) != 2 || !c.ToolCalls[0].Errored || c.ToolCalls[0].ErrorMessage != tc.wantMsg || c.ToolCalls[1].Errored {
				t.Fatalf("calls %+v", c.ToolCalls)
			}
			if c.ToolCalls[1].Name != "ok" {
				t.Errorf("name from span name: %q", c.ToolCalls[1].Name)
			}
		})
	}
}

func TestCallsFromLLMOutputWhenNoToolSpans(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent a", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent"})
	b.span("chat", 2, 1, 10, 20, attrs{"gen_ai.operation.name": "chat",
		"gen_ai.input.messages":  js([]any{attrs{"role": "user", "parts": []any{attrs{"type": "text", "content": "hi"}}}}),
		"gen_ai.output.messages": js([]any{attrs{"role": "assistant", "parts": []any{attrs{"type": "tool_call", "id": "c1", "name": "search_flights", "arguments": js(flightArgs)}, attrs{"type": "tool_call", "id": "c2", "name": "book_hotel", "arguments": hotelArgs}}}}),
	})
	b.span("chat", 3, 1, 30, 40, attrs{"gen_ai.operation.name": "chat",
		"gen_ai.input.messages":  js([]any{attrs{"role": "tool", "parts": []any{attrs{"type": "tool_call_response", "id": "c1", "response": attrs{"ok": true}}}}}),
		"gen_ai.output.messages": js([]any{attrs{"role": "assistant", "parts": []any{attrs{"type": "text", "content": "done"}}}}),
	})
	cases, problems := Adapt(b.refs())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	c := agentCase(t, cases)
	if len(c.ToolCalls) != 2 || c.ToolCalls[0].Name != "search_flights" || c.ToolCalls[1].Name != "book_hotel" ||
		!jsonEqual(c.ToolCalls[0].Arguments, flightArgs) || c.ToolCalls[0].RawArguments != js(flightArgs) || c.ToolCalls[0].ID != "c1" {
		t.Fatalf("calls %+v", c.ToolCalls)
	}
	if !c.ToolCalls[0].HasResult || c.ToolCalls[0].Result != `{"ok":true}` || c.ToolCalls[1].HasResult {
		t.Errorf("results %+v", c.ToolCalls)
	}
	if c.Output != "done" || c.Input != "hi" {
		t.Errorf("io %q %q", c.Input, c.Output)
	}
}

func TestNoAgentSpan(t *testing.T) {
	t.Run("root anchor", func(t *testing.T) {
		b := newTB(t)
		b.span("POST /chat", 1, 0, 0, 100, attrs{"http.method": "POST", "eval.expected.tool_calls": `["lookup"]`})
		b.span("chat", 2, 1, 10, 20, attrs{"gen_ai.operation.name": "chat", "gen_ai.output.messages": js([]any{attrs{"role": "assistant", "parts": []any{attrs{"type": "text", "content": "a"}}}})})
		b.span("execute_tool lookup", 3, 1, 20, 30, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"})
		b.span("chat", 4, 1, 30, 40, attrs{"gen_ai.operation.name": "chat", "gen_ai.output.messages": js([]any{attrs{"role": "assistant", "parts": []any{attrs{"type": "text", "content": "b"}}}})})
		cases, _ := Adapt(b.refs())
		if len(cases) != 3 {
			t.Fatalf("cases %d", len(cases))
		}
		a := agentCase(t, cases)
		if a.SpanID != sid(1) || a.SpanName != "POST /chat" || a.Output != "b" || len(a.ToolCalls) != 1 || !a.Expected.HasToolCalls || a.Expected.ToolCalls[0].Name != "lookup" {
			t.Fatalf("agent case %+v", a)
		}
		if !cases[1].Expected.HasToolCalls {
			t.Errorf("llm case should inherit root expectations")
		}
	})
	t.Run("no root: earliest genai span", func(t *testing.T) {
		b := newTB(t)
		b.span("chat", 2, 99, 10, 20, attrs{"gen_ai.operation.name": "chat"})
		b.span("chat", 3, 99, 5, 20, attrs{"gen_ai.operation.name": "chat"})
		cases, problems := Adapt(b.refs())
		if len(cases) != 3 || cases[0].Level != LevelAgent || cases[0].SpanID != sid(3) {
			t.Fatalf("cases %+v", cases)
		}
		if len(problems) != 2 || !strings.Contains(problems[0], "not in the trace") {
			t.Errorf("problems %v", problems)
		}
	})
	t.Run("only retrieval: no case", func(t *testing.T) {
		b := newTB(t)
		b.span("retrieval", 2, 0, 10, 20, attrs{"gen_ai.operation.name": "retrieval"})
		if cases, _ := Adapt(b.refs()); len(cases) != 0 {
			t.Fatalf("cases %+v", cases)
		}
	})
}

func TestNestedAgents(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent outer", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "outer"})
	b.span("execute_tool a", 2, 1, 10, 20, attrs{"gen_ai.operation.name": "execute_tool"})
	b.span("invoke_agent inner", 3, 1, 20, 80, attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "inner"})
	b.span("execute_tool b", 4, 3, 30, 40, attrs{"gen_ai.operation.name": "execute_tool"})
	b.span("chat", 5, 3, 40, 50, attrs{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": int64(7)})
	cases, _ := Adapt(b.refs())
	if len(cases) != 3 {
		t.Fatalf("%d cases", len(cases))
	}
	outer, inner, llm := cases[0], cases[1], cases[2]
	if outer.AgentName != "outer" || len(outer.ToolCalls) != 2 || outer.ToolCalls[1].Name != "b" || outer.Usage.InputTokens != 7 {
		t.Errorf("outer %+v", outer)
	}
	if inner.AgentName != "inner" || len(inner.ToolCalls) != 1 || inner.ToolCalls[0].Name != "b" {
		t.Errorf("inner %+v", inner)
	}
	if llm.AgentName != "inner" {
		t.Errorf("llm agent name %q", llm.AgentName)
	}
}

func TestToolOrderTiesAndRequestFill(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent a", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent"})
	b.span("chat", 2, 1, 1, 5, attrs{"gen_ai.operation.name": "chat", "gen_ai.output.messages": []any{attrs{"role": "assistant", "parts": []any{
		attrs{"type": "tool_call", "id": "x1", "name": "t", "arguments": attrs{"n": 1}},
		attrs{"type": "tool_call", "id": "x2", "name": "t", "arguments": attrs{"n": 2}},
	}}}})
	// same start millisecond; ordered by end, then appearance
	b.span("execute_tool t", 4, 1, 10, 30, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": `{"n":2}`})
	b.span("execute_tool t", 3, 1, 10, 20, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	cases, _ := Adapt(b.refs())
	c := agentCase(t, cases)
	if len(c.ToolCalls) != 2 || c.ToolCalls[0].SpanID != sid(3) || c.ToolCalls[1].SpanID != sid(4) {
		t.Fatalf("order %+v", c.ToolCalls)
	}
	// span 3 had no args: filled from the first unused matching request; span 4's args match x2
	if c.ToolCalls[0].ID != "x1" || !jsonEqual(c.ToolCalls[0].Arguments, attrs{"n": 1}) || c.ToolCalls[1].ID != "x2" {
		t.Errorf("filled %+v", c.ToolCalls)
	}
}

func TestExpectations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		root  attrs
		span  attrs
		check func(t *testing.T, e Expectations)
	}{
		{"absent", attrs{}, attrs{}, func(t *testing.T, e Expectations) {
			if e.HasToolCalls || e.HasOutput || e.HasDocuments || e.HasTasks || e.HasContext {
				t.Errorf("%+v", e)
			}
		}},
		{"empty list", attrs{}, attrs{"eval.expected.tool_calls": "[]"}, func(t *testing.T, e Expectations) {
			if !e.HasToolCalls || e.ToolCalls == nil || len(e.ToolCalls) != 0 {
				t.Errorf("%+v", e)
			}
		}},
		{"structured empty list", attrs{}, attrs{"eval.expected.tool_calls": []any{}}, func(t *testing.T, e Expectations) {
			if !e.HasToolCalls || len(e.ToolCalls) != 0 {
				t.Errorf("%+v", e)
			}
		}},
		{"from span over root", attrs{"eval.expected.tool_calls": `["root_tool"]`, "eval.constraints": "be brief"},
			attrs{"eval.expected.tool_calls": `[{"name":"book_hotel","arguments":{"nights":5}}]`}, func(t *testing.T, e Expectations) {
				if len(e.ToolCalls) != 1 || e.ToolCalls[0].Name != "book_hotel" || !e.ToolCalls[0].HasArguments || e.ToolCalls[0].Arguments["nights"] != float64(5) {
					t.Errorf("%+v", e.ToolCalls)
				}
				if e.Constraints != "be brief" {
					t.Errorf("constraints from root: %q", e.Constraints)
				}
			}},
		{"from root", attrs{"eval.expected.tool_calls": []any{"search_flights", attrs{"name": "book_hotel"}}}, attrs{}, func(t *testing.T, e Expectations) {
			if len(e.ToolCalls) != 2 || e.ToolCalls[1].HasArguments {
				t.Errorf("%+v", e.ToolCalls)
			}
		}},
		{"output string and JSON", attrs{}, attrs{"eval.expected.output": `{"city":"Paris"}`}, func(t *testing.T, e Expectations) {
			if m, ok := e.Output.(map[string]any); !ok || m["city"] != "Paris" {
				t.Errorf("%#v", e.Output)
			}
		}},
		{"output plain", attrs{}, attrs{"eval.expected.output": "Paris"}, func(t *testing.T, e Expectations) {
			if e.Output != "Paris" || !e.HasOutput {
				t.Errorf("%#v", e.Output)
			}
		}},
		{"others", attrs{}, attrs{
			"eval.expected.documents": `["h1",{"id":"h2"}]`, "eval.tasks": `["book flight","book hotel"]`,
			"eval.context": "Paris is in France", "eval.conversation_goal": "trip booked", "eval.constraints": "budget",
		}, func(t *testing.T, e Expectations) {
			if len(e.Documents) != 2 || len(e.Tasks) != 2 || e.Tasks[1] != "book hotel" || len(e.Context) != 1 || e.ConversationGoal != "trip booked" || e.Constraints != "budget" {
				t.Errorf("%+v", e)
			}
		}},
		{"context array", attrs{}, attrs{"eval.context": []any{"a", "b"}}, func(t *testing.T, e Expectations) {
			if len(e.Context) != 2 || e.Context[1] != "b" {
				t.Errorf("%+v", e.Context)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			b.span("root", 1, 0, 0, 100, tc.root)
			a := attrs{"gen_ai.operation.name": "invoke_agent"}
			for k, v := range tc.span {
				a[k] = v
			}
			b.span("invoke_agent", 2, 1, 1, 99, a)
			cases, problems := Adapt(b.refs())
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			tc.check(t, agentCase(t, cases).Expected)
		})
	}
}

func TestMalformed(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	huge := `[{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("x", 5<<20) + `"}]}]`
	good := js([]any{attrs{"role": "assistant", "parts": []any{attrs{"type": "text", "content": "kept"}}}})
	deepStructured := map[string]any{}
	node := deepStructured
	for i := 0; i < 200; i++ {
		child := map[string]any{}
		node["x"] = child
		node = child
	}
	for _, tc := range []struct {
		name    string
		a       attrs
		problem string // substring of a reported problem
		check   func(t *testing.T, c Case)
	}{
		{"invalid JSON", attrs{"gen_ai.input.messages": `[{"role":"user",`}, "malformed JSON", nil},
		{"wrong type messages", attrs{"gen_ai.input.messages": int64(42)}, "want an array of messages", nil},
		{"wrong type model", attrs{"gen_ai.request.model": int64(4)}, "want a string", func(t *testing.T, c Case) {
			if c.Model != "4" {
				t.Errorf("model %q", c.Model)
			}
		}},
		{"invalid UTF-8", attrs{"gen_ai.request.model": "gpt\xff"}, "invalid UTF-8", func(t *testing.T, c Case) {
			if c.Model != "gpt\uFFFD" {
				t.Errorf("model %q", c.Model)
			}
		}},
		{"5 MB attribute", attrs{"gen_ai.input.messages": huge}, "exceeds", nil},
		{"10k deep JSON", attrs{"gen_ai.input.messages": deep}, "nested deeper", nil},
		{"deep structured", attrs{"gen_ai.input.messages": []any{deepStructured}}, "nested deeper", nil},
		{"bad tool defs", attrs{"gen_ai.tool.definitions": `[1, {"name": "ok", "parameters": "nope"}]`}, "tool definition", func(t *testing.T, c Case) {
			if len(c.ToolDefinitions) != 1 || c.ToolDefinitions[0].Name != "ok" {
				t.Errorf("defs %+v", c.ToolDefinitions)
			}
		}},
		{"bad tokens", attrs{"gen_ai.usage.input_tokens": "many"}, "want an integer", nil},
		{"bad expectation", attrs{"eval.expected.tool_calls": `{"name":1}`}, "eval.expected.tool_calls", func(t *testing.T, c Case) {
			if c.Expected.HasToolCalls {
				t.Errorf("expectation should be absent")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			a := attrs{"gen_ai.operation.name": "chat", "gen_ai.output.messages": good}
			for k, v := range tc.a {
				a[k] = v
			}
			b.span("chat broken", 1, 0, 0, 10, a)
			cases, problems := Adapt(b.refs())
			if len(cases) != 2 {
				t.Fatalf("cases %d", len(cases))
			}
			found := false
			for _, p := range problems {
				if strings.Contains(p, tc.problem) && strings.Contains(p, `span "chat broken" (0000000000000001)`) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no problem %q in %q", tc.problem, problems)
			}
			for _, c := range cases {
				if len(c.Problems) == 0 {
					t.Errorf("%s case has no problems", c.Level)
				}
				if c.Output != "kept" {
					t.Errorf("readable output lost: %q", c.Output)
				}
				if tc.check != nil && c.Level == LevelLLM {
					tc.check(t, c)
				}
			}
		})
	}
}

func TestParentCycleAndMissingParent(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent a", 1, 3, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent"})
	b.span("invoke_agent b", 2, 1, 1, 99, attrs{"gen_ai.operation.name": "invoke_agent"})
	b.span("execute_tool c", 3, 2, 2, 98, attrs{"gen_ai.operation.name": "execute_tool"})
	b.span("execute_tool d", 4, 3, 3, 97, attrs{"gen_ai.operation.name": "execute_tool"})
	b.span("execute_tool orphan", 5, 77, 4, 5, attrs{"gen_ai.operation.name": "execute_tool"})
	b.span("self", 6, 6, 4, 5, attrs{"gen_ai.operation.name": "chat"})
	cases, problems := Adapt(b.refs())
	if len(cases) != 3 {
		t.Fatalf("cases %d", len(cases))
	}
	var cyc, missing, self int
	for _, p := range problems {
		switch {
		case strings.Contains(p, "parent cycle"):
			cyc++
		case strings.Contains(p, "not in the trace"):
			missing++
		case strings.Contains(p, "own parent"):
			self++
		}
	}
	if cyc != 3 || missing != 1 || self != 1 {
		t.Fatalf("problems %q", problems)
	}
	for _, c := range cases {
		if c.Level == LevelAgent && c.SpanName == "invoke_agent a" && len(c.ToolCalls) != 0 {
			t.Errorf("cycle broken: a is top-level with nothing below: %+v", c.ToolCalls)
		}
		if c.Level == LevelAgent && c.SpanName == "invoke_agent b" && len(c.ToolCalls) != 0 {
			t.Errorf("b: %+v", c.ToolCalls)
		}
	}
}

func TestAdaptEmptyAndDeterministic(t *testing.T) {
	if c, p := Adapt(nil); c != nil || p != nil {
		t.Fatal("nil input")
	}
	refs := buildOpenInference(t).refs()
	c1, _ := Adapt(refs)
	c2, _ := Adapt(refs)
	if len(c1) != len(c2) {
		t.Fatal("nondeterministic")
	}
	for i := range c1 {
		if c1[i].SpanID != c2[i].SpanID || c1[i].Level != c2[i].Level || c1[i].Output != c2[i].Output {
			t.Fatal("nondeterministic order")
		}
	}
}

func TestRepeatedMalformedJSONReportedPerSpan(t *testing.T) {
	bad := `[{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("y", 100) + `"}]`
	b := newTB(t)
	b.span("chat one", 1, 0, 0, 10, attrs{"gen_ai.operation.name": "chat", "gen_ai.input.messages": bad})
	b.span("chat two", 2, 1, 1, 9, attrs{"gen_ai.operation.name": "chat", "gen_ai.input.messages": bad})
	_, problems := Adapt(b.refs())
	if len(problems) != 2 || !strings.Contains(problems[0], "chat one") || !strings.Contains(problems[1], "chat two") || !strings.Contains(problems[1], "malformed JSON") {
		t.Fatalf("problems %q", problems)
	}
}
