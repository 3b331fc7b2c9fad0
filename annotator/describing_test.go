package annotator

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Describing keeps what a monitor groups by and leaves content, long
// values and evalbridge's own keys behind, in each convention's spelling.
func TestDescribing(t *testing.T) {
	for _, tc := range []struct {
		key  string
		val  pcommon.Value
		want bool
	}{
		{"tenant.id", pcommon.NewValueStr("acme"), true},
		{"gen_ai.request.model", pcommon.NewValueStr("gpt-4o"), true},
		{"gen_ai.provider.name", pcommon.NewValueStr("openai"), true},
		{"llm.model_name", pcommon.NewValueStr("gpt-4o"), true},
		{"http.route", pcommon.NewValueStr("/chat"), true},
		// what makes a span an LLM call or counts its tokens
		{"gen_ai.operation.name", pcommon.NewValueStr("invoke_agent"), false},
		{"openinference.span.kind", pcommon.NewValueStr("LLM"), false},
		{"traceloop.span.kind", pcommon.NewValueStr("agent"), false},
		{"gen_ai.usage.input_tokens", pcommon.NewValueInt(40), false},
		{"llm.token_count.total", pcommon.NewValueInt(40), false},
		{"ai.operationId", pcommon.NewValueStr("ai.generateText"), false},
		{"gen_ai.tool.name", pcommon.NewValueStr("search"), false},
		{"feature.enabled", pcommon.NewValueBool(true), true},
		{"gen_ai.input.messages", pcommon.NewValueStr(`[]`), false},
		{"gen_ai.prompt.0.content", pcommon.NewValueStr("hi"), false},
		{"llm.input_messages.0.message.content", pcommon.NewValueStr("hi"), false},
		{"input.value", pcommon.NewValueStr("hi"), false},
		{"ai.toolCall.args", pcommon.NewValueStr("{}"), false},
		{"gen_ai.tool.call.result", pcommon.NewValueStr("ok"), false},
		{"gen_ai.system_instructions", pcommon.NewValueStr("be kind"), false},
		{"app.notes", pcommon.NewValueStr(strings.Repeat("n", 257)), false},
		{"app.notes", pcommon.NewValueStr(strings.Repeat("n", 256)), true},
		{"eval.expected.output", pcommon.NewValueStr("Booked."), false},
		{"eval.tool_error.status", pcommon.NewValueStr("failed"), false},
		{"http.request.header.accept", pcommon.NewValueSlice(), false},
	} {
		if got := Describing(tc.key, tc.val); got != tc.want {
			t.Errorf("Describing(%q, %.20q) = %v, want %v", tc.key, tc.val.AsString(), got, tc.want)
		}
	}
}
