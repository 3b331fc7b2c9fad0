package adapter

import (
	"reflect"
	"testing"
)

func TestRawField(t *testing.T) {
	for _, tc := range []struct{ s, key, want string }{
		{`{"a":1,"b":{"c":[1,"]}"]}}`, "b", `{"c":[1,"]}"]}`},
		{` { "a" : "x\"y" , "b" : true } `, "a", `"x\"y"`},
		{`{"a":1,"a":[2]}`, "a", `[2]`},                  // the last wins, as decoded
		{`{"p\u0061rams":{"x":1}}`, "params", `{"x":1}`}, // keys compared decoded
		{`{"a":1}`, "b", ""},
		{`[{"a":1}]`, "a", ""},
		{`{"a":`, "a", ""},
		{``, "a", ""},
	} {
		if got := rawField(tc.s, tc.key); got != tc.want {
			t.Errorf("rawField(%q, %q) = %q, want %q", tc.s, tc.key, got, tc.want)
		}
	}
	if got := rawElems(` [ {"a":[1,2]} , "s", 3.5e2,null ] `); !reflect.DeepEqual(got, []string{`{"a":[1,2]}`, `"s"`, `3.5e2`, `null`}) {
		t.Errorf("rawElems = %q", got)
	}
	for _, s := range []string{`{}`, `[1,`, `[1 2]`, ``} {
		if got := rawElems(s); got != nil {
			t.Errorf("rawElems(%q) = %q", s, got)
		}
	}
}

// checkRawParameters: a non-empty RawParameters decodes to Parameters.
func checkRawParameters(t *testing.T, cases []Case) int {
	t.Helper()
	n := 0
	for _, c := range cases {
		for _, d := range c.ToolDefinitions {
			if d.RawParameters == "" {
				continue
			}
			n++
			if got := decodeQuiet(d.RawParameters); !reflect.DeepEqual(got, d.Parameters) {
				t.Fatalf("tool %q: RawParameters %q decode to %v, Parameters %v", d.Name, d.RawParameters, got, d.Parameters)
			}
		}
	}
	return n
}

func TestRawParameters(t *testing.T) {
	for name, refs := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			cases, _ := Adapt(refs)
			n := checkRawParameters(t, cases)
			if structured := name == "otel-structured"; structured != (n == 0) {
				t.Errorf("%d raw schemas", n)
			}
			if name == "otel-json" || name == "openllmetry" {
				for _, c := range cases {
					for _, d := range c.ToolDefinitions {
						if want := map[string]string{"search_flights": js(flightSchema), "book_hotel": js(hotelSchema)}[d.Name]; d.RawParameters != want {
							t.Errorf("%s: %q", d.Name, d.RawParameters)
						}
					}
				}
			}
		})
	}
	t.Run("jsonSchema wrapper and tool span", func(t *testing.T) {
		b := newTB(t)
		b.span("invoke_agent a", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent"})
		b.span("chat", 2, 1, 10, 20, attrs{"gen_ai.operation.name": "chat",
			"gen_ai.tool.definitions": `[{"name":"t","parameters":{"jsonSchema": {"type":"object"} }},{"name":"u","parameters":"{\"type\":\"string\"}"}]`})
		b.span("execute_tool v", 3, 1, 20, 30, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "v", "tool.parameters": ` {"type":"object"}`})
		cases, problems := Adapt(b.refs())
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		checkRawParameters(t, cases)
		got := map[string]string{}
		for _, d := range agentCase(t, cases).ToolDefinitions {
			got[d.Name] = d.RawParameters
		}
		if want := map[string]string{"t": `{"type":"object"}`, "u": `{"type":"string"}`, "v": ` {"type":"object"}`}; !reflect.DeepEqual(got, want) {
			t.Errorf("raw %q", got)
		}
	})
}

func TestIndexed(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]any
		want []any
	}{
		{map[string]any{"2": "c", "0": "a", "1": "b"}, []any{"a", "b", "c"}},
		{map[string]any{"0": "a", "2": "c", "x": "y"}, []any{"a", "c"}},
		{map[string]any{"0": nil, "1": "b"}, []any{nil, "b"}},
		{map[string]any{"10": "k", "9": "j"}, []any{"j", "k"}},
		{map[string]any{"+1": "p", "0": "a"}, []any{"a", "p"}},
	} {
		if got := indexed(tc.m); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("indexed(%v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}
