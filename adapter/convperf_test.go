package adapter

import (
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// readDefsBoth reads attribute attr of a span with attrs twice with read,
// each time as a fresh span of a fresh trace (so the second read may come
// from sharedDefs), and returns the definitions and problems of each.
func readDefsBoth(t *testing.T, attrs map[string]any, read func(d *spanData)) (defs [2][]ToolDefinition, problems [2][]string) {
	t.Helper()
	sp := ptrace.NewSpan()
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d := &spanData{kind: kindLLM, c: spanCtx{span: sp, cache: &traceCache{}}}
		d.ref.Span = sp
		read(d)
		defs[i], problems[i] = d.toolDefs, d.c.problems
	}
	return defs, problems
}

// Vercel AI SDK ai.prompt.tools (an array of JSON texts) read one text at a
// time, each once, give what the list read as a whole gives: definitions,
// their merging and the problems, on a first read and on a cached one.
func TestVercelToolDefTextsSameAsList(t *testing.T) {
	type msg = map[string]any
	flights := js(msg{"type": "function", "name": "search_flights", "description": "Search flights between two airports.",
		"inputSchema": msg{"type": "object", "properties": msg{"origin": msg{"type": "string"}}, "required": []any{"origin"}}})
	hotel := js(msg{"type": "function", "name": "book_hotel",
		"inputSchema": msg{"jsonSchema": msg{"type": "object", "properties": msg{"city": msg{"type": "string"}}}}})
	hotelDesc := js(msg{"type": "function", "name": "book_hotel", "description": "Book a hotel room in a city, for some nights."})
	for name, list := range map[string][]any{
		"usual":             {flights, hotel},
		"merged":            {hotel, flights, hotelDesc},
		"malformed":         {flights, `{"name":"broken","parameters":{"type":"object"` + js(msg{"pad": flights})},
		"not an object":     {"search the web", flights},
		"array text":        {js([]any{msg{"name": "a", "description": "the first tool of a list given as one text"}}), hotel},
		"without a name":    {js(msg{"description": "a tool without a name, described at some length"}), hotel},
		"schema not object": {js(msg{"name": "x", "description": "parameters given as a number here", "parameters": 3}), flights},
	} {
		t.Run(name, func(t *testing.T) {
			attrs := map[string]any{aiPromptTools: list}
			sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}
			want, wantP := readDefsBoth(t, attrs, func(d *spanData) { d.toolDefList(d.ref.Span.Attributes(), aiPromptTools) })
			sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}
			got, gotP := readDefsBoth(t, attrs, func(d *spanData) { vercelAI{}.toolDefinitions(d, d.ref.Span.Attributes(), nil) })
			for i := range 2 {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("read %d: definitions\n got %+v\nwant %+v", i, got[i], want[i])
				}
				if !reflect.DeepEqual(gotP[i], wantP[i]) {
					t.Errorf("read %d: problems\n got %q\nwant %q", i, gotP[i], wantP[i])
				}
			}
		})
	}
}

// OpenLLMetry's llm.request.functions.N read once per function give what
// reading each function every time gives, on a first read and a cached one.
func TestOpenLLMetryFunctionsCachedSame(t *testing.T) {
	schema := js(map[string]any{"type": "object", "properties": map[string]any{"origin": map[string]any{"type": "string"}}, "required": []any{"origin"}})
	p := olLLMRequestFunctionsPrefix
	for name, attrs := range map[string]map[string]any{
		"usual": {p + "0.name": "search_flights", p + "0.description": "Search flights.", p + "0.arguments": schema,
			p + "1.name": "book_hotel", p + "1.description": "Book a hotel.", p + "1.arguments": `{"type":"object","properties":{"city":{"type":"string"}}}`},
		"merged": {p + "0.name": "search_flights", p + "0.arguments": schema,
			p + "1.name": "search_flights", p + "1.description": "Search flights between two airports on a date.", p + "1.arguments": schema},
		"malformed":      {p + "0.name": "search_flights", p + "0.description": "Search flights between airports.", p + "0.arguments": schema[:len(schema)-1]},
		"no name":        {p + "0.description": "A function without a name, described at some length.", p + "0.arguments": schema},
		"not a schema":   {p + "0.name": "search_flights", p + "0.description": "Search flights between airports, said twice.", p + "0.arguments": "[1,2,3]"},
		"other keys":     {p + "0.name": "search_flights", p + "0.description": "Search flights.", p + "0.arguments": schema, p + "0.parameters": schema},
		"number name":    {p + "0.name": int64(7), p + "0.description": "Search flights between two airports.", p + "0.arguments": schema},
		"no description": {p + "0.name": "search_flights", p + "0.arguments": schema},
	} {
		t.Run(name, func(t *testing.T) {
			sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}
			want, wantP := readDefsBoth(t, attrs, func(d *spanData) {
				for _, it := range indexed(d.flatten(d.ref.Span.Attributes(), defsFlat).tree(flatOLFunctions)) {
					d.addToolDef(olLLMRequestFunctions, it, "")
				}
			})
			sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}
			got, gotP := readDefsBoth(t, attrs, func(d *spanData) {
				openLLMetry{}.toolDefinitions(d, d.ref.Span.Attributes(), d.flatten(d.ref.Span.Attributes(), defsFlat))
			})
			for i := range 2 {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("read %d: definitions\n got %+v\nwant %+v", i, got[i], want[i])
				}
				if !reflect.DeepEqual(gotP[i], wantP[i]) {
					t.Errorf("read %d: problems\n got %q\nwant %q", i, gotP[i], wantP[i])
				}
			}
			if name == "usual" && len(sharedDefs.m) != 2 {
				t.Errorf("%d functions cached, want 2", len(sharedDefs.m))
			}
		})
	}
}

// pruned is v with the object members sel does not name left out (what
// decodeSelect keeps of a value).
func pruned(v any, sel jsonSel) any {
	if sel == nil {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if sub, ok := sel[k]; ok {
				out[k] = pruned(x, sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = pruned(x, sel)
		}
		return out
	}
	return v
}

var selSeeds = []jsonSel{
	{"a": nil}, {"b": nil, "c": {"d": nil}}, {"role": nil, "parts": {"type": nil}}, {"k": nil}, {},
	lcMessagesSel, lcGenerationsSel, lcProviderSel,
}

// checkSelect compares decodeSelect with decodeFast: accepted alike, and
// the value decodeFast's without what sel leaves out.
func checkSelect(t *testing.T, s string, sel jsonSel) {
	want, wantOK := decodeFast(s)
	got, ok := decodeSelect(s, sel)
	if ok != wantOK {
		t.Fatalf("%q %v: decodeSelect ok %v, decodeFast ok %v", s, sel, ok, wantOK)
	}
	if ok && !reflect.DeepEqual(got, pruned(want, sel)) {
		t.Fatalf("%q %v: got %#v want %#v", s, sel, got, pruned(want, sel))
	}
}

func TestDecodeSelect(t *testing.T) {
	seeds := append([]string{
		`{"a":{"x":[1,{"y":"\u00e9"}]},"b":"\q"}`, `{"z":"\ud800","a":[{"b":1}]}`, `{"z":1e999,"a":1}`, `{"z":"a` + "\x01" + `","a":1}`,
		`{"z":[1,],"a":1}`, `{"z":{"a" 1},"a":1}`, `{"z":"\u12x4","a":1}`, `{"z":-,"a":1}`, `{"z":tru,"a":1}`, `{"z":"` + "\xff" + `","a":1}`,
		`{"generations":[[{"text":"","message":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"","tool_calls":[{"name":"f","args":{"x":1},"id":"call_1","type":"tool_call"}],"additional_kwargs":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"response_metadata":{"tokenUsage":{"promptTokens":1}}}},"generationInfo":{"finish_reason":"tool_calls"}}]],"llm_output":{"tokenUsage":{"totalTokens":3}}}`,
		`{"messages":[[{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"ok","tool_call_id":"call_1","name":"f"}}]]}`,
		`{"ls_provider":"openai","ls_model_name":"gpt-4o-mini","ls_provider":"anthropic","x":{"y":[1,2]}}`,
		strings.Repeat(`{"z":`, maxDepth) + "1" + strings.Repeat("}", maxDepth), strings.Repeat(`{"z":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	}, jsonSeeds...)
	for _, s := range seeds {
		for _, sel := range selSeeds {
			checkSelect(t, s, sel)
		}
	}
}

func FuzzDecodeSelect(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s, uint8(0))
	}
	f.Add(`{"generations":[[{"message":{"lc":1,"kwargs":{"tool_calls":[{"id":"a","args":{}}]}}}]]}`, uint8(6))
	f.Fuzz(func(t *testing.T, s string, k uint8) {
		checkSelect(t, s, selSeeds[int(k)%len(selSeeds)])
	})
}
