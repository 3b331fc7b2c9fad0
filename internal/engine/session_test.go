package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// turnTrace is one turn of conversation conv: an agent span with the
// conversation id, an LLM call, and a tool call (errored when failed).
func turnTrace(n byte, conv, tool string, failed bool) []adapter.SpanRef {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "chat")
	ss := rs.ScopeSpans().AppendEmpty()
	start := time.Unix(1_700_000_000, 0).Add(time.Duration(n) * time.Minute)
	add := func(id, parent byte, name string, attrs map[string]any) ptrace.Span {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{n, 1})
		sp.SetSpanID(pcommon.SpanID{n, id})
		if parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{n, parent})
		}
		sp.SetName(name)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(id) * time.Millisecond)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
		_ = sp.Attributes().FromRaw(attrs)
		return sp
	}
	add(1, 0, "invoke_agent helper", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper",
		"gen_ai.conversation.id": conv})
	add(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat",
		"gen_ai.input.messages":  `[{"role":"user","parts":[{"type":"text","content":"question ` + string('0'+n) + `"}]}]`,
		"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"answer ` + string('0'+n) + `"}]}]`})
	tl := add(3, 1, "execute_tool "+tool, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
		"gen_ai.tool.call.arguments": `{"q":"x"}`, "gen_ai.tool.call.result": `{"ok":true}`})
	if failed {
		tl.Status().SetCode(ptrace.StatusCodeError)
	}
	var refs []adapter.SpanRef
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { refs = append(refs, r) })
	return refs
}

func scoreSession(t *testing.T, e *Engine, sn *sessions.Snapshot) SessionReport {
	t.Helper()
	ch := make(chan SessionReport, 1)
	e.ScoreSessionAsync(context.Background(), sn, nil, func(r SessionReport) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("session not scored")
	}
	return SessionReport{}
}

func TestSessionEvaluatorsScoreTheTurns(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error", "name": "trace_errors"},
		map[string]any{"type": "tool_error", "name": "session_errors", "case": "session"},
		map[string]any{"type": "tool_efficiency", "name": "session_loops", "case": "session"},
		map[string]any{"type": "tool_error", "name": "other_agent", "case": "session",
			"when": []any{`attributes["gen_ai.agent.name"] == "someone_else"`}},
	}})
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	require.True(t, e.HasSessions())
	store := sessions.NewStore(sessions.NewDefaultConfig(), e.MaxFieldBytes())
	var mu sync.Mutex
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		mu.Lock()
		defer mu.Unlock()
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	})
	for n, tool := range []string{"search", "search", "book"} {
		rep := e.ScoreTrace(context.Background(), turnTrace(byte(n+1), "conv-1", tool, n == 2))
		// Trace-level evaluators run on each turn as before; session ones do not.
		res := results(rep)
		assert.Contains(t, res, "trace_errors")
		assert.NotContains(t, res, "session_errors")
	}
	// Another conversation's turn stays out of conv-1.
	e.ScoreTrace(context.Background(), turnTrace(9, "conv-2", "search", false))

	snaps := store.Drain()
	require.Len(t, snaps, 2)
	var sn sessions.Snapshot
	for _, s := range snaps {
		if s.Key.Conversation == "conv-1" {
			sn = s
		}
	}
	require.Len(t, sn.Turns, 3)
	r := scoreSession(t, e, &sn)
	require.True(t, r.Scored())
	res := results(r.Report)
	require.Contains(t, res, "session_errors")
	assert.InDelta(t, 2.0/3, res["session_errors"].Score, 1e-9, res["session_errors"].Reason)
	assert.Equal(t, evaluators.StatusFailed, res["session_errors"].Status)
	// search with the same arguments in turns 1 and 2: 2 distinct of 3.
	assert.InDelta(t, 2.0/3, res["session_loops"].Score, 1e-9, res["session_loops"].Reason)
	assert.NotContains(t, res, "other_agent", "`when` is checked against the evaluate_session span")
	assert.NotContains(t, res, "trace_errors")

	// The results are on the evaluate_session span, linked to the turns.
	sp := r.Ref.Span
	assert.Equal(t, "evaluate_session", sp.Name())
	assert.Equal(t, 3, sp.Links().Len())
	attrs := sp.Attributes().AsRaw()
	assert.Equal(t, "failed", attrs["eval.session_errors.status"])
	assert.Equal(t, []any{"session_errors", "session_loops"}, attrs["eval.failed"])
	assert.Equal(t, "helper", attrs["gen_ai.agent.name"])
	assert.Equal(t, 2, sp.Events().Len())
	assert.GreaterOrEqual(t, sp.EndTimestamp(), sp.StartTimestamp())
	assert.Equal(t, 1, r.Traces.SpanCount())

	// A generated span is no turn and no case: fed back, it yields nothing.
	var refs []adapter.SpanRef
	adapter.ForEachSpan(r.Traces, func(ref adapter.SpanRef) { refs = append(refs, ref) })
	before := store.Stats().Turns
	rep := e.ScoreTrace(context.Background(), refs)
	assert.Empty(t, rep.Evaluations)
	assert.Equal(t, before, store.Stats().Turns)
}

func TestSessionCaseValidation(t *testing.T) {
	cfg := NewDefaultConfig()
	y := map[string]any{"evaluators": []any{map[string]any{"type": "exact_match", "name": "same", "case": "session"}},
		"sessions": map[string]any{"idle": "0s"}}
	require.NoError(t, confmap.NewFromStringMap(y).Unmarshal(&cfg))
	err := confmap.Validate(&cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `evaluator "same": type exact_match cannot score sessions`)
	assert.Contains(t, err.Error(), "knowledge_retention")
	assert.Contains(t, err.Error(), "sessions: idle")

	// Strict decoding: an unknown key under sessions is an error.
	cfg = NewDefaultConfig()
	y = map[string]any{"evaluators": []any{map[string]any{"type": "tool_error", "case": "session"}},
		"sessions": map[string]any{"idle": "1m", "max_session": 3}}
	err = confmap.NewFromStringMap(y).Unmarshal(&cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max_session")
}

func TestSessionJudgeSeesTheConversationOnce(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{"turns": [{"turn": 2, "ok": true}, {"turn": 4, "ok": true}, {"turn": 6, "ok": false, "reason": "forgot"}], "reason": "mostly"}`))
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "knowledge_retention", "judge": "default", "case": "session"})
	cfg := NewDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(y).Unmarshal(&cfg))
	require.NoError(t, confmap.Validate(&cfg))
	e, err := New(&cfg, componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	store := sessions.NewStore(cfg.Sessions, e.MaxFieldBytes())
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	})
	for n := byte(1); n <= 3; n++ {
		e.ScoreTrace(context.Background(), turnTrace(n, "c", "search", false))
	}
	snaps := store.Drain()
	require.Len(t, snaps, 1)
	r := scoreSession(t, e, &snaps[0])
	res := results(r.Report)["knowledge_retention"]
	assert.InDelta(t, 2.0/3, res.Score, 1e-9, res.Reason)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	user := reqs[0].User()
	for n := 1; n <= 3; n++ {
		q := "question " + string(rune('0'+n))
		assert.Equal(t, 1, strings.Count(user, q), "%s once in the prompt", q)
	}
}

// Each turn's LLM calls resend the whole history (benchTurn); the session
// case still holds the conversation once, in turn order.
func TestSessionConversationFromTurnsThatRepeatTheHistory(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "llm_judge", "case": "session", "judge": "j", "criteria": "x"},
	}, "judges": map[string]any{"j": map[string]any{"endpoint": "http://127.0.0.1:1/v1", "model": "m"}}})
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	store := sessions.NewStore(sessions.NewDefaultConfig(), e.MaxFieldBytes())
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	})
	for n := 1; n <= 3; n++ {
		td := benchTurn(n)
		e.ScoreTrace(context.Background(), refsOf(td))
		require.Greater(t, strings.Count(strAttrOf(td, "gen_ai.input.messages"), `"role":"user"`), n-1, "the history is resent")
	}
	snaps := store.Drain()
	require.Len(t, snaps, 1)
	c := snaps[0].Case(pcommon.TraceID{1}, pcommon.SpanID{1})
	require.Len(t, c.Messages, 6, "one user and one assistant message per turn")
	for i, m := range c.Messages {
		assert.Equal(t, []string{"user", "assistant"}[i%2], m.Role)
	}
	assert.Len(t, c.ToolCalls, 6)
	assert.Equal(t, int64(3*3*900), c.Usage.InputTokens)
}

// strAttrOf is the string attribute key of the last span of td that has it.
func strAttrOf(td ptrace.Traces, key string) string {
	out := ""
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		if v, ok := r.Span.Attributes().Get(key); ok {
			out = v.AsString()
		}
	})
	return out
}
