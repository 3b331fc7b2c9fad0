package adapter

import (
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fixtures are every convention's travel trace plus the traces of the
// adapter tests that exercise case building.
func fixtures(t testing.TB) map[string][]SpanRef {
	return map[string][]SpanRef{
		"otel-structured": buildOTel(t, false).refs(),
		"otel-json":       buildOTel(t, true).refs(),
		"otel-events":     buildOTelEvents(t).refs(),
		"openinference":   buildOpenInference(t).refs(),
		"openllmetry":     buildOpenLLMetry(t).refs(),
		"vercel":          buildVercel(t).refs(),
		"bench":           benchTrace(t).refs(),
	}
}

// toolSpanKeys are the attributes of tool spans that give a call's id and
// arguments, across the conventions.
var toolSpanKeys = []string{
	"gen_ai.tool.call.id", "tool_call.id", "ai.toolCall.id", "tool.id",
	"gen_ai.tool.call.arguments", "ai.toolCall.args", "ai.toolCall.input", "tool_call.function.arguments",
	"traceloop.entity.input", "input.value",
}

// rebuild copies the spans of refs into a new trace, passing tool spans
// through edit; edit returning false drops the span.
func rebuild(refs []SpanRef, edit func(ptrace.Span) bool) []SpanRef {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	refs[0].Resource().CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	for _, r := range refs {
		sp := ss.Spans().AppendEmpty()
		r.Span.CopyTo(sp)
		if classify(sp, sp.ParentSpanID().IsEmpty()) == kindTool && !edit(sp) {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool { return s.SpanID() == sp.SpanID() })
		}
	}
	return GroupByTrace(td)[refs[0].Span.TraceID()]
}

// skipFixtures are the fixtures, each also without its tool spans (the
// calls then come from the LLM outputs, with results from later tool
// messages) and with tool spans lacking call ids and arguments (filled
// from the model's requests).
func skipFixtures(t testing.TB) map[string][]SpanRef {
	out := map[string][]SpanRef{}
	for name, refs := range fixtures(t) {
		out[name] = refs
		out[name+"/no-tool-spans"] = rebuild(refs, func(ptrace.Span) bool { return false })
		out[name+"/bare-tool-spans"] = rebuild(refs, func(sp ptrace.Span) bool {
			for _, k := range toolSpanKeys {
				sp.Attributes().Remove(k)
			}
			return true
		})
	}
	return out
}

// withoutConversation clears what SkipConversation leaves empty, and
// Problems.
func withoutConversation(cases []Case) []Case {
	out := withoutProblems(cases)
	for i := range out {
		c := &out[i]
		c.Input, c.Output, c.Messages, c.SystemInstructions = "", "", nil, ""
	}
	return out
}

// checkSkipConversation checks that SkipConversation changes nothing but
// the conversation fields (and Problems), for each choice of levels.
func checkSkipConversation(t *testing.T, refs []SpanRef) {
	t.Helper()
	for _, opts := range []Options{{AgentCases: true}, {LLMCases: true}, {AgentCases: true, LLMCases: true}} {
		want, _ := AdaptWith(refs, opts)
		skip := opts
		skip.SkipConversation = true
		got, _ := AdaptWith(refs, skip)
		for _, c := range got {
			if c.Input != "" || c.Output != "" || c.Messages != nil || c.SystemInstructions != "" {
				t.Fatalf("%+v: conversation in %s case %+v", opts, c.Level, c)
			}
		}
		if g, w := withoutProblems(got), withoutConversation(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%+v: cases differ:\n got %+v\nwant %+v", opts, g, w)
		}
	}
}

func TestSkipConversation(t *testing.T) {
	for name, refs := range skipFixtures(t) {
		t.Run(name, func(t *testing.T) {
			checkSkipConversation(t, refs)
			agents, _ := AdaptWith(refs, Options{AgentCases: true, SkipConversation: true})
			calls := 0
			for _, c := range agents {
				calls += len(c.ToolCalls)
			}
			if calls == 0 {
				t.Errorf("no tool calls in %+v", agents)
			}
		})
	}
	// the calls read from LLM outputs keep their ids, arguments and results
	refs := rebuild(buildOTel(t, true).refs(), func(ptrace.Span) bool { return false })
	cases, problems := AdaptWith(refs, Options{AgentCases: true, SkipConversation: true})
	if len(problems) > 0 || len(cases) != 1 {
		t.Fatalf("cases %d problems %v", len(cases), problems)
	}
	if c := cases[0]; len(c.ToolCalls) != 2 || c.ToolCalls[0].ID != "call_1" || c.ToolCalls[0].Result != flightsRes ||
		!jsonEqual(c.ToolCalls[1].Arguments, hotelArgs) || c.ToolCalls[1].Result != hotelRes {
		t.Errorf("calls %+v", c.ToolCalls)
	}
}

// TestSkipConversationReadsNoMessages: with complete tool spans, no
// message is decoded (a malformed one is not even noticed).
func TestSkipConversationReadsNoMessages(t *testing.T) {
	b := newTB(t)
	b.span("invoke_agent a", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": "[{"})
	b.span("chat", 2, 1, 10, 20, attrs{"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{", "gen_ai.output.messages": "[{",
		"gen_ai.system_instructions": "[{"})
	b.span("execute_tool t", 3, 1, 20, 30, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
		"gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": `{"n":1}`})
	_, problems := AdaptWith(b.refs(), Options{AgentCases: true})
	if len(problems) == 0 {
		t.Fatal("malformed messages not reported without SkipConversation")
	}
	for _, opts := range []Options{{AgentCases: true, SkipConversation: true}, {AgentCases: true, LLMCases: true, SkipConversation: true}} {
		cases, problems := AdaptWith(b.refs(), opts)
		for _, p := range problems {
			if strings.Contains(p, "input.messages") || strings.Contains(p, "system_instructions") ||
				(!opts.LLMCases && strings.Contains(p, "output.messages")) {
				t.Errorf("%+v: problem %q", opts, p)
			}
		}
		if c := cases[0]; len(c.ToolCalls) != 1 || c.ToolCalls[0].ID != "c1" {
			t.Errorf("%+v: calls %+v", opts, c.ToolCalls)
		}
	}
}

func levelCases(cases []Case, l Level) []Case {
	var out []Case
	for _, c := range cases {
		if c.Level == l {
			out = append(out, c)
		}
	}
	return out
}

// withoutProblems clears Problems: a single level reads less and so may
// report fewer problems.
func withoutProblems(cases []Case) []Case {
	out := make([]Case, len(cases))
	for i, c := range cases {
		c.Problems = nil
		out[i] = c
	}
	return out
}

func TestAdaptWithSameCasesAsAdapt(t *testing.T) {
	for name, refs := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			all, _ := Adapt(refs)
			agents, _ := AdaptWith(refs, Options{AgentCases: true})
			if want := levelCases(all, LevelAgent); len(want) == 0 || !reflect.DeepEqual(agents, want) {
				t.Errorf("agent cases differ:\n got %+v\nwant %+v", agents, want)
			}
			llms, _ := AdaptWith(refs, Options{LLMCases: true})
			if want := levelCases(all, LevelLLM); len(want) == 0 || !reflect.DeepEqual(llms, want) {
				t.Errorf("llm cases differ:\n got %+v\nwant %+v", llms, want)
			}
			both, _ := AdaptWith(refs, Options{LLMCases: true, AgentCases: true})
			if !reflect.DeepEqual(both, all) {
				t.Errorf("AdaptWith(both) differs from Adapt")
			}
			if none, problems := AdaptWith(refs, Options{}); none != nil || problems != nil {
				t.Errorf("no level: %v %v", none, problems)
			}
		})
	}
}

// checkLevels checks, for fuzzed input, that each level alone builds the
// cases Adapt builds of that level (problems aside).
func checkLevels(t *testing.T, spans []SpanRef, all []Case) {
	t.Helper()
	for _, l := range []Level{LevelAgent, LevelLLM} {
		cases, _ := AdaptWith(spans, Options{AgentCases: l == LevelAgent, LLMCases: l == LevelLLM})
		got, want := withoutProblems(cases), withoutProblems(levelCases(all, l))
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s cases differ:\n got %+v\nwant %+v", l, got, want)
		}
	}
	checkSkipConversation(t, spans)
}
