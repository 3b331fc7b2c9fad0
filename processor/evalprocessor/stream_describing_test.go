package evalprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// A result span keeps its evaluated span's describing attributes (a
// tenant, a tier, the model), so monitors group stream mode's results by
// them as they do hold mode's (docs/contract.md §26); not its content
// (messages, long values), nor what would make it one more LLM call with
// its tokens counted twice in a GenAI backend; what it copies is redacted
// as §20 says.
func TestStreamModeResultSpansKeepTheEvaluatedSpansDescribingAttributes(t *testing.T) {
	stream := startMode(t, engine.ModeStream)
	first, second := streamTrace(1)
	agent := second.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1)
	require.Equal(t, "invoke_agent travel_agent", agent.Name())
	agent.Attributes().PutStr("tenant.id", "acme")
	agent.Attributes().PutInt("user.tier", 2)
	agent.Attributes().PutStr("user.email", "bob@example.com")
	agent.Attributes().PutStr("input.value", "short content")
	agent.Attributes().PutStr("app.notes", strings.Repeat("n", 300))
	agent.Attributes().PutStr("eval.expected.output", "Booked.")
	for i := range 200 { // beyond maxDescribing
		agent.Attributes().PutInt(fmt.Sprintf("app.flag_%03d", i), int64(i))
	}
	ctx := context.Background()
	require.NoError(t, stream.tr.ConsumeTraces(ctx, first))
	require.NoError(t, stream.tr.ConsumeTraces(ctx, second))
	require.Eventually(t, func() bool { return stream.spans.SpanCount() == 7 }, 10*time.Second, time.Millisecond)

	results := map[string]ptrace.Span{}
	for _, td := range stream.spans.AllTraces()[2:] {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) { results[strAttr(r.Span, "eval.target.span_name")] = r.Span })
	}
	onAgent, onChat := results["invoke_agent travel_agent"], results["chat gpt-4o"]
	require.NotEqual(t, ptrace.Span{}, onAgent)
	require.NotEqual(t, ptrace.Span{}, onChat)
	assert.Equal(t, "acme", strAttr(onAgent, "tenant.id"))
	assert.Equal(t, "2", strAttr(onAgent, "user.tier"))
	// not what makes it an agent or LLM call in a backend's GenAI views
	for _, k := range []string{"gen_ai.operation.name"} {
		_, ok := onAgent.Attributes().Get(k)
		assert.False(t, ok, "%s is not copied onto the result span", k)
	}
	assert.NotContains(t, strAttr(onAgent, "user.email"), "bob@example.com", "copied text is redacted")
	assert.NotEmpty(t, strAttr(onAgent, "user.email"))
	for _, k := range []string{"input.value", "app.notes", "eval.expected.output"} {
		_, ok := onAgent.Attributes().Get(k)
		assert.False(t, ok, "%s is not copied onto the result span", k)
	}
	assert.Equal(t, "gpt-4o", strAttr(onChat, "gen_ai.request.model"))
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.operation.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		_, ok := onChat.Attributes().Get(k)
		assert.False(t, ok, "%s is not copied onto the result span", k)
	}
	assert.Equal(t, "true", strAttr(onAgent, adapter.AttrGenerated))
	flags := 0
	for k := range onAgent.Attributes().All() {
		if strings.HasPrefix(k, "app.flag_") {
			flags++
		}
	}
	assert.Less(t, flags, maxDescribing, "at most maxDescribing describing attributes, tenant.id and the rest among them")
	assert.Equal(t, "failed", strAttr(onAgent, "eval.tool_error.status"), "the results are all there")
}

// A trace with LLM and tool spans under a root that is no GenAI span (a web
// handler calling a model) is one agent case anchored on the root. Its
// evaluators' `when` conditions read the root's attributes, and so does a
// monitor grouping its result span: stream mode scores it as hold mode
// does (docs/contract.md §26: results equal hold mode's).
func TestStreamModeRootAnchoredCaseReadsTheRootsAttributes(t *testing.T) {
	evs := []evaluators.Config{{Type: "tool_error", When: []string{`attributes["http.route"] == "/chat"`}}}
	results := map[string]ptrace.Span{}
	for _, mode := range []string{engine.ModeHold, engine.ModeStream} {
		m := startMode(t, mode, evs...)
		b := newBatch()
		b.span(1, 1, 0, "POST /chat", map[string]any{"http.route": "/chat", "tenant.id": "acme"})
		b.llm(1, 2, "book me a flight")
		b.tool(1, 3, "search_flights", true)
		require.NoError(t, m.tr.ConsumeTraces(context.Background(), b.td))
		want := 3
		if mode == engine.ModeStream {
			want = 4 // and the result span
		}
		require.Eventually(t, func() bool { return m.logs.LogRecordCount() == 1 && m.spans.SpanCount() == want }, 10*time.Second, time.Millisecond, mode)
		for _, td := range m.spans.AllTraces() {
			adapter.ForEachSpan(td, func(r adapter.SpanRef) {
				if _, ok := r.Span.Attributes().Get("eval.tool_error.status"); ok {
					results[mode] = r.Span
				}
			})
		}
	}
	hold, stream := results[engine.ModeHold], results[engine.ModeStream]
	require.NotEqual(t, ptrace.Span{}, hold, "hold mode scored the root")
	require.NotEqual(t, ptrace.Span{}, stream, "stream mode scored the root: its when condition reads the root's attributes")
	assert.Equal(t, evalAttrs(hold), evalAttrs(stream))
	assert.Equal(t, "POST /chat", strAttr(stream, "eval.target.span_name"))
	assert.Equal(t, "acme", strAttr(stream, "tenant.id"), "monitors group by the root's attributes")
}
