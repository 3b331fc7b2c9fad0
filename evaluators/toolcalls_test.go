package evaluators

import (
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

type callTest struct {
	name string
	opts map[string]any
	c    *adapter.Case
	want want
}

func runCallTests(t *testing.T, typ string, thr float64, tests []callTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, runEval(t, typ, tt.opts, nil, tt.c), tt.want)
		})
	}
}

var threeExpected = exps("fetch", "transform", "store")

func TestToolTrajectory(t *testing.T) {
	fetch2 := calls("fetch", "transform")
	hotel := []adapter.ExpectedCall{exp("search_flights", nil), exp("book_hotel", obj("nights", 5))}
	runCallTests(t, "tool_trajectory", 1, []callTest{
		// Contract edge cases.
		{"no expectation skipped", nil, caseWith(nil, calls("a")), skipped("no expected tool calls")},
		{"nothing expected nothing called", nil, caseWith([]adapter.ExpectedCall{}, nil), scored(1, 1)},
		{"calls when [] expected", nil, caseWith([]adapter.ExpectedCall{}, calls("a")), scored(0, 1, "no tool call was expected")},
		{"expected none made", nil, caseWith(threeExpected, nil), scored(0, 1, "no tool was called")},
		{"subset mode expected none made", obj("mode", "subset"), caseWith(threeExpected, nil), scored(0, 1)},
		{"superset mode [] expected calls made", obj("mode", "superset"), caseWith([]adapter.ExpectedCall{}, calls("a")), scored(0, 1)},
		// Documented example: expected [fetch, transform, store], called [fetch, transform].
		{"recall 2/3", obj("mode", "recall"), caseWith(threeExpected, fetch2), scored(2.0/3, 1, "missing: store (expected #3)")},
		{"precision 1", obj("mode", "precision"), caseWith(threeExpected, fetch2), scored(1, 1)},
		{"f1", obj("mode", "f1"), caseWith(threeExpected, fetch2), scored(0.8, 1)},
		{"in_order default", nil, caseWith(threeExpected, fetch2), scored(2.0/3, 1)},
		{"in_order swapped", nil, caseWith(threeExpected, calls("transform", "fetch", "store")), scored(2.0/3, 1)},
		{"any_order swapped", obj("mode", "any_order"), caseWith(threeExpected, calls("transform", "fetch", "store")), scored(1, 1)},
		{"any_order longer", obj("mode", "any_order"), caseWith(exps("a"), calls("a", "b")), scored(0.5, 1, "unexpected: b (call #2)")},
		{"strict equal", obj("mode", "strict"), caseWith(threeExpected, calls("fetch", "transform", "store")), scored(1, 1)},
		{"strict order", obj("mode", "strict"), caseWith(threeExpected, calls("fetch", "store", "transform")), scored(0, 1, "position 2: expected transform, got store")},
		{"strict length", obj("mode", "strict"), caseWith(threeExpected, fetch2), scored(0, 1, "position 3")},
		{"superset ok", obj("mode", "superset"), caseWith(exps("a", "b"), calls("b", "x", "a")), scored(1, 1)},
		{"superset missing", obj("mode", "superset"), caseWith(exps("a", "b"), calls("b")), scored(0, 1)},
		{"superset needs distinct", obj("mode", "superset"), caseWith(exps("a", "a"), calls("a")), scored(0, 1)},
		{"subset ok", obj("mode", "subset"), caseWith(exps("a", "b", "c"), calls("c", "a")), scored(1, 1)},
		{"subset extra", obj("mode", "subset"), caseWith(exps("a"), calls("a", "a")), scored(0, 1)},
		// Arguments.
		{"args exact match", nil, caseWith(hotel, []adapter.ToolCall{call("search_flights", obj("to", "PAR")), call("book_hotel", obj("nights", 5.0))}), scored(1, 1)},
		{"args mismatch reason", nil, caseWith(hotel, []adapter.ToolCall{call("search_flights", nil), call("book_hotel", obj("nights", 3))}),
			scored(0.5, 1, "book_hotel (expected #2) vs call #2: argument `nights`: expected 5, got 3")},
		{"args exact extra key", nil, caseWith(hotel, []adapter.ToolCall{call("search_flights", nil), call("book_hotel", obj("nights", 5, "city", "Paris"))}), scored(0.5, 1, "unexpected argument `city`")},
		{"args subset extra key", obj("arguments", obj("mode", "subset")), caseWith(hotel, []adapter.ToolCall{call("search_flights", nil), call("book_hotel", obj("nights", 5, "city", "Paris"))}), scored(1, 1)},
		{"tool_arguments ignore", obj("tool_arguments", obj("book_hotel", obj("mode", "ignore"))), caseWith(hotel, []adapter.ToolCall{call("search_flights", nil), call("book_hotel", obj("nights", 9))}), scored(1, 1)},
		{"empty args expects none", nil, caseWith([]adapter.ExpectedCall{exp("a", map[string]any{})}, []adapter.ToolCall{call("a", obj("x", 1))}), scored(0, 1)},
		{"empty args none given", nil, caseWith([]adapter.ExpectedCall{exp("a", map[string]any{})}, []adapter.ToolCall{call("a", nil)}), scored(1, 1)},
		// Bipartite beats greedy: expected a(any), a(x=1); actual a(x=1), a(x=2).
		{"bipartite", obj("mode", "recall"), caseWith([]adapter.ExpectedCall{exp("a", nil), exp("a", obj("x", 1))},
			[]adapter.ToolCall{call("a", obj("x", 1)), call("a", obj("x", 2))}), scored(1, 1)},
		// Expectation from config.
		{"expected option", obj("expected", []any{"fetch", map[string]any{"name": "transform"}, "store"}, "mode", "recall"), caseWith(nil, fetch2), scored(2.0/3, 1)},
		{"expected option JSON string", obj("expected", `["fetch"]`), caseWith(nil, fetch2), scored(0.5, 1)},
		{"expected option []", obj("expected", []any{}), caseWith(nil, nil), scored(1, 1)},
		{"span overrides option", obj("expected", []any{"x"}), caseWith(exps("fetch", "transform"), fetch2), scored(1, 1)},
	})
}

func TestToolCorrectness(t *testing.T) {
	runCallTests(t, "tool_correctness", 1, []callTest{
		{"no expectation skipped", nil, caseWith(nil, calls("a")), skipped("no expected")},
		{"nothing expected nothing called", nil, caseWith([]adapter.ExpectedCall{}, nil), scored(1, 1)},
		{"calls when [] expected", nil, caseWith([]adapter.ExpectedCall{}, calls("a")), scored(0, 1)},
		{"expected none made", nil, caseWith(exps("a"), nil), scored(0, 1)},
		// names_only: F1 of sets. expected {fetch, transform, store}, called {fetch, transform}: P=1 R=2/3 F1=0.8
		{"names_only f1", nil, caseWith(threeExpected, calls("fetch", "transform")), scored(0.8, 1, "missing: store")},
		{"names_only duplicates are a set", nil, caseWith(exps("a", "b"), calls("a", "a", "b")), scored(1, 1)},
		{"names_only unexpected", nil, caseWith(exps("a", "b"), calls("a", "c")), scored(0.5, 1, "unexpected: c")},
		{"names_and_order", obj("mode", "names_and_order"), caseWith(threeExpected, calls("store", "fetch", "transform")), scored(2.0/3, 1)},
		{"names_and_order longer", obj("mode", "names_and_order"), caseWith(exps("a"), calls("a", "a", "a", "a")), scored(0.25, 1)},
		{"names_and_args", obj("mode", "names_and_args"), caseWith([]adapter.ExpectedCall{exp("a", obj("q", "x")), exp("b", nil)},
			[]adapter.ToolCall{call("a", obj("q", "y")), call("b", obj("z", 1))}), scored(0.5, 1, "argument `q`: expected \"x\", got \"y\"")},
		{"names_and_args trim/case", obj("mode", "names_and_args", "arguments", obj("trim_strings", true, "case_insensitive", true)),
			caseWith([]adapter.ExpectedCall{exp("a", obj("q", "Paris"))}, []adapter.ToolCall{call("a", obj("q", "  paris "))}), scored(1, 1)},
		{"names_and_args f1 unequal", obj("mode", "names_and_args"), caseWith(exps("a", "b", "c"), calls("a")), scored(0.5, 1)},
	})
}

func TestToolCallAccuracy(t *testing.T) {
	runCallTests(t, "tool_call_accuracy", 0.7, []callTest{
		{"no expectation skipped", nil, caseWith(nil, calls("a")), skipped("no expected")},
		{"expected [] none called", nil, caseWith([]adapter.ExpectedCall{}, nil), scored(1, 0.7)},
		{"expected [] called", nil, caseWith([]adapter.ExpectedCall{}, calls("refund_order")), scored(0, 0.7, "refund_order")},
		{"expected, none called", nil, caseWith(exps("a"), nil), scored(0, 0.7)},
		{"fraction of expected", nil, caseWith(threeExpected, calls("fetch", "transform", "extra")), scored(2.0/3, 0.7, "missing: store")},
		{"penalize unexpected", obj("penalize_unexpected", true), caseWith(threeExpected, calls("fetch", "transform", "extra")), scored(0.5, 0.7, "unexpected: extra")},
		{"penalize none unexpected", obj("penalize_unexpected", true), caseWith(threeExpected, calls("fetch")), scored(1.0/3, 0.7)},
		{"require_order", obj("require_order", true), caseWith(threeExpected, calls("transform", "fetch", "store")), scored(1.0/3, 0.7, "position 1: expected fetch, got transform")},
		{"require_order shorter", obj("require_order", true), caseWith(threeExpected, calls("fetch", "transform")), scored(2.0/3, 0.7, "position 3: expected store, got no call")},
		{"require_order penalize", obj("require_order", true, "penalize_unexpected", true), caseWith(exps("a", "b"), calls("a", "c")), scored(1.0/3, 0.7)},
		{"names only, args ignored", nil, caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1))}, []adapter.ToolCall{call("a", obj("x", 2))}), scored(1, 0.7)},
		{"duplicates as sets", nil, caseWith(exps("a", "a", "b"), calls("a")), scored(0.5, 0.7)},
	})
}
