package evalprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// sessionHarness is a harness whose sessions' idle checks tick by hand
// (sessTick), apart from the main loop's ticks (clk.advance).
type sessionHarness struct {
	*harness
	sessTick chan time.Time
	logs     *consumertest.LogsSink
	// storage and dir: with newSessionHarnessStorage.
	storage *testStorage
	dir     string
}

func newSessionHarness(t *testing.T, mut func(*Config)) *sessionHarness {
	t.Helper()
	return newSessionHarnessOn(t, mut, componenttest.NewNopHost())
}

// newSessionHarnessOn is newSessionHarness started on host (e.g. one with a
// storage extension).
func newSessionHarnessOn(t *testing.T, mut func(*Config), host component.Host) *sessionHarness {
	t.Helper()
	return newSessionHarnessWith(t, mut, host, nil)
}

// newSessionHarnessStorage is newSessionHarness with `storage:` on a
// file storage in dir (h.storage).
func newSessionHarnessStorage(t *testing.T, dir string) *sessionHarness {
	t.Helper()
	withStorage := func(c *Config) {
		id := storageID
		c.Storage = &id
	}
	st := startFileStorage(t, dir)
	h := newSessionHarnessOn(t, withStorage, extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}})
	h.storage, h.dir = st, dir
	return h
}

// newSessionHarnessWith is newSessionHarnessOn with prep run on the
// processor before it starts.
func newSessionHarnessWith(t *testing.T, mut func(*Config), host component.Host, prep func(*evalProcessor)) *sessionHarness {
	t.Helper()
	h := &sessionHarness{sessTick: make(chan time.Time), logs: new(consumertest.LogsSink)}
	cfg := createDefaultConfig()
	cfg.Wait = time.Second
	cfg.Workers = 2
	cfg.Sessions.Idle = time.Minute
	cfg.Evaluators = []evaluators.Config{
		{Type: "tool_error"},
		{Type: "tool_error", Name: "session_errors", Case: adapter.LevelSession},
		{Type: "tool_efficiency", Name: "session_loops", Case: adapter.LevelSession},
	}
	if mut != nil {
		mut(cfg)
	}
	require.NoError(t, cfg.Config.Validate())
	h.harness = &harness{t: t, sink: new(consumertest.TracesSink), clk: newFakeClock(), tel: componenttest.NewTelemetry(), cfg: cfg}
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	p, err := newProcessor(set, cfg, h.sink, h.clk.clock())
	require.NoError(t, err)
	p.nextLogs = h.logs
	p.sess = &sessionState{newTicker: func(time.Duration) ticker { return chanTicker(h.sessTick) }}
	if prep != nil {
		prep(p)
	}
	h.start(p, host)
	return h
}

type chanTicker chan time.Time

func (c chanTicker) C() <-chan time.Time { return c }
func (c chanTicker) Stop()               {}

// turn sends one turn of conversation conv as trace tr (agent span with
// the conversation id, an LLM call, a tool call errored when failed) and
// waits until the main loop has scored and forwarded it.
func (h *sessionHarness) turn(tr byte, conv string, failed bool) {
	h.t.Helper()
	b := newBatch()
	b.agent(tr).Attributes().PutStr("gen_ai.conversation.id", conv)
	b.llm(tr, 2, "question")
	b.tool(tr, 3, "search_flights", failed)
	h.consume(b.td)
	h.clk.advance(2 * time.Second) // past wait: scored, its turn recorded
	require.Eventually(h.t, func() bool { return len(spansOf(h.sink, tr)) == 3 }, 5*time.Second, time.Millisecond)
}

// sessionSpans are the evaluate_session spans forwarded so far.
// waitSessionSpans waits until the sink has n evaluate_session spans.
func (h *sessionHarness) waitSessionSpans(n int) {
	h.t.Helper()
	waitCount(h.t, "evaluate_session spans", n, func() int { return len(sessionSpans(h.sink)) })
}

// restart shuts h down, stops its storage and starts a new harness on a
// new storage of the same directory.
func (h *sessionHarness) restart() *sessionHarness {
	h.shutdown(context.Background())
	h.storage.stop()
	return newSessionHarnessStorage(h.t, h.dir)
}

func sessionSpans(sink *consumertest.TracesSink) []ptrace.Span {
	var out []ptrace.Span
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if r.Span.Name() == sessions.SpanName {
				out = append(out, r.Span)
			}
		})
	}
	return out
}

// idleTick moves time on by d and runs the sessions' idle check.
func (h *sessionHarness) idleTick(d time.Duration) {
	h.clk.advance(d)
	h.sessTick <- h.clk.now()
}

func TestSessionScoredWhenIdleAndAgainAfterGrowth(t *testing.T) {
	h := newSessionHarness(t, nil)
	h.turn(1, "conv-a", false)
	h.turn(2, "conv-b", false) // interleaved with conv-a
	h.turn(3, "conv-a", false)
	h.turn(4, "conv-a", true)
	h.idleTick(30 * time.Second)
	assert.Empty(t, sessionSpans(h.sink), "not idle yet")

	// conv-b went idle first (its last turn is older), then conv-a.
	h.idleTick(time.Minute)
	h.waitSessionSpans(2)
	byConv := map[string]ptrace.Span{}
	for _, sp := range sessionSpans(h.sink) {
		byConv[strAttr(sp, "gen_ai.conversation.id")] = sp
	}
	a, b := byConv["conv-a"], byConv["conv-b"]
	require.Equal(t, 3, a.Links().Len())
	for i, tr := range []byte{1, 3, 4} {
		assert.Equal(t, tid(tr), a.Links().At(i).TraceID(), "turn %d", i)
		assert.Equal(t, sid(1), a.Links().At(i).SpanID(), "the case (agent) span")
	}
	assert.Equal(t, "3", strAttr(a, "eval.session.turns"))
	assert.Equal(t, "failed", strAttr(a, "eval.session_errors.status"))
	assert.Equal(t, "travel_agent", strAttr(a, "gen_ai.agent.name"))
	assert.Equal(t, "1", strAttr(b, "eval.session.turns"))
	assert.Equal(t, "passed", strAttr(b, "eval.session_errors.status"))
	assert.Equal(t, tid(2), b.Links().At(0).TraceID(), "conversations never mix")
	assert.Equal(t, int64(2), h.counter(metricSessionsScored, attrReason, reasonIdle))
	assert.Equal(t, int64(4), h.counter(metricSessionTurns))
	// The turns' own spans carry only the trace-level results.
	assert.Equal(t, "", strAttr(spansOf(h.sink, 4)[1], "eval.session_errors.status"))
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 4)[1], "eval.tool_error.status"))

	// Result log records for the session span, under its resource.
	recs := resultLogRecords(h.logs)
	assert.Len(t, recs, 4, "2 evaluators x 2 sessions")

	// Nothing more while nothing grows; a fifth turn of conv-a gives a
	// second scoring with all four turns, an idle period later.
	h.idleTick(time.Minute)
	h.turn(5, "conv-a", false)
	h.idleTick(30 * time.Second)
	assert.Len(t, sessionSpans(h.sink), 2)
	h.idleTick(31 * time.Second)
	h.waitSessionSpans(3)
	again := sessionSpans(h.sink)[2]
	assert.Equal(t, "conv-a", strAttr(again, "gen_ai.conversation.id"))
	assert.Equal(t, "4", strAttr(again, "eval.session.turns"))
	assert.NotEqual(t, a.TraceID(), again.TraceID())

	// Loop safety: the evaluate_session span fed back in is forwarded at
	// once, never held, never a turn.
	td := ptrace.NewTraces()
	for _, got := range h.sink.AllTraces() {
		adapter.ForEachSpan(got, func(r adapter.SpanRef) {
			if r.Span.Name() == sessions.SpanName {
				rs := td.ResourceSpans().AppendEmpty()
				r.ResourceSpans.Resource().CopyTo(rs.Resource())
				ss := rs.ScopeSpans().AppendEmpty()
				r.ScopeSpans.Scope().CopyTo(ss.Scope())
				r.Span.CopyTo(ss.Spans().AppendEmpty())
			}
		})
	}
	n := h.sink.SpanCount()
	h.consume(td)
	assert.Equal(t, n+3, h.sink.SpanCount(), "forwarded synchronously")
	assert.Equal(t, int64(5), h.counter(metricSessionTurns))
}

func resultLogRecords(sink *consumertest.LogsSink) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range sink.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, _ plog.ScopeLogs) {
			if lr.EventName() == "gen_ai.evaluation.result" {
				if v, ok := lr.Attributes().Get("gen_ai.evaluation.name"); ok && v.Str() != "tool_error" {
					out = append(out, lr)
				}
			}
		})
	}
	return out
}

func TestSessionsOverflowAndShutdown(t *testing.T) {
	h := newSessionHarness(t, func(c *Config) { c.Sessions.MaxSessions, c.Sessions.MaxTurns = 2, 1 })
	h.turn(1, "c1", false)
	h.turn(5, "c1", false) // max_turns 1: turn 1's record goes
	assert.Equal(t, int64(1), h.counter(metricSessionTurnsDropped, attrReason, "max_turns"))
	h.turn(2, "c2", false)
	h.turn(3, "c3", false) // c1, the least recently active, is scored early
	h.waitSessionSpans(1)
	assert.Equal(t, "c1", strAttr(sessionSpans(h.sink)[0], "gen_ai.conversation.id"))
	assert.Equal(t, "1", strAttr(sessionSpans(h.sink)[0], "eval.session.turns"))
	assert.Equal(t, "1", strAttr(sessionSpans(h.sink)[0], "eval.session.turns_dropped"))
	assert.Equal(t, int64(1), h.counter(metricSessionsScored, attrReason, reasonOverflow))
	held, ok := h.gauge(metricSessionsHeld)
	assert.True(t, ok && held == 2, "%s = %d (recorded: %v), want max_sessions 2", metricSessionsHeld, held, ok)

	// Shutdown scores the sessions with unscored turns.
	h.shutdown(context.Background())
	assert.Len(t, sessionSpans(h.sink), 3)
	assert.Equal(t, int64(2), h.counter(metricSessionsScored, attrReason, reasonShutdown))
	assert.Zero(t, h.counter(metricSessionTurnsDropped, attrReason, reasonShutdown))
}

// With storage:, the sessions' turns outlive a restart: a turn after it is
// scored with the turns from before it.
func TestSessionsKeptInStorageAcrossRestart(t *testing.T) {
	h1 := newSessionHarnessStorage(t, t.TempDir())
	h1.turn(1, "conv-a", false)
	h1.turn(2, "conv-a", false)
	h1.idleTick(2 * time.Minute)
	h1.waitSessionSpans(1)
	h2 := h1.restart()
	h2.turn(3, "conv-a", true)
	h2.idleTick(2 * time.Minute)
	h2.waitSessionSpans(1)
	sp := sessionSpans(h2.sink)[0]
	assert.Equal(t, "3", strAttr(sp, "eval.session.turns"), "the two turns from before the restart and the new one")
	assert.Equal(t, "failed", strAttr(sp, "eval.session_errors.status"))
	require.Equal(t, 3, sp.Links().Len())
	assert.Equal(t, tid(1), sp.Links().At(0).TraceID())
}

// With eval in two traces pipelines, an evaluate_session span goes through
// the pipeline of the session's last turn (contract §17).
func TestSessionSpanGoesWhereItsLastTurnWent(t *testing.T) {
	first, second := new(consumertest.TracesSink), new(consumertest.TracesSink)
	var r2 route
	h := newSessionHarnessWith(t, func(c *Config) {
		c.Evaluators = []evaluators.Config{{Type: "tool_error", Name: "session_errors", Case: adapter.LevelSession}}
	}, componenttest.NewNopHost(), func(p *evalProcessor) {
		_, err := p.routes.addTraces(first)
		require.NoError(t, err)
		r2, err = p.routes.addTraces(second)
		require.NoError(t, err)
	})
	p := h.p

	send := func(tr byte, rt route) {
		b := newBatch()
		b.agent(tr).Attributes().PutStr("gen_ai.conversation.id", "conv-1")
		b.tool(tr, 3, "search_flights", false)
		require.NoError(t, p.consumeTraces(context.Background(), b.td, rt))
		h.clk.advance(2 * time.Second)
	}
	send(1, 0)
	require.Eventually(t, func() bool { return first.SpanCount() == 2 }, 5*time.Second, time.Millisecond)
	send(2, r2) // the last turn came through the second pipeline
	require.Eventually(t, func() bool { return second.SpanCount() == 2 }, 5*time.Second, time.Millisecond)
	h.idleTick(2 * time.Minute)
	require.Eventually(t, func() bool { return len(sessionSpans(second)) == 1 }, 5*time.Second, time.Millisecond)
	assert.Empty(t, sessionSpans(first))
}
