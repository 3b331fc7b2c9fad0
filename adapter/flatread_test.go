package adapter

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fuzzKVs reads flattened attributes from s, one "key=value" a line; a
// value "!" is null, "~" true, "#N" the number N, "$s" the string s
// converted from bytes, anything else a string.
func fuzzKVs(s string) []flatKV {
	var kvs []flatKV
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		kv := flatKV{key: k}
		switch {
		case v == "!":
		case v == "~":
			kv.val = true
		case strings.HasPrefix(v, "#"):
			n, _ := strconv.Atoi(v[1:])
			kv.val = float64(n)
		case strings.HasPrefix(v, "$"): // a string converted from bytes
			kv.val = v[1:]
		default:
			kv.str, kv.isStr = v, true
		}
		kvs = append(kvs, kv)
	}
	return kvs
}

// fuzzFlat fuzzes check with the flattened attributes of fuzzKVs, seeded
// with seeds, and a number to choose with.
func fuzzFlat(f *testing.F, seeds []string, check func(t *testing.T, sp ptrace.Span, kvs []flatKV, k uint8)) {
	for i, s := range seeds {
		f.Add(s, uint8(i))
	}
	sp := ptrace.NewSpan()
	f.Fuzz(func(t *testing.T, s string, k uint8) {
		if kvs := fuzzKVs(s); len(kvs) != 0 {
			check(t, sp, kvs, k)
		}
	})
}

// treeOf is the tree flatten builds of kvs.
func treeOf(kvs []flatKV) map[string]any {
	set := &flatSet{}
	set.kvs[0] = kvs
	return set.tree(0)
}

// flatMsgSeeds are flattened messages of the usual shapes and of unusual
// ones (the tree read for those).
var flatMsgSeeds = []string{
	"0.message.role=user\n0.message.content=hi\n1.message.role=assistant\n1.message.tool_calls.0.tool_call.id=c1\n1.message.tool_calls.0.tool_call.function.name=search\n1.message.tool_calls.0.tool_call.function.arguments={\"q\":\"x\"}\n2.message.role=tool\n2.message.tool_call_id=c1\n2.message.content=done",
	"0.role=assistant\n0.content=null\n0.finish_reason=tool_calls\n0.tool_calls.1.name=b\n0.tool_calls.0.name=a\n0.tool_calls.0.arguments={}\n0.tool_calls.1.arguments=[1]\n0.tool_calls.0.id=x",
	"2.role=user\n0.role=system\n0.content=[{\"type\":\"text\",\"text\":\"be brief\"}]\n2.content=q",
	"0.role=user\n0.role=assistant",
	"01.role=user\n1.role=assistant",
	"0.role=#3\n0.content=~",
	"0.content=!\n0.tool_calls.0.arguments=not json",
	"0.message.role=user\n0.role=assistant",
	"0.message.contents.0.message_content.text=x\n0.message.role=model",
	"0.message=x\n0.message.role=user",
	"0.tool_calls.0.function.name=f\n0.tool_calls.0.tool_call.id=i",
	"10001.role=user\n3.role=tool\n3.tool_call_id=abc\n3.id=def",
}

// The messages read straight from the flattened keys, when that reader
// takes them, are what reading their tree gives, problems included.
func FuzzFlatMessagesFast(f *testing.F) {
	fuzzFlat(f, flatMsgSeeds, func(t *testing.T, sp ptrace.Span, kvs []flatKV, k uint8) {
		oi := k&1 != 0
		role := [...]string{"user", "assistant"}[k>>1&1]
		fast := spanCtx{span: sp, cache: &traceCache{}}
		got, ok := fast.flatMessagesFast("attr", kvs, role, oi)
		if !ok {
			if len(fast.problems) != 0 {
				t.Fatalf("declined after reporting %q", fast.problems)
			}
			return
		}
		tree := spanCtx{span: sp, cache: &traceCache{}}
		want := tree.flatMessages("attr", treeOf(kvs), role)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("messages\n got %+v\nwant %+v", got, want)
		}
		if !reflect.DeepEqual(fast.problems, tree.problems) {
			t.Errorf("problems\n got %q\nwant %q", fast.problems, tree.problems)
		}
	})
}

// The usual shapes are read straight from the keys.
func TestFlatMessagesFastTakesUsual(t *testing.T) {
	for i, oi := range []bool{true, false} {
		c := spanCtx{span: ptrace.NewSpan()}
		if _, ok := c.flatMessagesFast("attr", fuzzKVs(flatMsgSeeds[i]), "user", oi); !ok {
			t.Errorf("seed %d declined", i)
		}
	}
}

// flatDefSeeds are flattened tool definitions, OpenInference's llm.tools
// and OpenLLMetry's llm.request.functions, of the usual shapes and of
// unusual ones.
var flatDefSeeds = []string{
	"0.tool.json_schema={\"type\":\"function\",\"function\":{\"name\":\"search\",\"parameters\":{\"type\":\"object\"}}}\n1.tool.json_schema={\"name\":\"book\"}",
	"0.name=search\n0.description=Search.\n0.arguments={\"type\":\"object\"}\n1.name=book\n1.arguments={}",
	"1.tool.json_schema={\"name\":\"b\"}\n0.tool.json_schema={\"name\":\"a\"}",
	"0.tool.json_schema=!\n1.tool.json_schema=#3\n2.tool.json_schema={",
	"0.name=a\n1.name=b\n0.arguments={}\n1.arguments=[1]",
	"0.name=a\n0.name=b\n0.arguments={}",
	"0.name=#4\n0.arguments={}\n1.description=no name\n1.arguments={\"type\":\"object\"}",
	"0.name=a\n0.parameters={}\n00.arguments={}",
	"0.name=a\n0.description=no arguments",
	"0.tool.json_schema.x={}\n0.tool=1",
}

// The tool definitions read straight from the flattened keys, when that
// reader takes them, are what reading their tree gives, problems included,
// on a first read and on a cached one.
func FuzzFlatToolDefsFast(f *testing.F) {
	fuzzFlat(f, flatDefSeeds, func(t *testing.T, sp ptrace.Span, kvs []flatKV, k uint8) {
		oi := k&1 == 0
		read := func(fast bool) (defs [2][]ToolDefinition, problems [2][]string, ok bool) {
			sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}
			cache := &traceCache{}
			ok = true
			for i := range 2 {
				d := &spanData{kind: kindLLM, c: spanCtx{span: sp, cache: cache}}
				switch {
				case fast && oi:
					if ok = oiToolSchemasFlat(kvs, nil); ok {
						set := &flatSet{}
						set.kvs[flatOITools] = kvs
						openInference{}.toolDefinitions(d, sp.Attributes(), set)
					}
				case fast:
					if ok = olFunctionsFlat(kvs, nil); ok {
						set := &flatSet{}
						set.kvs[flatOLFunctions] = kvs
						openLLMetry{}.toolDefinitions(d, sp.Attributes(), set)
					}
				case oi:
					d.oiToolDefsTree(treeOf(kvs))
				default:
					d.olFunctionsTree(treeOf(kvs))
				}
				defs[i], problems[i] = d.toolDefs, d.c.problems
			}
			return defs, problems, ok
		}
		got, gotP, ok := read(true)
		if !ok {
			return
		}
		want, wantP, _ := read(false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("definitions\n got %+v\nwant %+v", got, want)
		}
		if !reflect.DeepEqual(gotP, wantP) {
			t.Errorf("problems\n got %q\nwant %q", gotP, wantP)
		}
	})
}

// The usual shapes are read straight from the keys.
func TestFlatToolDefsFastTakesUsual(t *testing.T) {
	if !oiToolSchemasFlat(fuzzKVs(flatDefSeeds[0]), nil) {
		t.Error("llm.tools declined")
	}
	if !olFunctionsFlat(fuzzKVs(flatDefSeeds[1]), nil) {
		t.Error("llm.request.functions declined")
	}
}

// flatten keeps a string value as convert gives it, problems included.
func TestFlattenStringAsConvert(t *testing.T) {
	for _, s := range []string{"plain", "bad \xff utf-8", strings.Repeat("é", maxStringBytes/2+1)} {
		sp := ptrace.NewSpan()
		k := oiLLMOutputMessagesPrefix + "0.message.content"
		sp.Attributes().PutStr(k, s)
		d := &spanData{c: spanCtx{span: sp}}
		trees := d.flatten(sp.Attributes(), allFlat)
		want := spanCtx{span: sp}
		v, _ := sp.Attributes().Get(k)
		if got, w := trees.kvs[flatOIOutput][0].value(), want.convert(k, v); got != w {
			t.Errorf("value %q, want %q", got, w)
		}
		if !reflect.DeepEqual(d.c.problems, want.problems) {
			t.Errorf("problems %q, want %q", d.c.problems, want.problems)
		}
	}
}
