package evaluators

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

// The tests in this file walk docs/contract.md §6 item by item: every mode
// of every evaluator that compares calls with an expectation, the argument
// matcher's rules, and the option spellings of the table.

// compareConfigs are every evaluator configuration that compares calls with
// an expectation: all 8 trajectory modes, all 3 correctness modes, and
// tool_call_accuracy with and without its switches.
var compareConfigs = []struct {
	typ  string
	opts map[string]any
}{
	{"tool_trajectory", nil},
	{"tool_trajectory", obj("mode", "strict")},
	{"tool_trajectory", obj("mode", "in_order")},
	{"tool_trajectory", obj("mode", "any_order")},
	{"tool_trajectory", obj("mode", "superset")},
	{"tool_trajectory", obj("mode", "subset")},
	{"tool_trajectory", obj("mode", "precision")},
	{"tool_trajectory", obj("mode", "recall")},
	{"tool_trajectory", obj("mode", "f1")},
	{"tool_correctness", nil},
	{"tool_correctness", obj("mode", "names_only")},
	{"tool_correctness", obj("mode", "names_and_order")},
	{"tool_correctness", obj("mode", "names_and_args")},
	{"tool_call_accuracy", nil},
	{"tool_call_accuracy", obj("require_order", true)},
	{"tool_call_accuracy", obj("penalize_unexpected", true)},
	{"tool_call_accuracy", obj("require_order", true, "penalize_unexpected", true)},
}

func withOpts(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range obj(kv...) {
		out[k] = v
	}
	return out
}

// docs/contract.md §6: "nothing expected and nothing called -> 1; calls made
// when [] was expected -> 0; calls expected and none made -> 0; no
// expectation at all -> skipped", for every evaluator and mode, with the
// expectation on the span and in the `expected` option.
func TestContractEdgeCasesEveryMode(t *testing.T) {
	none := []adapter.ExpectedCall{}
	for _, cfg := range compareConfigs {
		t.Run(fmt.Sprintf("%s %v", cfg.typ, cfg.opts), func(t *testing.T) {
			for _, tt := range []struct {
				name string
				opts map[string]any
				c    *adapter.Case
				want want
			}{
				{"no expectation", cfg.opts, caseWith(nil, calls("a")), skipped("no expected tool calls")},
				{"no expectation, no calls", cfg.opts, caseWith(nil, nil), skipped("no expected tool calls")},
				{"[] expected, none called", cfg.opts, caseWith(none, nil), scored(1, 0)},
				{"[] expected, calls made", cfg.opts, caseWith(none, calls("a")), scored(0, 0)},
				{"expected, none called", cfg.opts, caseWith(exps("a", "b"), nil), scored(0, 0)},
				{"expected with arguments, none called", cfg.opts, caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1))}, nil), scored(0, 0)},
				{"option [] none called", withOpts(cfg.opts, "expected", []any{}), caseWith(nil, nil), scored(1, 0)},
				{"option [] calls made", withOpts(cfg.opts, "expected", []any{}), caseWith(nil, calls("a")), scored(0, 0)},
				{"option expected, none called", withOpts(cfg.opts, "expected", []any{"a"}), caseWith(nil, nil), scored(0, 0)},
				{"option JSON [] none called", withOpts(cfg.opts, "expected", "[]"), caseWith(nil, nil), scored(1, 0)},
			} {
				r := runEval(t, cfg.typ, tt.opts, f64(0.5), tt.c)
				w := tt.want
				if w.status != StatusSkipped {
					w = scored(w.score, 0.5)
				}
				t.Run(tt.name, func(t *testing.T) { check(t, r, w) })
			}
		})
	}
}

// "An expected call that omits `arguments` matches a call of that name with
// any arguments; `arguments: {}` expects none" — in every matcher mode but
// ignore (names only), and in every trajectory mode.
func TestContractEmptyArgumentsExpectNone(t *testing.T) {
	empty := []adapter.ExpectedCall{exp("a", map[string]any{})}
	omitted := []adapter.ExpectedCall{exp("a", nil)}
	withArgs := []adapter.ToolCall{call("a", obj("x", 1))}
	noArgs := []adapter.ToolCall{call("a", nil)}
	emptyArgs := []adapter.ToolCall{call("a", map[string]any{})}
	for _, mode := range []string{"exact", "subset", "superset", "fuzzy", "ignore"} {
		m := obj("arguments", obj("mode", mode))
		anyArgs := 0.0
		if mode == "ignore" {
			anyArgs = 1
		}
		for _, tt := range []struct {
			name string
			c    *adapter.Case
			want float64
		}{
			{"{} vs a call with arguments", caseWith(empty, withArgs), anyArgs},
			{"{} vs a call without arguments", caseWith(empty, noArgs), 1},
			{"{} vs a call with {}", caseWith(empty, emptyArgs), 1},
			{"omitted vs a call with arguments", caseWith(omitted, withArgs), 1},
			{"omitted vs a call without arguments", caseWith(omitted, noArgs), 1},
		} {
			t.Run(mode+" "+tt.name, func(t *testing.T) {
				check(t, runEval(t, "tool_trajectory", m, nil, tt.c), scored(tt.want, 1))
				check(t, runEval(t, "tool_correctness", withOpts(m, "mode", "names_and_args"), nil, tt.c), scored(tt.want, 1))
			})
		}
	}
	for _, mode := range []string{"strict", "in_order", "any_order", "superset", "subset", "precision", "recall", "f1"} {
		t.Run("trajectory "+mode, func(t *testing.T) {
			check(t, runEval(t, "tool_trajectory", obj("mode", mode, "arguments", obj("mode", "subset")), nil, caseWith(empty, withArgs)),
				scored(0, 1, "expected no arguments, got `x` = 1"))
			check(t, runEval(t, "tool_trajectory", obj("mode", mode, "arguments", obj("mode", "subset")), nil, caseWith(omitted, withArgs)),
				scored(1, 1))
		})
	}
	// A per-tool `ignore` keeps names only for that tool.
	check(t, runEval(t, "tool_trajectory", obj("arguments", obj("mode", "subset"), "tool_arguments", obj("a", obj("mode", "ignore"))),
		nil, caseWith(empty, withArgs)), scored(1, 1))
	// From the config: `arguments: {}` as YAML gives an empty map.
	check(t, runEval(t, "tool_trajectory", obj("expected", []any{map[string]any{"name": "a", "arguments": map[string]any{}}},
		"arguments", obj("mode", "subset")), nil, caseWith(nil, withArgs)), scored(0, 1))
}

// Trajectory modes with repeated names: maximum bipartite matching for the
// unordered modes, LCS for in_order, position for strict.
func TestContractTrajectoryDuplicates(t *testing.T) {
	for _, tt := range []struct {
		exp  []string
		act  []string
		want map[string]float64
	}{
		{[]string{"a", "b", "a"}, []string{"a", "a", "c"}, map[string]float64{
			"strict": 0, "in_order": 2.0 / 3, "any_order": 2.0 / 3, "superset": 0, "subset": 0,
			"precision": 2.0 / 3, "recall": 2.0 / 3, "f1": 2.0 / 3}},
		{[]string{"a", "a"}, []string{"a"}, map[string]float64{
			"strict": 0, "in_order": 0.5, "any_order": 0.5, "superset": 0, "subset": 1,
			"precision": 1, "recall": 0.5, "f1": 2.0 / 3}},
		{[]string{"a"}, []string{"a", "a"}, map[string]float64{
			"strict": 0, "in_order": 0.5, "any_order": 0.5, "superset": 1, "subset": 0,
			"precision": 0.5, "recall": 1, "f1": 2.0 / 3}},
		{[]string{"fetch", "transform", "store"}, []string{"fetch", "transform"}, map[string]float64{
			"strict": 0, "in_order": 2.0 / 3, "any_order": 2.0 / 3, "superset": 0, "subset": 1,
			"precision": 1, "recall": 2.0 / 3, "f1": 0.8}},
		{[]string{"a", "b"}, []string{"b", "a"}, map[string]float64{
			"strict": 0, "in_order": 0.5, "any_order": 1, "superset": 1, "subset": 1,
			"precision": 1, "recall": 1, "f1": 1}},
		{[]string{"a", "b"}, []string{"a", "b"}, map[string]float64{
			"strict": 1, "in_order": 1, "any_order": 1, "superset": 1, "subset": 1,
			"precision": 1, "recall": 1, "f1": 1}},
		{[]string{"a", "b", "c"}, []string{"x", "b", "y", "c", "a"}, map[string]float64{
			"strict": 0, "in_order": 2.0 / 5, "any_order": 3.0 / 5, "superset": 1, "subset": 0,
			"precision": 3.0 / 5, "recall": 1, "f1": 0.75}},
	} {
		for mode, want := range tt.want {
			name := fmt.Sprintf("%s %v vs %v", mode, tt.exp, tt.act)
			t.Run(name, func(t *testing.T) {
				check(t, runEval(t, "tool_trajectory", obj("mode", mode), nil, caseWith(exps(tt.exp...), calls(tt.act...))), scored(want, 1))
			})
		}
	}
}

func TestContractToolCorrectness(t *testing.T) {
	runCallTests(t, "tool_correctness", 1, []callTest{
		// names_only: F1 of the SETS: {a, b} vs {a}: P 1, R 1/2.
		{"names_only duplicates collapse", nil, caseWith(exps("a", "a", "b"), calls("a")), scored(2.0/3, 1)},
		{"names_only repeated calls collapse", nil, caseWith(exps("a"), calls("a", "a", "a")), scored(1, 1)},
		{"names_only ignores arguments", nil, caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1))}, []adapter.ToolCall{call("a", obj("x", 2))}), scored(1, 1)},
		// names_and_order: LCS 2 / longer 4.
		{"names_and_order", obj("mode", "names_and_order"), caseWith(exps("a", "b", "c"), calls("a", "c", "b", "d")), scored(0.5, 1)},
		{"names_and_order ignores arguments", obj("mode", "names_and_order"), caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1))}, []adapter.ToolCall{call("a", obj("x", 2))}), scored(1, 1)},
		// names_and_args: 2 matched of 2 expected, 3 made: P 2/3, R 1, F1 0.8.
		{"names_and_args duplicates", obj("mode", "names_and_args"),
			caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1)), exp("a", obj("x", 2))},
				[]adapter.ToolCall{call("a", obj("x", 2)), call("a", obj("x", 3)), call("a", obj("x", 1))}), scored(0.8, 1)},
		{"names_and_args subset matcher", obj("mode", "names_and_args", "arguments", obj("mode", "subset")),
			caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1))}, []adapter.ToolCall{call("a", obj("x", 1, "y", 2))}), scored(1, 1)},
		{"names_and_args per-tool", obj("mode", "names_and_args", "tool_arguments", obj("a", obj("mode", "ignore"))),
			caseWith([]adapter.ExpectedCall{exp("a", obj("x", 1)), exp("b", obj("x", 1))},
				[]adapter.ToolCall{call("a", obj("x", 9)), call("b", obj("x", 9))}), scored(0.5, 1)},
	})
}

func TestContractToolCallAccuracy(t *testing.T) {
	runCallTests(t, "tool_call_accuracy", 0.7, []callTest{
		{"unordered", nil, caseWith(exps("a", "b"), calls("b", "a")), scored(1, 0.7)},
		{"require_order swapped", obj("require_order", true), caseWith(exps("a", "b"), calls("b", "a")), scored(0, 0.7)},
		{"require_order extra repeats not penalized", obj("require_order", true), caseWith(exps("a", "a"), calls("a", "a", "a")), scored(1, 0.7)},
		// penalize_unexpected, unordered: matched names / |{a, b} ∪ {a, c}|.
		{"penalize unordered", obj("penalize_unexpected", true), caseWith(exps("a", "b"), calls("a", "a", "c")), scored(1.0/3, 0.7)},
		{"penalize nothing unexpected", obj("penalize_unexpected", true), caseWith(exps("a", "b"), calls("b", "a", "a")), scored(1, 0.7)},
		// require_order with penalize_unexpected: positions matched / size of
		// the multiset union (3 / 4, not 3 / |{a, b}| = 1.5).
		{"ordered penalize repeated", obj("require_order", true, "penalize_unexpected", true), caseWith(exps("a", "a", "a"), calls("a", "a", "a", "b")), scored(0.75, 0.7)},
		{"ordered penalize extra repeat", obj("require_order", true, "penalize_unexpected", true), caseWith(exps("a", "a"), calls("a", "a", "a")), scored(2.0/3, 0.7)},
		{"ordered penalize exact", obj("require_order", true, "penalize_unexpected", true), caseWith(exps("a", "b"), calls("a", "b")), scored(1, 0.7)},
		{"ordered penalize shorter", obj("require_order", true, "penalize_unexpected", true), caseWith(exps("a", "b", "c"), calls("a", "b")), scored(2.0/3, 0.7)},
	})
}

// The argument matcher through a whole evaluator, with values as they come
// from span attributes (int64, float64, json.Number) and from YAML (int).
func TestContractArgumentMatcher(t *testing.T) {
	one := func(e map[string]any, a map[string]any) *adapter.Case {
		return caseWith([]adapter.ExpectedCall{exp("t", e)}, []adapter.ToolCall{call("t", a)})
	}
	m := func(kv ...any) map[string]any { return obj("arguments", obj(kv...)) }
	for _, tt := range []struct {
		name string
		opts map[string]any
		c    *adapter.Case
		want float64
	}{
		{"YAML int vs JSON float", nil, one(obj("n", 5), obj("n", 5.0)), 1},
		{"YAML int vs span int64", nil, one(obj("n", 5), obj("n", int64(5))), 1},
		{"float vs json.Number", nil, one(obj("n", 1.5), obj("n", jsonNumber("1.50"))), 1},
		{"uint vs float", nil, one(obj("n", uint(3)), obj("n", 3.0)), 1},
		{"numbers differ", nil, one(obj("n", 1), obj("n", 1.0000001)), 0},
		{"bool is not a number", nil, one(obj("b", true), obj("b", 1)), 0},
		{"strings exact", nil, one(obj("s", "Paris"), obj("s", "paris")), 0},
		{"strings trim", m("trim_strings", true), one(obj("s", " Paris"), obj("s", "Paris\n")), 1},
		{"strings trim not case", m("trim_strings", true), one(obj("s", "Paris"), obj("s", " paris")), 0},
		{"strings case", m("case_insensitive", true), one(obj("s", "Paris"), obj("s", "PARIS")), 1},
		{"nested maps and lists", nil, one(obj("f", obj("l", []any{1, obj("k", "v")})), obj("f", obj("l", []any{1.0, obj("k", "v")}))), 1},
		{"nested case-insensitive", m("case_insensitive", true), one(obj("f", []any{"A", obj("k", "V")}), obj("f", []any{"a", obj("k", "v")})), 1},
		{"list length", nil, one(obj("l", []any{1}), obj("l", []any{1, 2})), 0},
		{"exact missing key", nil, one(obj("a", 1, "b", 2), obj("a", 1)), 0},
		{"subset: expected ⊆ actual", m("mode", "subset"), one(obj("a", 1), obj("a", 1, "b", 2)), 1},
		{"subset: not the other way", m("mode", "subset"), one(obj("a", 1, "b", 2), obj("a", 1)), 0},
		{"superset: actual ⊆ expected", m("mode", "superset"), one(obj("a", 1, "b", 2), obj("a", 1)), 1},
		{"superset: not the other way", m("mode", "superset"), one(obj("a", 1), obj("a", 1, "b", 2)), 0},
		{"superset: values still compared", m("mode", "superset"), one(obj("a", 1, "b", 2), obj("a", 2)), 0},
		{"ignore", m("mode", "ignore"), one(obj("a", 1), obj("z", 9)), 1},
		// The mode handles the arguments' own keys; nested objects compare
		// recursively by the value rules, with the same keys.
		{"subset nested extra key", m("mode", "subset"), one(obj("f", obj("a", 1)), obj("f", obj("a", 1, "b", 2))), 0},
		{"superset nested missing key", m("mode", "superset"), one(obj("f", obj("a", 1, "b", 2)), obj("f", obj("a", 1))), 0},
		{"subset nested equal", m("mode", "subset"), one(obj("f", obj("a", 1.0, "l", []any{"x"})), obj("f", obj("a", 1, "l", []any{"x"}), "g", 2)), 1},
		{"fuzzy nested strings", m("mode", "fuzzy"), one(obj("f", []any{"Paris"}), obj("f", []any{"paris"})), 1},
		// difflib ratio("paris", "Paris") = 0.8: passes the default 0.8.
		{"fuzzy at the threshold", m("mode", "fuzzy"), one(obj("c", "Paris"), obj("c", "paris")), 1},
		{"fuzzy above the threshold", m("mode", "fuzzy", "fuzzy_threshold", 0.81), one(obj("c", "Paris"), obj("c", "paris")), 0},
		{"fuzzy threshold 1 is exact", m("mode", "fuzzy", "fuzzy_threshold", 1), one(obj("c", "Paris"), obj("c", "Paris")), 1},
		{"fuzzy case-insensitive", m("mode", "fuzzy", "fuzzy_threshold", 1, "case_insensitive", true), one(obj("c", "Paris"), obj("c", "PARIS")), 1},
		{"fuzzy far", m("mode", "fuzzy"), one(obj("q", "what is ML"), obj("q", "what is machine learning")), 0},
		{"fuzzy extra keys allowed", m("mode", "fuzzy"), one(obj("q", "weather in Paris"), obj("q", "weather in paris", "units", "C")), 1},
		{"fuzzy numbers exact", m("mode", "fuzzy"), one(obj("n", 10), obj("n", 11)), 0},
		{"tool_arguments override", obj("tool_arguments", obj("t", obj("mode", "subset"))), one(obj("a", 1), obj("a", 1, "b", 2)), 1},
		{"tool_arguments other tool", obj("tool_arguments", obj("u", obj("mode", "subset"))), one(obj("a", 1), obj("a", 1, "b", 2)), 0},
		{"tool_arguments inherit", obj("arguments", obj("case_insensitive", true), "tool_arguments", obj("t", obj("mode", "subset"))),
			one(obj("a", "X"), obj("a", "x", "b", 2)), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check(t, runEval(t, "tool_trajectory", tt.opts, nil, tt.c), scored(tt.want, 1))
		})
	}
}

func TestContractToolErrorAndEfficiency(t *testing.T) {
	res := func(r string) adapter.ToolCall { return adapter.ToolCall{Name: "t", Result: r, HasResult: true} }
	cs := func(c ...adapter.ToolCall) *adapter.Case { return &adapter.Case{ToolCalls: c} }
	runCaseTests(t, "tool_error", []caseTest{
		{"empty string is blank", nil, cs(res(""), res("ok")), scored(0.5, 1, "blank result")},
		{"not recorded is not blank", nil, cs(adapter.ToolCall{Name: "t"}, res("ok")), scored(1, 1)},
		{"not recorded, span ERROR", nil, cs(adapter.ToolCall{Name: "t", Errored: true}, res("ok")), scored(0.5, 1, "span status ERROR")},
		{"json error false counts", nil, cs(res(`{"error": false}`)), scored(0, 1)},
		{"json error in array ignored", nil, cs(res(`[{"error": "x"}]`)), scored(1, 1)},
		{"json error key spelled with escapes", nil, cs(res(`{"\u0065rror": "x"}`), res(`{"err\u006Fr": null}`)), scored(0.5, 1, "top-level")},
		{"json without an error key", nil, cs(res(`{"ok": true, "errors": ["x"], "message": "error"}`)), scored(1, 1)},
		{"pattern off by default", nil, cs(res("Exception")), scored(1, 1)},
		{"pattern anywhere", obj("error_pattern", "fail(ed|ure)"), cs(res("the call failed"), res("ok"), res("ok"), res("ok")), scored(0.75, 1)},
		{"every detector off", obj("treat_blank_as_error", false, "detect_json_error_field", false, "span_status", false),
			cs(res(""), res(`{"error": "x"}`), adapter.ToolCall{Name: "t", Errored: true, HasResult: true, Result: "ok"}), scored(1, 1)},
	})
	sf := func(args map[string]any) adapter.ToolCall { return call("search", args) }
	runCaseTests(t, "tool_efficiency", []caseTest{
		{"numbers by value", nil, cs(sf(obj("n", 1)), sf(obj("n", 1.0))), scored(0.5, 1)},
		{"different arguments", nil, cs(sf(obj("n", 1)), sf(obj("n", 2))), scored(1, 1)},
		{"same arguments, other tool", nil, cs(sf(obj("n", 1)), call("other", obj("n", 1))), scored(1, 1)},
		{"no arguments then arguments", obj("arguments", obj("mode", "subset")), cs(sf(nil), sf(obj("n", 1))), scored(1, 1)},
		{"subset repeat", obj("arguments", obj("mode", "subset")), cs(sf(obj("n", 1)), sf(obj("n", 1, "page", 2))), scored(0.5, 1)},
	})
}

func TestContractLimits(t *testing.T) {
	lat := func(d time.Duration) *adapter.Case { return &adapter.Case{Latency: d} }
	runCaseTests(t, "latency", []caseTest{
		// A bare number is seconds, given as a YAML int, float or digits.
		{"int seconds within", obj("max", 2), lat(1500 * time.Millisecond), scored(1, 1)},
		{"int seconds at limit", obj("max", 2), lat(2 * time.Second), scored(1, 1)},
		{"int seconds over", obj("max", 2), lat(2001 * time.Millisecond), scored(0, 1)},
		{"float seconds", obj("max", 1.5), lat(1600 * time.Millisecond), scored(0, 1)},
		{"digit string seconds", obj("max", "3"), lat(2500 * time.Millisecond), scored(1, 1)},
		{"milliseconds", obj("max", "1500ms"), lat(1500 * time.Millisecond), scored(1, 1)},
		{"milliseconds over", obj("max", "1500ms"), lat(1501 * time.Millisecond), scored(0, 1)},
		{"minutes", obj("max", "1m30s"), lat(80 * time.Second), scored(1, 1)},
	})
	use := func(u adapter.Usage) *adapter.Case { return &adapter.Case{Usage: u} }
	io := adapter.Usage{InputTokens: 60, HasInputTokens: true, OutputTokens: 40, HasOutputTokens: true}
	runCaseTests(t, "token_usage", []caseTest{
		{"max is the total, at limit", obj("max", 100), use(io), scored(1, 1)},
		{"max is the total, over", obj("max", 99), use(io), scored(0, 1, "total tokens 100 > 99")},
		{"max_input at limit", obj("max_input", 60), use(io), scored(1, 1)},
		{"max_output over", obj("max_output", 39), use(io), scored(0, 1)},
		{"max_total", obj("max_total", 100), use(io), scored(1, 1)},
		{"explicit total wins", obj("max_total", 100), use(adapter.Usage{InputTokens: 10, HasInputTokens: true, TotalTokens: 150, HasTotalTokens: true}), scored(0, 1)},
	})
	for _, bad := range []map[string]any{obj("max", 0), obj("max", "-1s"), obj("max", "soon"), obj("max", []any{1})} {
		if err := (&Config{Type: "latency", Options: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "`max`") {
			t.Errorf("latency %v: error %v", bad, err)
		}
	}
	if err := (&Config{Type: "token_usage", Options: obj("max", 10, "max_total", 20)}).Validate(); err == nil {
		t.Error("token_usage max and max_total disagreeing: no error")
	}
	if err := (&Config{Type: "token_usage", Options: obj("max", 10, "max_total", 10)}).Validate(); err != nil {
		t.Errorf("token_usage max = max_total: %v", err)
	}
}

func TestContractOutputOptionSpellings(t *testing.T) {
	out := func(output string, expected any) *adapter.Case {
		c := &adapter.Case{Output: output}
		c.Expected.Output, c.Expected.HasOutput = expected, true
		return c
	}
	exp := `{"a": 1, "l": [1, 2], "n": null}`
	got := `{"a": 1, "l": [2, 1], "x": 5}`
	// strict: a ok, l[0] l[1] differ, n null vs missing, x extra: 1/5.
	// lenient: a ok, l as multiset 2/2, n null = missing: 4/4.
	runCaseTests(t, "structural_match", []caseTest{
		{"default strict", nil, out(got, exp), scored(1.0/5, 1)},
		{"mode strict", obj("mode", "strict"), out(got, exp), scored(1.0/5, 1)},
		{"strict: true", obj("strict", true), out(got, exp), scored(1.0/5, 1)},
		{"mode lenient", obj("mode", "lenient"), out(got, exp), scored(1, 1)},
		{"lenient: true", obj("lenient", true), out(got, exp), scored(1, 1)},
		{"strict: false", obj("strict", false), out(got, exp), scored(1, 1)},
		{"binary strict", obj("binary", true), out(got, exp), scored(0, 1)},
		{"binary lenient", obj("binary", true, "lenient", true), out(got, exp), scored(1, 1)},
	})
	for _, bad := range []map[string]any{obj("strict", true, "lenient", true), obj("mode", "lenient", "strict", true), obj("mode", "loose")} {
		if err := (&Config{Type: "structural_match", Options: bad}).Validate(); err == nil {
			t.Errorf("structural_match %v: no error", bad)
		}
	}
}

func TestContractRetrievalMatch(t *testing.T) {
	docs := []adapter.Document{{ID: "doc_1", Content: "Insulin regulates glucose."}, {ID: "doc_2", Content: "Paris is in France."}, {ID: "doc_3", Content: "Type 2 diabetes"}}
	idOnly := []adapter.Document{{ID: "doc_1"}, {ID: "doc_2"}, {ID: "doc_3"}}
	rc := func(expected []any, d []adapter.Document) *adapter.Case {
		c := &adapter.Case{Documents: d}
		c.Expected.Documents, c.Expected.HasDocuments = expected, true
		return c
	}
	ids := []any{"doc_1", "doc_3", "doc_5"}
	for _, typ := range []string{"retrieval_precision", "retrieval_recall"} {
		want := func(p, r float64) want {
			if typ == "retrieval_precision" {
				return scored(p, 0.5)
			}
			return scored(r, 0.5)
		}
		runCaseTests(t, typ, []caseTest{
			{"match {field: id}", obj("match", obj("field", "id")), rc(ids, docs), want(2.0/3, 2.0/3)},
			{"match 'field: id'", obj("match", "field: id"), rc(ids, docs), want(2.0/3, 2.0/3)},
			{"field: id", obj("field", "id"), rc(ids, docs), want(2.0/3, 2.0/3)},
			{"field: id with objects", obj("match", obj("field", "id")), rc([]any{map[string]any{"id": "doc_2", "content": "other"}}, docs), want(1.0/3, 1)},
			{"field: id, content ignored", obj("field", "id"), rc([]any{"Paris is in France."}, docs), want(0, 0)},
			// Ids are recognised without `field` ("relevant documents / ids").
			{"default matches ids", nil, rc(ids, docs), want(2.0/3, 2.0/3)},
			{"default, documents with ids only", nil, rc(ids, idOnly), want(2.0/3, 2.0/3)},
			{"default matches content", nil, rc([]any{"Paris is in France."}, docs), want(1.0/3, 1)},
			{"equality", obj("match", "equality"), rc([]any{"paris is in france."}, docs), want(0, 0)},
			{"case_insensitive", obj("match", "case_insensitive"), rc([]any{"paris is in france."}, docs), want(1.0/3, 1)},
			{"case_insensitive ids", obj("match", "case_insensitive"), rc([]any{"DOC_1"}, docs), want(1.0/3, 1)},
			{"containment", obj("match", "containment"), rc([]any{"glucose", "diabetes"}, docs), want(2.0/3, 1)},
			// Dokimos' byContainment: either contains the other.
			{"containment both ways", obj("match", "containment"), rc([]any{"Type 2 diabetes mellitus", "Mars"}, docs), want(1.0/3, 0.5)},
			{"field: content", obj("field", "content"), rc(ids, docs), want(0, 0)},
		})
	}
	for _, bad := range []map[string]any{obj("match", "fuzzy"), obj("match", obj("field", "title")), obj("match", obj("by", "id")),
		obj("match", obj("field", "id"), "field", "content"), obj("field", "title")} {
		if err := (&Config{Type: "retrieval_recall", Options: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "`") {
			t.Errorf("retrieval %v: error %v", bad, err)
		}
	}
}

// docs/contract.md §5: `name` defaults to the type, matches [a-z0-9_]+ and is unique;
// the threshold defaults per type.
func TestContractNamesAndThresholds(t *testing.T) {
	cfgs := []Config{{Type: "tool_call_accuracy"}, {Type: "retrieval_recall", Name: "recall_2"}}
	insts, err := Build(cfgs, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if insts[0].Name != "tool_call_accuracy" || insts[0].Threshold != 0.7 || insts[1].Name != "recall_2" || insts[1].Threshold != 0.5 {
		t.Fatalf("defaults: %+v %+v", insts[0], insts[1])
	}
	for _, name := range []string{"Booking", "booking-flow", "booking flow", "é"} {
		if err := (&Config{Type: "tool_error", Name: name}).Validate(); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if err := ValidateAll([]Config{{Type: "tool_error"}, {Type: "tool_error"}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate default names: %v", err)
	}
	if err := (&Config{Type: "tool_error", Case: "trace"}).Validate(); err == nil {
		t.Error("case: trace accepted")
	}
}

// docs/contract.md §3: expectations from the case's span, else the evaluator's own
// config — for outputs and documents too.
func TestContractExpectationsFromConfig(t *testing.T) {
	runCaseTests(t, "exact_match", []caseTest{
		{"option", obj("expected", "Paris"), out("Paris", nil), scored(1, 1)},
		{"option differs", obj("expected", "Paris"), out("Lyon", nil), scored(0, 1)},
		{"expected_output", obj("expected_output", "Paris"), out("Paris", nil), scored(1, 1)},
		{"span wins", obj("expected", "Lyon"), out("Paris", "Paris"), scored(1, 1)},
		{"JSON string", obj("expected", `{"a": 1}`), out(`{"a": 1.0}`, nil), scored(1, 1)},
		{"YAML value", obj("expected", obj("a", 1)), out(`{"a": 1}`, nil), scored(1, 1)},
		{"neither", nil, out("Paris", nil), skipped("no expected output")},
	})
	runCaseTests(t, "structural_match", []caseTest{
		{"option", obj("expected", obj("a", 1, "b", 2)), out(`{"a": 1, "b": 3}`, nil), scored(0.5, 1)},
		{"JSON string", obj("expected", `{"a": 1, "b": 2}`), out(`{"a": 1, "b": 2}`, nil), scored(1, 1)},
		{"span wins", obj("expected", obj("a", 2)), out(`{"a": 1}`, `{"a": 1}`), scored(1, 1)},
	})
	docs := []adapter.Document{{ID: "doc_1"}, {ID: "doc_2"}}
	rc := func(expected []any) *adapter.Case {
		c := &adapter.Case{Documents: docs}
		if expected != nil {
			c.Expected.Documents, c.Expected.HasDocuments = expected, true
		}
		return c
	}
	runCaseTests(t, "retrieval_recall", []caseTest{
		{"option", obj("expected", []any{"doc_1", "doc_3"}), rc(nil), scored(0.5, 0.5)},
		{"expected_documents", obj("expected_documents", `["doc_2"]`), rc(nil), scored(1, 0.5)},
		{"span wins", obj("expected", []any{"doc_3"}), rc([]any{"doc_1"}), scored(1, 0.5)},
		{"neither", nil, rc(nil), skipped("no expected documents")},
	})
	for _, bad := range []Config{
		{Type: "exact_match", Options: obj("expected", "a", "expected_output", "b")},
		{Type: "retrieval_precision", Options: obj("expected", "not json")},
		{Type: "retrieval_precision", Options: obj("expected", 5)},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s %v: no error", bad.Type, bad.Options)
		}
	}
}

func TestContractToolCallValidity(t *testing.T) {
	schema := obj("type", "object", "properties", obj("city", obj("type", "string", "enum", []any{"Lisbon", "Porto"}), "nights", obj("type", "integer")),
		"required", []any{"city"})
	good := call("book", obj("city", "Lisbon", "nights", 5.0))
	extra := call("book", obj("city", "Lisbon", "pets", true))
	cs := func(c ...adapter.ToolCall) *adapter.Case { return &adapter.Case{ToolCalls: c} }
	tools := []any{map[string]any{"name": "book", "parameters": schema}}
	runCaseTests(t, "tool_call_validity", []caseTest{
		{"no calls, no definitions", nil, cs(), scored(1, 1)},
		{"no calls, tools option", obj("tools", tools), cs(), scored(1, 1)},
		{"calls, no definitions", nil, cs(good), skipped("no tool definitions")},
		{"tools option", obj("tools", tools), cs(good, call("book", obj("nights", 2))), scored(0.5, 1, "city")},
		{"unknown tool", obj("tools", tools), cs(good, call("cancel", nil)), scored(0.5, 1, "unknown tool")},
		{"wrong type", obj("tools", tools), cs(call("book", obj("city", "Lisbon", "nights", "five"))), scored(0, 1, "/nights")},
		{"integer given as 5.0", obj("tools", tools), cs(good), scored(1, 1)},
		{"enum", obj("tools", tools), cs(call("book", obj("city", "Paris"))), scored(0, 1, "/city")},
		{"extra allowed", obj("tools", tools), cs(extra), scored(1, 1)},
		{"extra strict", obj("tools", tools, "strict", true), cs(extra, good), scored(0.5, 1, "pets")},
		{"JSON string", obj("tools", `[{"name": "book", "parameters": {"type": "object", "required": ["city"]}}]`), cs(good, call("book", nil)), scored(0.5, 1)},
		{"OpenAI wrapper", obj("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "book", "parameters": schema}}}), cs(extra, call("book", nil)), scored(0.5, 1)},
		{"input_schema", obj("tools", []any{map[string]any{"name": "book", "input_schema": schema}}), cs(call("book", nil)), scored(0, 1)},
		{"schema as JSON text", obj("tools", []any{map[string]any{"name": "book", "parameters": `{"type": "object", "additionalProperties": false, "properties": {"city": {"type": "string"}}}`}}),
			cs(extra), scored(0, 1)},
	})
	for _, bad := range []map[string]any{obj("tools", "nope"), obj("tools", 5), obj("tools", []any{"book"}), obj("tools", []any{map[string]any{"name": "b", "parameters": "{"}})} {
		if err := (&Config{Type: "tool_call_validity", Options: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "`tools") {
			t.Errorf("tools %v: error %v", bad, err)
		}
	}
}

// Rule checks at their limits: 7 segments, 5 arguments, 3 optional pass.
func TestContractReliabilityLimits(t *testing.T) {
	props := func(n int) map[string]any {
		p := map[string]any{}
		for i := 0; i < n; i++ {
			p[fmt.Sprintf("p%d", i)] = obj("type", "string", "description", "d")
		}
		return p
	}
	schema := func(n int, required ...any) map[string]any {
		return obj("type", "object", "properties", props(n), "required", required)
	}
	def := func(name string, params map[string]any) *adapter.Case {
		return &adapter.Case{ToolDefinitions: []adapter.ToolDefinition{{Name: name, Parameters: params}}}
	}
	runCaseTests(t, "tool_name_reliability", []caseTest{
		{"7 segments", nil, def("a_b_c_d_e_f_g", nil), scored(1, 0.8)},
		{"digits", nil, def("get_v2_items", nil), scored(1, 0.8)},
		{"leading underscore", nil, def("_get_items", nil), scored(2.0/3, 0.8, "not snake_case")},
		{"double underscore", nil, def("get__items", nil), scored(2.0/3, 0.8, "not snake_case")},
		{"via_api and 8 segments and Caps", nil, def("A_b_c_d_e_f_g_via_api", nil), scored(0, 0.8)},
	})
	runCaseTests(t, "tool_description_reliability", []caseTest{
		{"5 arguments, 3 optional", nil, def("x", schema(5, "p0", "p1")), scored(1, 0.8)},
		{"6 arguments, 4 optional", nil, def("x", schema(6, "p0", "p1")), scored(0.5, 0.8)},
		{"4 optional", nil, def("x", schema(4)), scored(0.75, 0.8, "4 optional arguments (at most 3)")},
		{"max_optional_args 0", obj("max_optional_args", 0), def("x", schema(1)), scored(0.75, 0.8)},
	})
}
