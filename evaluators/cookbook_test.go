package evaluators

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// The cookbook in docs/custom-evaluators.md is tested from the doc itself:
// each "### N. Title" section's ```cel block is compiled and run on agent
// runs the adapter builds from spans, one that must pass and one that must
// not. A recipe added to the doc without a test here fails the test.

type recipe struct {
	title, expr string
}

var recipeHeading = regexp.MustCompile("(?m)^### (\\d+)\\. (.+)$")

func loadCookbook(t testing.TB) map[int]recipe {
	t.Helper()
	b, err := os.ReadFile("../docs/custom-evaluators.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	out := map[int]recipe{}
	locs := recipeHeading.FindAllStringSubmatchIndex(doc, -1)
	for i, loc := range locs {
		end := len(doc)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if next := strings.Index(doc[loc[1]:end], "\n## "); next >= 0 {
			end = loc[1] + next
		}
		section := doc[loc[1]:end]
		start := strings.Index(section, "```cel\n")
		if start < 0 {
			t.Fatalf("recipe %q has no ```cel block", doc[loc[4]:loc[5]])
		}
		body := section[start+len("```cel\n"):]
		body = body[:strings.Index(body, "```")]
		n, _ := strconv.Atoi(doc[loc[2]:loc[3]])
		out[n] = recipe{title: doc[loc[4]:loc[5]], expr: body}
	}
	return out
}

// span is one child span of the agent run, in the order they ran.
type span struct {
	name  string
	attrs map[string]any
	err   bool
	dur   time.Duration
}

func llm(in, out int64, text string) span {
	msgs, _ := json.Marshal([]any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": text}}}})
	return span{name: "chat gpt-4o", dur: 400 * time.Millisecond, attrs: map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
		"gen_ai.usage.input_tokens": in, "gen_ai.usage.output_tokens": out,
		"gen_ai.output.messages": string(msgs),
	}}
}

func tool(name string, args map[string]any, result string) span {
	a, _ := json.Marshal(args)
	return span{name: "execute_tool " + name, dur: 200 * time.Millisecond, attrs: map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
		"gen_ai.tool.call.arguments": string(a), "gen_ai.tool.call.result": result,
	}}
}

func retrievalSpan(docs ...map[string]any) span {
	d, _ := json.Marshal(docs)
	return span{name: "retrieval kb", dur: 50 * time.Millisecond, attrs: map[string]any{
		"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": string(d),
	}}
}

func (s span) failed() span              { s.err = true; return s }
func (s span) took(d time.Duration) span { s.dur = d; return s }

// agentRun builds the spans of one agent run (an invoke_agent span with the
// children below it) and returns the agent case the adapter makes of them.
func agentRun(t testing.TB, agentAttrs map[string]any, children ...span) *adapter.Case {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	tid := pcommon.TraceID{1, 2, 3}
	start := time.Date(2026, 5, 3, 7, 0, 0, 0, time.UTC)
	at := start
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(pcommon.SpanID{1})
	root.SetName("invoke_agent travel_agent")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "travel_agent")
	if err := root.Attributes().FromRaw(mergeMaps(map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"}, agentAttrs)); err != nil {
		t.Fatal(err)
	}
	for i, c := range children {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{2, byte(i)})
		sp.SetParentSpanID(pcommon.SpanID{1})
		sp.SetName(c.name)
		if err := sp.Attributes().FromRaw(c.attrs); err != nil {
			t.Fatal(err)
		}
		if c.err {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		at = at.Add(c.dur)
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at))
		at = at.Add(time.Millisecond)
	}
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(at))
	for _, spans := range adapter.GroupByTrace(td) {
		cases, problems := adapter.AdaptWith(spans, adapter.Options{AgentCases: true, Attributes: true})
		if len(problems) > 0 || len(cases) != 1 {
			t.Fatalf("adapter: %d cases, problems %v", len(cases), problems)
		}
		return &cases[0]
	}
	t.Fatal("no trace")
	return nil
}

func mergeMaps(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// cookbookRuns are, per recipe number, the runs that must pass and the
// runs that must fail (or be skipped, for want.status skipped).
func cookbookRuns(t testing.TB) map[int][]struct {
	run *adapter.Case
	w   want
} {
	type tc = struct {
		run *adapter.Case
		w   want
	}
	pass := func(c *adapter.Case) tc { return tc{c, want{score: 1, status: StatusPassed}} }
	fail := func(c *adapter.Case, reason string) tc {
		return tc{c, want{score: 0, status: StatusFailed, reason: reason}}
	}
	ok := `{"ok": true}`
	return map[int][]tc{
		1: {
			pass(agentRun(t, nil, llm(100, 20, "refunded"), tool("issue_refund", obj("order", "A1", "amount", 120), ok))),
			fail(agentRun(t, nil, tool("issue_refund", obj("order", "A2", "amount", 900.5), ok)), "expression is false"),
		},
		2: {
			pass(agentRun(t, nil, tool("book_hotel", obj("city", "Lisbon", "nights", 5, "guests", 2), ok), tool("book_hotel", obj("city", "Porto", "nights", 1), ok))),
			fail(agentRun(t, nil, tool("book_hotel", obj("city", "Lisbon", "nights", 30), ok)), "expression is false"),
			fail(agentRun(t, nil, tool("book_hotel", obj("city", "Lisbon", "nights", 3, "guests", 9), ok)), "expression is false"),
		},
		3: {
			pass(agentRun(t, nil, retrievalSpan(obj("id", "KB-17", "content", "refund policy"), obj("id", "KB-3", "content", "x")), llm(10, 10, "Refunds take 5 days [KB-17]."))),
			fail(agentRun(t, nil, retrievalSpan(obj("id", "KB-17", "content", "refund policy")), llm(10, 10, "Refunds take 5 days.")), "cited: "),
			{agentRun(t, nil, llm(10, 10, "Hello")), skipped("no documents were retrieved")},
		},
		4: {
			pass(agentRun(t, nil, llm(10, 10, "a"), tool("search_flights", obj(), ok), llm(10, 10, "b"))),
			fail(agentRun(t, nil, llm(1, 1, "a"), llm(1, 1, "b"), llm(1, 1, "c"), llm(1, 1, "d")), "case.llm_calls <= 3"),
		},
		5: {
			pass(agentRun(t, nil, llm(2000, 300, "a"), llm(1000, 200, "b"))),
			fail(agentRun(t, nil, llm(8000, 1000, "a")), "run cost $0.03"),
		},
		6: {
			pass(agentRun(t, nil, llm(1, 1, "Your flight TP543 is booked, café included."))),
			fail(agentRun(t, nil, llm(1, 1, "Ваш рейс забронирован")), "expression is false"),
			fail(agentRun(t, nil, llm(1, 1, "Booked: 予約しました")), "expression is false"),
		},
		7: {
			pass(agentRun(t, nil, llm(1, 1, "Booked for 2 guests, confirmation H-7781, total 640 EUR."))),
			fail(agentRun(t, nil, llm(1, 1, "Contact jane.doe@example.com for changes.")), "@[A-Za-z0-9.-]+"),
			fail(agentRun(t, nil, llm(1, 1, "Charged card 4111 1111 1111 1111.")), "{13,16}"),
		},
		8: {
			pass(agentRun(t, nil, tool("search_flights", obj("to", "LIS"), `{"flights": [{"id": "TP543"}]}`), tool("book_flight", obj("id", "TP543"), ok))),
			pass(agentRun(t, nil, tool("search_flights", obj("to", "LIS"), `{"flights": []}`), llm(1, 1, "No flights found."))),
			fail(agentRun(t, nil, tool("search_flights", obj("to", "LIS"), `{"flights": []}`), tool("book_flight", obj("id", "XX1"), ok)), "expression is false"),
		},
		9: {
			pass(agentRun(t, nil, tool("a", obj(), ok), tool("b", obj(), ok))),
			{agentRun(t, nil, tool("a", obj(), ok), tool("b", obj(), ok).took(3*time.Second), tool("c", obj(), ok).failed(), tool("d", obj(), ok)),
				want{score: 0.5, status: StatusFailed, reason: "0.5"}},
		},
		10: {
			pass(agentRun(t, obj("app.user.tier", "gold"), tool("charge_card", obj(), ok), tool("send_email", obj(), ok), tool("confirm_booking", obj(), ok))),
			fail(agentRun(t, nil, tool("confirm_booking", obj(), ok), tool("charge_card", obj(), ok)), "matches"),
			fail(agentRun(t, obj("app.user.tier", "free"), tool("charge_card", obj(), ok), tool("x", obj(), ok), tool("x", obj(), ok),
				tool("x", obj(), ok), tool("x", obj(), ok), tool("confirm_booking", obj(), ok)), "size() <= 5` is false"),
		},
	}
}

func TestCookbookRecipes(t *testing.T) {
	recipes := loadCookbook(t)
	runs := cookbookRuns(t)
	if len(recipes) != 10 || len(runs) != len(recipes) {
		t.Fatalf("%d recipes in the doc, %d tested", len(recipes), len(runs))
	}
	for n, rc := range recipes {
		t.Run(strconv.Itoa(n)+" "+rc.title, func(t *testing.T) {
			tcs, ok := runs[n]
			if !ok {
				t.Fatalf("recipe %d has no test", n)
			}
			cfg := Config{Type: "cel", Name: "recipe", Options: obj("expression", rc.expr)}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			insts, err := Build([]Config{cfg}, Deps{})
			if err != nil {
				t.Fatal(err)
			}
			for i, tc := range tcs {
				r := insts[0].Evaluate(context.Background(), tc.run)
				if r.Status != tc.w.status || (r.Scored() && r.Score != tc.w.score) || !strings.Contains(r.Reason, tc.w.reason) {
					t.Errorf("run %d: %s %v %q, want %s %v with %q", i, r.Status, r.Score, r.Reason, tc.w.status, tc.w.score, tc.w.reason)
				}
			}
		})
	}
}
