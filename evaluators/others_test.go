package evaluators

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

type caseTest struct {
	name string
	opts map[string]any
	c    *adapter.Case
	want want
}

// out is a case with an output and, unless expected is nil, an expected
// output.
func out(output string, expected any) *adapter.Case {
	c := &adapter.Case{Output: output}
	if expected != nil {
		c.Expected.Output, c.Expected.HasOutput = expected, true
	}
	return c
}

func runCaseTests(t *testing.T, typ string, tests []caseTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, runEval(t, typ, tt.opts, nil, tt.c), tt.want)
		})
	}
}

var flightSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"origin":      map[string]any{"type": "string", "description": "IATA code"},
		"destination": map[string]any{"type": "string", "description": "IATA code"},
		"cabin":       map[string]any{"type": "string", "enum": []any{"economy", "business"}, "description": "cabin"},
		"passengers":  map[string]any{"type": "integer", "description": "count"},
	},
	"required": []any{"origin", "destination"},
}

var closedSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"q": map[string]any{"type": "string"}},
	"additionalProperties": false,
}

func withDefs(made []adapter.ToolCall, defs ...adapter.ToolDefinition) *adapter.Case {
	return &adapter.Case{Level: adapter.LevelAgent, ToolCalls: made, ToolDefinitions: defs}
}

func TestToolCallValidity(t *testing.T) {
	flights := adapter.ToolDefinition{Name: "search_flights", Parameters: flightSchema}
	closed := adapter.ToolDefinition{Name: "search", Parameters: closedSchema}
	ok := call("search_flights", obj("origin", "CDG", "destination", "JFK", "passengers", 2.0))
	bad := adapter.ToolCall{Name: "search_flights", RawArguments: "{not json"}
	runCaseTests(t, "tool_call_validity", []caseTest{
		{"no calls", nil, withDefs(nil), scored(1, 1)},
		{"no definitions anywhere", nil, withDefs([]adapter.ToolCall{ok}), skipped("no tool definitions")},
		{"valid", nil, withDefs([]adapter.ToolCall{ok}, flights), scored(1, 1)},
		{"unknown tool", nil, withDefs([]adapter.ToolCall{ok, call("book_car", nil)}, flights), scored(0.5, 1, "call #2 book_car: unknown tool")},
		{"missing required", nil, withDefs([]adapter.ToolCall{call("search_flights", obj("origin", "CDG"))}, flights), scored(0, 1, "destination")},
		{"wrong type", nil, withDefs([]adapter.ToolCall{call("search_flights", obj("origin", "CDG", "destination", "JFK", "passengers", "two"))}, flights), scored(0, 1, "/passengers")},
		{"enum", nil, withDefs([]adapter.ToolCall{call("search_flights", obj("origin", "CDG", "destination", "JFK", "cabin", "first"))}, flights), scored(0, 1, "/cabin")},
		{"extra allowed", nil, withDefs([]adapter.ToolCall{call("search_flights", obj("origin", "CDG", "destination", "JFK", "x", 1))}, flights), scored(1, 1)},
		{"extra strict", obj("strict", true), withDefs([]adapter.ToolCall{call("search_flights", obj("origin", "CDG", "destination", "JFK", "x", 1))}, flights), scored(0, 1, "x")},
		{"additionalProperties false", nil, withDefs([]adapter.ToolCall{call("search", obj("q", "a", "x", 1))}, closed), scored(0, 1)},
		{"unparseable arguments", nil, withDefs([]adapter.ToolCall{bad, ok}, flights), scored(0.5, 1, "not a JSON object")},
		{"tools option", obj("tools", []any{map[string]any{"name": "search_flights", "parameters": flightSchema}}),
			withDefs([]adapter.ToolCall{ok, call("search_flights", obj("origin", "CDG"))}), scored(0.5, 1)},
		{"spans win over option", obj("tools", []any{map[string]any{"name": "other"}}), withDefs([]adapter.ToolCall{ok}, flights), scored(1, 1)},
		{"no schema any args", nil, withDefs([]adapter.ToolCall{call("free", obj("a", 1))}, adapter.ToolDefinition{Name: "free"}), scored(1, 1)},
	})
}

func TestSchemaCacheConcurrentAndBounded(t *testing.T) {
	sc := &schemaCache{max: 2, m: map[string]*compiledSchema{}}
	a := sc.get(flightSchema, "", false)
	if a.err != nil || sc.get(flightSchema, "", false) != a {
		t.Fatalf("schema not cached: %v", a.err)
	}
	if sc.get(flightSchema, "", true) == a {
		t.Fatal("strict must be a separate entry")
	}
	sc.get(closedSchema, "", false)
	if len(sc.m) != 2 || len(sc.order) != 2 {
		t.Fatalf("cache not bounded: %d", len(sc.m))
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for j := 0; j < 50; j++ {
				if cs := toolSchemas.get(flightSchema, "", j%2 == 0); cs.err != nil || cs.schema == nil {
					t.Error("compile failed")
				}
			}
		})
	}
	wg.Wait()
}

func TestToolError(t *testing.T) {
	res := func(r string) adapter.ToolCall { return adapter.ToolCall{Name: "t", Result: r, HasResult: true} }
	spanErr := adapter.ToolCall{Name: "pay", Errored: true, ErrorMessage: "timeout", HasResult: true, Result: "ok"}
	noResult := adapter.ToolCall{Name: "t"}
	cs := func(c ...adapter.ToolCall) *adapter.Case { return &adapter.Case{ToolCalls: c} }
	runCaseTests(t, "tool_error", []caseTest{
		{"no calls", nil, cs(), scored(1, 1)},
		{"all fine", nil, cs(res("ok"), res(`{"error": null, "v": 1}`)), scored(1, 1)},
		{"blank", nil, cs(res("ok"), res("  ")), scored(0.5, 1, "call #2 t: blank result")},
		{"blank allowed", obj("treat_blank_as_error", false), cs(res("ok"), res("")), scored(1, 1)},
		{"not recorded is not blank", nil, cs(noResult), scored(1, 1)},
		{"json error", nil, cs(res(`{"error": "sold out"}`), res("ok"), res("ok"), res("ok")), scored(0.75, 1, "sold out")},
		{"json error off", obj("detect_json_error_field", false), cs(res(`{"error": "x"}`)), scored(1, 1)},
		{"nested error ignored", nil, cs(res(`{"data": {"error": "x"}}`)), scored(1, 1)},
		{"pattern", obj("error_pattern", "(?i)exception"), cs(res("NullPointerException at ..."), res("fine")), scored(0.5, 1, "error_pattern")},
		{"span status", nil, cs(spanErr, res("ok")), scored(0.5, 1, "span status ERROR: timeout")},
		{"span status off", obj("span_status", false), cs(spanErr), scored(1, 1)},
	})
}

func TestToolEfficiency(t *testing.T) {
	sf := func(to string) adapter.ToolCall { return call("search_flights", obj("to", to)) }
	cs := func(c ...adapter.ToolCall) *adapter.Case { return &adapter.Case{ToolCalls: c} }
	runCaseTests(t, "tool_efficiency", []caseTest{
		{"no calls", nil, cs(), scored(1, 1)},
		{"distinct", nil, cs(sf("PAR"), sf("NYC"), call("book", nil)), scored(1, 1)},
		{"loop", nil, cs(sf("PAR"), sf("PAR"), sf("PAR"), call("book", nil)), scored(0.5, 1, "search_flights called 3 times in a row with the same arguments")},
		{"non-consecutive repeat", nil, cs(sf("PAR"), call("book", nil), sf("PAR")), scored(2.0/3, 1, "repeated: search_flights ×1")},
		{"case-insensitive args", obj("arguments", obj("case_insensitive", true)), cs(sf("PAR"), sf("par")), scored(0.5, 1)},
		{"ignore args", obj("arguments", obj("mode", "ignore")), cs(sf("PAR"), sf("NYC")), scored(0.5, 1)},
	})
}

func TestReliability(t *testing.T) {
	def := func(name string, params map[string]any) adapter.ToolDefinition {
		return adapter.ToolDefinition{Name: name, Parameters: params}
	}
	good := def("get_booking", flightSchema)
	cs := func(d ...adapter.ToolDefinition) *adapter.Case { return &adapter.Case{ToolDefinitions: d} }
	runCaseTests(t, "tool_name_reliability", []caseTest{
		{"no definitions", nil, cs(), skipped("no tool definitions")},
		{"good", nil, cs(good), scored(1, 0.8)},
		{"camelCase", nil, cs(def("getBooking", nil)), scored(2.0/3, 0.8, "not snake_case")},
		{"too long", nil, cs(def("a_b_c_d_e_f_g_h", nil)), scored(2.0/3, 0.8, "8 segments")},
		{"implementation", nil, cs(def("summarize_with_llm", nil)), scored(2.0/3, 0.8, "_with_llm")},
		{"mean over tools", nil, cs(good, def("Fetch-Data_via_api", nil)), scored((1+1.0/3)/2, 0.8)},
	})
	many := map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "string", "description": "x"}, "b": map[string]any{"type": "string", "description": "x"},
		"c": map[string]any{"type": "string", "description": "x"}, "d": map[string]any{"type": "string", "description": "x"},
		"e": map[string]any{"type": "string", "description": "x"}, "f": map[string]any{"type": "string", "description": "x"},
	}, "required": []any{"a", "b"}}
	bare := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{}}, "required": []any{"q"}}
	runCaseTests(t, "tool_description_reliability", []caseTest{
		{"no definitions", nil, cs(), skipped("no tool definitions")},
		{"good", nil, cs(good), scored(1, 0.8)},
		{"no params", nil, cs(def("ping", nil)), scored(1, 0.8)},
		{"too many and optional", nil, cs(def("x", many)), scored(0.5, 0.8, "6 arguments (at most 5)")},
		{"raised limits", obj("max_input_args", 6, "max_optional_args", 4), cs(def("x", many)), scored(1, 0.8)},
		{"undescribed untyped", nil, cs(def("x", bare)), scored(0.5, 0.8, "without description: q")},
	})
	// With a judge configured the rule checks still run, and the reason says so.
	cfg := Config{Type: "tool_name_reliability", Judge: "default"}
	insts, err := Build([]Config{cfg}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	r := insts[0].Evaluate(context.Background(), cs(good))
	if !strings.Contains(r.Reason, "rule checks only") || r.Score != 1 {
		t.Fatalf("judge note missing: %+v", r)
	}
}

func TestOutputEvaluators(t *testing.T) {
	runCaseTests(t, "exact_match", []caseTest{
		{"no output", nil, out("", "x"), skipped("no output")},
		{"no expected", nil, out("x", nil), skipped("no expected output")},
		{"equal", nil, out("Paris", "Paris"), scored(1, 1)},
		{"differs", nil, out("Paris ", "Paris"), scored(0, 1, "lengths 6 and 5")},
		{"trim", obj("trim", true), out("Paris\n", " Paris"), scored(1, 1)},
		{"case", obj("case_insensitive", true), out("PARIS", "paris"), scored(1, 1)},
		{"json expected", nil, out(`{"a": 1.0}`, map[string]any{"a": 1}), scored(1, 1)},
	})
	runCaseTests(t, "regex", []caseTest{
		{"no output", obj("pattern", "x"), out("", nil), skipped("no output")},
		{"search", obj("pattern", `\d{3}`), out("code 123 ok", nil), scored(1, 1)},
		{"no match", obj("pattern", `^\d+$`), out("abc", nil), scored(0, 1, "does not match")},
		{"full match", obj("pattern", `\d+`, "full_match", true), out("a123", nil), scored(0, 1)},
		{"case", obj("pattern", "paris", "case_insensitive", true), out("PARIS", nil), scored(1, 1)},
	})
	expJSON := `{"name": "Ada", "age": 36, "tags": ["a", "b"], "addr": {"city": "London", "zip": null}}`
	runCaseTests(t, "structural_match", []caseTest{
		{"no output", nil, out("", expJSON), skipped("no output")},
		{"no expected", nil, out("{}", nil), skipped("no expected")},
		{"equal", nil, out(`{"age": 36.0, "name": "Ada", "tags": ["a","b"], "addr": {"zip": null, "city": "London"}}`, expJSON), scored(1, 1)},
		// 6 leaves; age differs -> 5/6
		{"one leaf differs", nil, out(`{"name": "Ada", "age": 37, "tags": ["a","b"], "addr": {"city": "London", "zip": null}}`, expJSON), scored(5.0/6, 1, "$.age: expected 36 but was 37")},
		// strict: extra field adds to denominator -> 6/7
		{"strict extra", nil, out(`{"name": "Ada", "age": 36, "tags": ["a","b"], "addr": {"city": "London", "zip": null}, "x": 1}`, expJSON), scored(6.0/7, 1)},
		{"lenient extra", obj("mode", "lenient"), out(`{"name": "Ada", "age": 36, "tags": ["b","a"], "addr": {"city": "London"}, "x": 1}`, expJSON), scored(1, 1)},
		{"strict order", nil, out(`{"name": "Ada", "age": 36, "tags": ["b","a"], "addr": {"city": "London", "zip": null}}`, expJSON), scored(4.0/6, 1)},
		{"strict null vs missing", nil, out(`{"name": "Ada", "age": 36, "tags": ["a","b"], "addr": {"city": "London"}}`, expJSON), scored(5.0/6, 1, "$.addr.zip: expected null but was <missing>")},
		{"binary", obj("binary", true), out(`{"name": "Ada", "age": 37, "tags": ["a","b"], "addr": {"city": "London", "zip": null}}`, expJSON), scored(0, 1)},
		{"not json", nil, out("hello", expJSON), scored(0, 1, "not valid JSON")},
		{"code fence", nil, out("```json\n{\"a\": 1}\n```", `{"a": 1}`), scored(1, 1)},
		{"decoded expected", nil, out(`{"a": [1, 2]}`, map[string]any{"a": []any{1.0, 3.0}}), scored(0.5, 1)},
	})
	r := runEval(t, "structural_match", nil, nil, out("{}", "not json"))
	if r.Status != StatusError {
		t.Fatalf("bad expected: %+v", r)
	}
}

func TestRetrieval(t *testing.T) {
	docs := []adapter.Document{{ID: "doc_1", Content: "Insulin regulates glucose."}, {ID: "doc_2", Content: "Paris is in France."}, {ID: "doc_3", Content: "Type 2 diabetes"}}
	rc := func(expected []any, d []adapter.Document) *adapter.Case {
		c := &adapter.Case{Documents: d}
		if expected != nil {
			c.Expected.Documents, c.Expected.HasDocuments = expected, true
		}
		return c
	}
	ids := []any{"doc_1", "doc_3", "doc_5"}
	runCaseTests(t, "retrieval_precision", []caseTest{
		{"no expected", nil, rc(nil, docs), skipped("no expected documents")},
		{"empty expected", nil, rc([]any{}, docs), skipped("empty")},
		{"nothing retrieved", nil, rc(ids, nil), skipped("precision is undefined")},
		// Dokimos example: retrieved doc_1..3, relevant doc_1, doc_3, doc_5 -> 2/3
		{"by id", obj("field", "id"), rc(ids, docs), scored(2.0/3, 0.5, "#2 doc_2")},
		{"by id objects", obj("field", "id"), rc([]any{map[string]any{"id": "doc_2"}}, docs), scored(1.0/3, 0.5)},
		{"content equality", nil, rc([]any{"Paris is in France."}, docs), scored(1.0/3, 0.5)},
		{"content case", obj("match", "case_insensitive"), rc([]any{"paris is in france."}, docs), scored(1.0/3, 0.5)},
		{"containment", obj("match", "containment"), rc([]any{"glucose", "diabetes"}, docs), scored(2.0/3, 0.5)},
	})
	runCaseTests(t, "retrieval_recall", []caseTest{
		{"no expected", nil, rc(nil, docs), skipped("no expected documents")},
		{"nothing retrieved", nil, rc(ids, nil), scored(0, 0.5)},
		{"by id", obj("field", "id"), rc(ids, docs), scored(2.0/3, 0.5, "not retrieved: doc_5")},
		{"containment", obj("match", "containment"), rc([]any{"glucose", "Mars"}, docs), scored(0.5, 0.5)},
	})
}

func TestLimits(t *testing.T) {
	lat := func(d time.Duration) *adapter.Case { return &adapter.Case{Latency: d} }
	runCaseTests(t, "latency", []caseTest{
		{"unknown", obj("max", "2s"), lat(0), skipped("unknown")},
		{"within", obj("max", "2s"), lat(1500 * time.Millisecond), scored(1, 1)},
		{"at limit", obj("max", "2s"), lat(2 * time.Second), scored(1, 1)},
		{"over", obj("max", "2s"), lat(2001 * time.Millisecond), scored(0, 1, "exceeds")},
		{"bad timestamps", obj("max", "2s"), &adapter.Case{LatencyInvalid: "the span ends 1s before it starts"}, errored("ends 1s before it starts")},
	})
	use := func(u adapter.Usage) *adapter.Case { return &adapter.Case{Usage: u} }
	runCaseTests(t, "token_usage", []caseTest{
		{"unknown", obj("max_total", 100), use(adapter.Usage{}), skipped("unknown")},
		{"total from parts", obj("max_total", 100), use(adapter.Usage{InputTokens: 60, HasInputTokens: true, OutputTokens: 50, HasOutputTokens: true}), scored(0, 1, "total tokens 110 > 100")},
		{"within", obj("max_input", 100, "max_output", 100), use(adapter.Usage{InputTokens: 60, HasInputTokens: true, OutputTokens: 50, HasOutputTokens: true}), scored(1, 1)},
		{"output over", obj("max_input", 100, "max_output", 10), use(adapter.Usage{InputTokens: 60, HasInputTokens: true, OutputTokens: 50, HasOutputTokens: true}), scored(0, 1, "output tokens 50 > 10")},
		{"partly unknown", obj("max_input", 100, "max_output", 10), use(adapter.Usage{InputTokens: 60, HasInputTokens: true}), scored(1, 1, "not checked")},
		// Bad counts are an error, never a pass (int64 max + 1 once wrapped to a negative total "within" the limit).
		{"invalid counts", obj("max_total", 100), use(adapter.Usage{HasInputTokens: true, Invalid: "gen_ai.usage.input_tokens: -5 is negative"}), errored("-5 is negative")},
		{"sum overflows", obj("max_total", 100), use(adapter.Usage{InputTokens: math.MaxInt64, HasInputTokens: true, OutputTokens: 1, HasOutputTokens: true}), errored("overflow")},
	})
}

func TestSequenceRatio(t *testing.T) {
	// Values from Python's difflib.SequenceMatcher(None, a, b).ratio().
	for _, tt := range []struct {
		a, b string
		want float64
	}{
		{"", "", 1},
		{"abcd", "bcde", 0.75},
		{"what is machine learning", "what is ML", 0.47058823529411764},
		{"Paris", "paris", 0.8},
		{"kitten", "sitting", 2.0 * 4 / 13},
		{strings.Repeat("a", 250) + "b", strings.Repeat("a", 250) + "c", 0.9960159362549801},
		{strings.Repeat("x", 150) + strings.Repeat("abc", 30), strings.Repeat("abc", 40) + strings.Repeat("x", 120), 0}, // autojunk: every element of b is popular
		{"weather in paris", "weather in Paris", 0.9375},
	} {
		if got := sequenceRatio(tt.a, tt.b); got-tt.want > 1e-9 || tt.want-got > 1e-9 {
			t.Errorf("ratio(%q, %q) = %v, want %v", truncate(tt.a, 20), truncate(tt.b, 20), got, tt.want)
		}
	}
}

func TestArgumentMatcher(t *testing.T) {
	mk := func(o argumentOptions) *argMatcher {
		m, err := newArgMatcher(&o, nil, "arguments")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	exact, subset, superset := mk(argumentOptions{}), mk(argumentOptions{Mode: s("subset")}), mk(argumentOptions{Mode: s("superset")})
	fuzzy := mk(argumentOptions{Mode: s("fuzzy")})
	for _, tt := range []struct {
		name     string
		m        *argMatcher
		exp, act map[string]any
		want     bool
	}{
		{"numbers by value", exact, obj("n", 1), obj("n", 1.0), true},
		{"int64 vs json.Number", exact, obj("n", int64(7)), obj("n", jsonNumber("7.0")), true},
		{"string vs number", exact, obj("n", "1"), obj("n", 1), false},
		{"nested exact", exact, obj("f", obj("a", []any{1, "x"})), obj("f", obj("a", []any{1.0, "x"})), true},
		{"list order", exact, obj("l", []any{1, 2}), obj("l", []any{2, 1}), false},
		{"exact extra", exact, obj("a", 1), obj("a", 1, "b", 2), false},
		{"subset extra ok", subset, obj("a", 1), obj("a", 1, "b", 2), true},
		{"subset missing", subset, obj("a", 1, "b", 2), obj("a", 1), false},
		// The mode is for the arguments' own keys; nested objects compare
		// with the same key sets (Dokimos' TolerantArgumentMatcher).
		{"subset nested keys exact", subset, obj("f", obj("city", "Paris")), obj("f", obj("city", "Paris", "max", 3)), false},
		{"subset nested values", subset, obj("f", obj("city", "Paris")), obj("f", obj("city", "Paris"), "max", 3), true},
		{"superset missing ok", superset, obj("a", 1, "b", 2), obj("a", 1), true},
		{"superset extra", superset, obj("a", 1), obj("a", 1, "b", 2), false},
		{"nil vs empty", exact, nil, map[string]any{}, true},
		{"null values", exact, obj("a", nil), obj("a", nil), true},
		{"fuzzy close", fuzzy, obj("q", "weather in Paris"), obj("q", "weather in paris"), true},
		{"fuzzy far", fuzzy, obj("q", "what is ML"), obj("q", "what is machine learning"), false},
		{"fuzzy numbers exact", fuzzy, obj("n", 10), obj("n", 11), false},
		{"trim+case", mk(argumentOptions{TrimStrings: b(true), CaseInsensitive: b(true)}), obj("q", "Paris"), obj("q", " PARIS "), true},
		{"ignore", mk(argumentOptions{Mode: s("ignore")}), obj("a", 1), obj("b", 2), true},
	} {
		if got := tt.m.matches(tt.exp, tt.act); got != tt.want {
			t.Errorf("%s: matches = %v, want %v (%s)", tt.name, got, tt.want, tt.m.explain(tt.exp, tt.act))
		}
	}
	// Per-tool options inherit what they do not set.
	base := mk(argumentOptions{CaseInsensitive: b(true)})
	sub, _ := newArgMatcher(&argumentOptions{Mode: s("subset")}, base, "tool_arguments.x")
	if !sub.caseInsensitive || sub.mode != "subset" {
		t.Fatalf("inheritance: %+v", sub)
	}
}

// A schema with its raw text is keyed on that text: the same text hits the
// cache, strict stays a separate entry, and the compiled schema validates as
// the decoded one does.
func TestSchemaCacheRawKey(t *testing.T) {
	sc := &schemaCache{max: 8, m: map[string]*compiledSchema{}}
	raw := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	params := obj("type", "object", "properties", obj("city", obj("type", "string")), "required", []any{"city"})
	a := sc.get(params, raw, false)
	if a.err != nil || sc.get(params, raw, false) != a {
		t.Fatalf("raw schema not cached: %v", a.err)
	}
	strict := sc.get(params, raw, true)
	if strict == a {
		t.Fatal("strict must be a separate entry")
	}
	if err := a.schema.Validate(map[string]any{"city": "Lisbon", "extra": 1}); err != nil {
		t.Errorf("lenient schema refused an extra argument: %v", err)
	}
	if err := strict.schema.Validate(map[string]any{"city": "Lisbon", "extra": 1}); err == nil {
		t.Error("strict schema accepted an extra argument")
	}
	if err := a.schema.Validate(map[string]any{}); err == nil {
		t.Error("missing required argument accepted")
	}
}
