package evaluators

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

func testCELCase() *adapter.Case {
	return &adapter.Case{
		Level: adapter.LevelAgent, Input: "book a hotel", Output: "Booked, see DOC-7.", LLMCalls: 2,
		ToolCalls: []adapter.ToolCall{
			{Name: "search_hotels", Arguments: obj("city", "Lisbon"), HasResult: true, Result: `{"hotels": ["Casa"]}`, Duration: 120 * time.Millisecond},
			{Name: "book_hotel", Arguments: obj("city", "Lisbon", "nights", 5.0), HasResult: true, Result: `{"confirmation": "H-1"}`},
		},
		Usage:      adapter.Usage{InputTokens: 1000, OutputTokens: 200, HasInputTokens: true, HasOutputTokens: true},
		Attributes: obj("app.user.tier", "gold"),
	}
}

func TestCELCompileErrorNamesEvaluatorAndPosition(t *testing.T) {
	cases := []struct{ expr, want string }{
		{`case.tool_calls.size() > 0 && case.inptu == ""`, `<input>:1:35: undefined field 'inptu'`},
		{`case.tool_calls.exists(t, t.nme == "x")`, `<input>:1:28: undefined field 'nme'`},
		{`case.usage.input_tokens > "10"`, `<input>:1:25: found no matching overload for '_>_'`},
		{`case.output`, `returns string`},
		{`case.tool_calls.size( > 1`, `<input>:1:23: Syntax error`},
	}
	for _, tc := range cases {
		cfg := Config{Type: "cel", Name: "my_check", Options: obj("expression", tc.expr)}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), `evaluator "my_check" (cel)`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to name my_check and contain %q", tc.expr, err, tc.want)
		}
	}
	if err := (&Config{Type: "cel"}).Validate(); err == nil || !strings.Contains(err.Error(), "`expression` is required") {
		t.Errorf("missing expression: %v", err)
	}
	if err := (&Config{Type: "cel", Options: obj("expression", "true", "cost_limt", 5)}).Validate(); err == nil || !strings.Contains(err.Error(), "cost_limt") {
		t.Errorf("unknown option: %v", err)
	}
}

func TestCELResultKinds(t *testing.T) {
	c := testCELCase()
	for _, tc := range []struct {
		expr string
		w    want
	}{
		{`case.tool_calls.all(t, !t.errored)`, scored(1, 1, "expression is true")},
		{`0.25 + 0.5`, scored(0.75, 1, "0.75")},
		{`1`, scored(1, 1)},
		{`{"score": case.llm_calls <= 1, "reason": "llm calls: " + string(case.llm_calls)}`, scored(0, 1, "llm calls: 2")},
		{`{"score": 0.9}`, scored(0.9, 1)},
		{`{"skipped": "no refund in this run"}`, skipped("no refund in this run")},
		{`1.5`, want{status: StatusError, reason: "outside [0, 1]"}},
		{`{"score": -1}`, want{status: StatusError, reason: "outside [0, 1]"}},
		{`{"reason": "x"}`, want{status: StatusError, reason: `without "score"`}},
		{`case.attributes["app.user.tier"] == "gold" && case.attributes["missing"] == "x"`, want{status: StatusError, reason: "no such key: missing"}},
		{`"missing" in case.attributes && case.attributes["missing"] == "x"`, want{status: StatusFailed, reason: "`\"missing\" in case.attributes` is false"}},
		{`json.decode(case.tool_calls[0].result).hotels[0] == "Casa"`, scored(1, 1)},
		{`json.decode(case.output) == {}`, want{status: StatusError, reason: "json.decode"}},
		{`regex.extract(case.output, "DOC-[0-9]+").orValue("") == "DOC-7"`, scored(1, 1)},
		{`case.tool_calls.filter(t, t.name == "book_hotel").all(t, t.arguments.nights <= 14)`, scored(1, 1)},
		{`!has(case.expected.output) && case.turns.size() == 0`, scored(1, 1)},
	} {
		r := runEval(t, "cel", obj("expression", tc.expr), nil, c)
		t.Run(tc.expr, func(t *testing.T) { check(t, r, tc.w) })
	}
}

func TestCELFalseNamesTheFailingConjunct(t *testing.T) {
	c := testCELCase()
	r := runEval(t, "cel", obj("expression", `case.llm_calls <= 3 &&
		case.tool_calls.exists(t, t.name == "book_hotel") &&
		case.usage.output_tokens < 100 &&
		case.output.contains("DOC")`), nil, c)
	check(t, r, want{status: StatusFailed, reason: "`case.usage.output_tokens < 100` is false"})
	// Without conjuncts the reason quotes the expression.
	r = runEval(t, "cel", obj("expression", `case.llm_calls > 5`), nil, c)
	check(t, r, want{status: StatusFailed, reason: "expression is false: `case.llm_calls > 5`"})
}

func TestCELRunawayExpressionHitsTheCostLimit(t *testing.T) {
	// 100³ = a million multiplications: far over a limit of 10 000.
	runaway := `lists.range(100).map(a, lists.range(100).map(b, lists.range(100).map(c, a * b * c))).size() > 0`
	r := runEval(t, "cel", obj("expression", runaway, "cost_limit", 10000), nil, testCELCase())
	check(t, r, want{status: StatusError, reason: "exceeded its cost_limit of 10000"})
	// The default limit stops it too.
	r = runEval(t, "cel", obj("expression", strings.ReplaceAll(runaway, "100", "1000")), nil, testCELCase())
	check(t, r, want{status: StatusError, reason: "cost_limit"})
	// An ended context stops a long expression as a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	insts, err := Build([]Config{{Type: "cel", Options: obj("expression", runaway, "cost_limit", 1<<40)}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if r := insts[0].Evaluate(ctx, testCELCase()); r.Status != StatusTimeout {
		t.Fatalf("cancelled: %+v", r)
	}
}

func TestCELSeesAdapterCaseFields(t *testing.T) {
	c := testCELCase()
	c.Model, c.AgentName, c.Latency = "gpt-4o", "travel_agent", 1500*time.Millisecond
	c.Documents = []adapter.Document{{ID: "DOC-7", Content: "Casa"}}
	c.Expected.ToolCalls, c.Expected.HasToolCalls = []adapter.ExpectedCall{exp("book_hotel", obj("nights", 5.0))}, true
	c.Expected.Output, c.Expected.HasOutput = "Booked", true
	expr := `case.model == "gpt-4o" && case.agent_name == "travel_agent" && case.latency_ms == 1500.0 &&
		case.level == "agent" && case.input == "book a hotel" && case.usage.total_tokens == 1200 &&
		case.tool_calls[0].duration_ms == 120.0 && case.tool_calls[1].result.contains("H-1") &&
		case.documents.exists(d, case.output.contains(d.id)) &&
		case.expected.tool_calls[0].arguments.nights == 5 && case.expected.output == "Booked"`
	check(t, runEval(t, "cel", obj("expression", expr), nil, c), scored(1, 1))
}

// The adapter skips decoding conversations and copying attributes when no
// evaluator reads them: a CEL instance says what its expression reads.
func TestCELSaysWhatItReads(t *testing.T) {
	for expr, w := range map[string][2]bool{ // conversation-free, needs attributes
		`case.tool_calls.all(t, !t.errored)`:                {true, false},
		`case.output.contains("DOC") && case.llm_calls < 3`: {false, false},
		`case.tool_calls.exists(t, t.result == case.input)`: {false, false},
		`case.attributes["app.user.tier"] == "gold"`:        {true, true},
		`cel.bind(c, case, c.output.size() > 0)`:            {false, true},
		`[case].exists(c, c.usage.total_tokens > 0)`:        {false, true},
	} {
		insts, err := Build([]Config{{Type: "cel", Options: obj("expression", expr)}}, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]bool{insts[0].ConversationFree, insts[0].NeedsAttributes}; got != w {
			t.Errorf("%s: conversation-free, attributes = %v, want %v", expr, got, w)
		}
	}
}

// A session case (docs/contract.md §14) shows its turns to the expression.
func TestCELSeesSessionTurns(t *testing.T) {
	c := &adapter.Case{Level: adapter.LevelSession, Turns: []adapter.Turn{
		{Input: "Find a flight to Lisbon", Output: "TP 541 found", LLMCalls: 2,
			ToolCalls: []adapter.ToolCall{{Name: "search_flights", Arguments: map[string]any{"to": "LIS"}}}},
		{Input: "Book it", Output: "Booked TP 541", LLMCalls: 1, Usage: adapter.Usage{InputTokens: 10, OutputTokens: 5, HasInputTokens: true, HasOutputTokens: true}},
	}}
	for _, tc := range []struct {
		expr string
		w    want
	}{
		{`case.turns.size() == 2 && case.turns[1].output.contains("TP 541")`, scored(1, 1)},
		{`case.turns.filter(t, t.llm_calls > 1).size() == 0`, want{status: StatusFailed}},
		{`case.turns[0].tool_calls[0].arguments.to == "LIS" && case.turns[1].usage.total_tokens == 15`, scored(1, 1)},
	} {
		r := runEval(t, "cel", obj("expression", tc.expr), nil, c)
		t.Run(tc.expr, func(t *testing.T) { check(t, r, tc.w) })
	}
	if err := (&Config{Type: "cel", Case: "session", Options: obj("expression", "case.turns.size() > 0")}).Validate(); err != nil {
		t.Errorf("cel on sessions: %v", err)
	}
}
