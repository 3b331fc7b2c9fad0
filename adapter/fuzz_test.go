package adapter

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fuzzKeys are the attributes the fuzzer fills, across the conventions.
var fuzzKeys = []string{
	"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.retrieval.documents",
	"llm.input_messages.0.message.content", "llm.input_messages.0.message.role", "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
	"llm.tools.0.tool.json_schema", "retrieval.documents.0.document.metadata", "input.value", "output.value",
	"gen_ai.prompt.0.content", "gen_ai.completion.0.tool_calls.0.arguments", "llm.request.functions.0.parameters",
	"traceloop.entity.input", "traceloop.entity.output",
	"ai.prompt.messages", "ai.prompt", "ai.response.toolCalls", "ai.prompt.tools", "ai.toolCall.args", "ai.toolCall.result",
	"eval.expected.tool_calls", "eval.expected.output", "eval.expected.documents", "eval.tasks", "eval.context",
	"gen_ai.usage.input_tokens", "gen_ai.request.model", "tool.parameters",
}

var fuzzKinds = []map[string]string{
	{"gen_ai.operation.name": "chat"}, {"gen_ai.operation.name": "invoke_agent"}, {"gen_ai.operation.name": "execute_tool"},
	{"gen_ai.operation.name": "retrieval"}, {"openinference.span.kind": "LLM"}, {"openinference.span.kind": "AGENT"},
	{"openinference.span.kind": "TOOL"}, {"openinference.span.kind": "RETRIEVER"}, {"llm.request.type": "chat"},
	{"traceloop.span.kind": "workflow"}, {"traceloop.span.kind": "tool"}, {"ai.operationId": "ai.generateText.doGenerate"},
	{"ai.operationId": "ai.generateText"}, {"ai.operationId": "ai.toolCall"}, {},
}

// spansFromBytes builds a trace from fuzz input: each span takes a control
// byte (kind, parent, value shape) and a chunk of bytes as attribute value.
func spansFromBytes(data []byte) []SpanRef {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	n := 0
	for len(data) >= 3 && n < 16 {
		ctl, ctl2, size := data[0], data[1], int(data[2])
		data = data[3:]
		if size > len(data) {
			size = len(data)
		}
		chunk := string(data[:size])
		data = data[size:]
		n++
		sp := ss.Spans().AppendEmpty()
		sp.SetName("s" + string(rune('a'+n)))
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{byte(n)})
		if p := ctl2 % 18; p != 0 {
			sp.SetParentSpanID(pcommon.SpanID{p})
		}
		sp.SetStartTimestamp(pcommon.Timestamp(ctl2))
		sp.SetEndTimestamp(pcommon.Timestamp(ctl))
		if ctl&0x80 != 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		for k, v := range fuzzKinds[int(ctl)%len(fuzzKinds)] {
			sp.Attributes().PutStr(k, v)
		}
		key := fuzzKeys[int(ctl2)%len(fuzzKeys)]
		switch (ctl >> 4) % 4 {
		case 0, 1:
			sp.Attributes().PutStr(key, chunk)
		case 2: // structured: a slice of the chunk split in two, and a map
			sl := sp.Attributes().PutEmptySlice(key)
			m := sl.AppendEmpty().SetEmptyMap()
			m.PutStr("role", "user")
			m.PutStr("content", chunk)
			m.PutStr("arguments", chunk)
			sl.AppendEmpty().SetStr(chunk)
		case 3:
			ev := sp.Events().AppendEmpty()
			names := []string{"gen_ai.content.prompt", "gen_ai.content.completion", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice"}
			ev.SetName(names[int(ctl2)%len(names)])
			for _, k := range []string{"gen_ai.prompt", "gen_ai.completion", "content", "tool_calls", "message", "id"} {
				ev.Attributes().PutStr(k, chunk)
			}
		}
	}
	return GroupByTrace(td)[pcommon.TraceID{1}]
}

func FuzzAdapt(f *testing.F) {
	f.Add([]byte{0, 0, 10, '[', '{', '"', 'r', 'o', 'l', 'e', '"', ':', '1', '}', ']'})
	f.Add([]byte{1, 1, 4, 'n', 'u', 'l', 'l', 2, 3, 2, '{', '}'})
	f.Add([]byte{0x20, 0x1, 20, '[', '{', '"', 'p', 'a', 'r', 't', 's', '"', ':', '[', '{', '"', 't', 'y', 'p', 'e', '"', ':', '1', '}'})
	f.Add([]byte{0x31, 5, 8, '[', '[', '[', '[', ']', ']', ']', ']', 0x32, 2, 3, 0xff, 0xfe, 0xfd})
	f.Add([]byte{13, 23, 6, '"', '\\', 'u', 'd', '8', '"', 3, 1, 2, '[', ']'})
	f.Fuzz(func(t *testing.T, data []byte) {
		spans := spansFromBytes(data)
		cases, problems := Adapt(spans)
		checkLevels(t, spans, cases)
		checkRawParameters(t, cases)
		for _, p := range problems {
			if p == "" || strings.Contains(p, "internal error") {
				t.Fatalf("problem %q", p)
			}
		}
		for _, c := range cases {
			if c.Level != LevelLLM && c.Level != LevelAgent {
				t.Fatalf("level %q", c.Level)
			}
			for _, p := range c.Problems {
				if len(p) > 4096 {
					t.Fatalf("problem too long: %d", len(p))
				}
			}
		}
	})
}
