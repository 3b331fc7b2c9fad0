package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// chatTurn emits one turn of a conversation as a trace of its own: the
// agent span with the conversation id, a chat span and a tool call, at
// start (turns are spread over time by their timestamps).
func chatTurn(tr trace.Tracer, conv string, n int, start time.Time, tool string, failed bool) {
	ctx, agent := tr.Start(context.Background(), fmt.Sprintf("%s turn %d", conv, n), trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "helper"), attribute.String("gen_ai.conversation.id", conv)))
	_, chat := tr.Start(ctx, fmt.Sprintf("%s chat %d", conv, n), trace.WithTimestamp(start.Add(time.Millisecond)),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"%s question %d"}]}]`, conv, n)),
			attribute.String("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"text","content":"%s answer %d"}]}]`, conv, n))))
	chat.End(trace.WithTimestamp(start.Add(time.Second)))
	_, call := tr.Start(ctx, fmt.Sprintf("%s tool %d", conv, n), trace.WithTimestamp(start.Add(2*time.Second)),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.tool.call.arguments", `{"city":"Lisbon"}`), attribute.String("gen_ai.tool.call.result", `{"ok":true}`)))
	if failed {
		call.SetStatus(codes.Error, "down")
	}
	call.End(trace.WithTimestamp(start.Add(3 * time.Second)))
	agent.End(trace.WithTimestamp(start.Add(4 * time.Second)))
}

// sessionSpans are the evaluate_session spans received for conversation
// conv, in arrival order.
func sessionSpans(be *testkit.Sink, conv string) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range be.Spans() {
		if v, ok := s.Attributes().Get("gen_ai.conversation.id"); ok && s.Name() == "evaluate_session" && v.Str() == conv {
			out = append(out, s)
		}
	}
	return out
}

// TestEndToEndSessions: three turns of one conversation in three traces,
// interleaved with another conversation's two, give one evaluate_session
// span per conversation once it has been idle, linked to its turns' agent
// spans, with the session evaluators' results (a judge among them, which
// sees each conversation once), and the webhook exporter alerts on the
// failed session evaluation; a fourth turn later gives a second scoring.
// The same in stream mode (docs/contract.md §26), where the turns' own
// results are on result spans under their agent spans.
func TestEndToEndSessions(t *testing.T) {
	for _, mode := range []string{"hold", "stream"} {
		t.Run(mode, func(t *testing.T) { endToEndSessions(t, mode) })
	}
}

func endToEndSessions(t *testing.T, mode string) {
	judgeSrv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		var verdicts []string
		for n := 1; strings.Contains(r.User(), fmt.Sprintf("answer %d", n)); n++ {
			verdicts = append(verdicts, fmt.Sprintf(`{"turn": %d, "ok": true}`, 2*n))
		}
		return judgetest.Reply{Content: `{"turns": [` + strings.Join(verdicts, ",") + `], "reason": "keeps context"}`}
	})
	be := testkit.NewSink(t)
	recv := &alertReceiver{t: t}
	hookSrv := httptest.NewServer(recv)
	defer hookSrv.Close()
	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/sessions.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Judge": judgeSrv.Endpoint(), "Webhook": hookSrv.URL, "Mode": mode}))
	tp := newSDK(t, grpcAddr, "chat-app")
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("e2e")

	base := time.Now().Add(-time.Hour)
	chatTurn(tr, "conv-a", 1, base, "search", false)
	chatTurn(tr, "conv-b", 1, base.Add(5*time.Second), "weather", false)
	chatTurn(tr, "conv-a", 2, base.Add(10*time.Minute), "search", false)
	chatTurn(tr, "conv-b", 2, base.Add(11*time.Minute), "weather", true)
	chatTurn(tr, "conv-a", 3, base.Add(20*time.Minute), "book", true)

	require.Eventually(t, func() bool { return len(sessionSpans(be, "conv-a")) == 1 && len(sessionSpans(be, "conv-b")) == 1 },
		30*time.Second, 20*time.Millisecond)
	a := sessionSpans(be, "conv-a")[0]
	require.Equal(t, 3, a.Links().Len())
	for i := 0; i < 3; i++ {
		turn, ok := be.Span(fmt.Sprintf("conv-a turn %d", i+1))
		require.True(t, ok)
		assert.Equal(t, turn.TraceID(), a.Links().At(i).TraceID(), "turn %d", i+1)
		assert.Equal(t, turn.SpanID(), a.Links().At(i).SpanID(), "turn %d", i+1)
		assert.NotEqual(t, turn.TraceID(), a.TraceID(), "a new trace id")
	}
	assert.Equal(t, ptrace.SpanKindInternal, a.Kind())
	attrs := a.Attributes().AsRaw()
	assert.Equal(t, int64(3), attrs["eval.session.turns"])
	assert.Equal(t, "helper", attrs["gen_ai.agent.name"])
	assert.InDelta(t, 2.0/3, attrs["eval.session_errors.score"], 1e-9)
	assert.Equal(t, "failed", attrs["eval.session_errors.status"])
	assert.InDelta(t, 2.0/3, attrs["eval.session_loops.score"], 1e-9, "search twice with the same arguments")
	assert.InDelta(t, 1.0, attrs["eval.session_memory.score"], 1e-9, attrs["eval.session_memory.reason"])
	assert.Equal(t, 3, a.Events().Len())

	b := sessionSpans(be, "conv-b")[0]
	assert.Equal(t, int64(2), b.Attributes().AsRaw()["eval.session.turns"])
	assert.InDelta(t, 0.5, b.Attributes().AsRaw()["eval.session_errors.score"], 1e-9)
	turnB1, _ := be.Span("conv-b turn 1")
	assert.Equal(t, turnB1.TraceID(), b.Links().At(0).TraceID(), "conversations never mix")

	// The judge saw each conversation once, and only its own.
	for _, r := range judgeSrv.Requests() {
		u := r.User()
		assert.False(t, strings.Contains(u, "conv-a") && strings.Contains(u, "conv-b"), "mixed: %s", u)
		assert.LessOrEqual(t, strings.Count(u, "conv-a question 1"), 1)
	}

	// The turns' own agent spans got the trace-level evaluator only (in
	// stream mode on their result spans).
	turn3, _ := be.Span("conv-a turn 3")
	if mode == "stream" {
		assert.NotContains(t, turn3.Attributes().AsRaw(), "eval.tool_error.status", "stream mode forwards the span unchanged")
		var results []ptrace.Span
		for _, s := range be.Spans() {
			if generated(s) && s.TraceID() == turn3.TraceID() && s.ParentSpanID() == turn3.SpanID() {
				results = append(results, s)
			}
		}
		require.Len(t, results, 1, "one result span under turn 3's agent span")
		turn3 = results[0]
	}
	assert.Equal(t, "failed", turn3.Attributes().AsRaw()["eval.tool_error.status"])
	assert.NotContains(t, turn3.Attributes().AsRaw(), "eval.session_errors.status")

	// The webhook exporter alerts on the failed session evaluation.
	require.Eventually(t, func() bool {
		for _, al := range recv.snapshot() {
			if al["evaluator"] == "session_errors" && al["span_id"] == a.SpanID().String() {
				return al["span_name"] == "evaluate_session" && al["agent_name"] == "helper" && al["service_name"] == "chat-app"
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "alerts: %v", recv.snapshot())

	// A fourth turn later: conv-a is scored again, with all four turns.
	chatTurn(tr, "conv-a", 4, base.Add(30*time.Minute), "book", false)
	require.Eventually(t, func() bool { return len(sessionSpans(be, "conv-a")) == 2 }, 30*time.Second, 20*time.Millisecond)
	again := sessionSpans(be, "conv-a")[1]
	assert.Equal(t, int64(4), again.Attributes().AsRaw()["eval.session.turns"])
	assert.Equal(t, 4, again.Links().Len())
	assert.InDelta(t, 3.0/4, again.Attributes().AsRaw()["eval.session_errors.score"], 1e-9)
	assert.Len(t, sessionSpans(be, "conv-b"), 1, "conv-b did not grow")
}
