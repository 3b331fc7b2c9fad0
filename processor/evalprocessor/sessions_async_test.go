package evalprocessor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

// slowRemote is a `remote` evaluator endpoint that holds every request
// until released (or the request ends), counting those in flight.
type slowRemote struct {
	srv     *httptest.Server
	mu      sync.Mutex
	now     int
	most    int
	release chan struct{}
	once    sync.Once
}

func (s *slowRemote) open() { s.once.Do(func() { close(s.release) }) }

func newSlowRemote(t *testing.T) *slowRemote {
	s := &slowRemote{release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.now++
		s.most = max(s.most, s.now)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.now--
			s.mu.Unlock()
		}()
		select {
		case <-s.release:
			_, _ = w.Write([]byte(`{"score": 1, "reason": "ok"}`))
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { s.open(); s.srv.Close() })
	return s
}

func (s *slowRemote) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func withSlowRemoteSession(s *slowRemote) func(*Config) {
	return func(c *Config) {
		c.Evaluators = []evaluators.Config{
			{Type: "tool_error"},
			{Type: "remote", Name: "session_remote", Case: adapter.LevelSession,
				Options: map[string]any{"endpoint": s.srv.URL, "timeout": "1m", "retry": map[string]any{"max_attempts": 1}}},
		}
	}
}

// A slow `remote` session evaluator held the session loop: sessions were
// scored one at a time, synchronously (issue 19, finding 7). Now they run
// on the engine's pool like judges: three idle sessions are all at the
// remote service at once (before: one, the loop waiting on it).
func TestSlowRemoteSessionEvaluatorDoesNotBlockTheLoop(t *testing.T) {
	remote := newSlowRemote(t)
	h := newSessionHarness(t, withSlowRemoteSession(remote))
	h.turn(1, "c1", false)
	h.turn(2, "c2", false)
	h.turn(3, "c3", false)
	h.idleTick(2 * time.Minute)
	require.Eventually(t, func() bool { return remote.inFlight() == 3 }, 10*time.Second, time.Millisecond,
		"the three sessions are scored in parallel")
	remote.open()
	h.waitSessionSpans(3)
	for _, sp := range sessionSpans(h.sink) {
		assert.Equal(t, "passed", strAttr(sp, "eval.session_remote.status"))
	}
	assert.Equal(t, int64(3), h.counter(metricSessionsScored, attrReason, reasonIdle))
}

// Shutdown scored pending sessions serially, up to `timeout` each, so one
// slow remote evaluator used the whole shutdown on the first session and
// the rest were dropped. Now every pending session starts at once: each is
// scored with what the context allows (`timeout` for the slow evaluator),
// and none is left unscored.
func TestSessionsShutdownScoresWhatItsContextAllows(t *testing.T) {
	remote := newSlowRemote(t)
	h := newSessionHarness(t, withSlowRemoteSession(remote))
	for i, conv := range []string{"c1", "c2", "c3", "c4"} {
		h.turn(byte(i+1), conv, false)
	}
	spans := h.sink.SpanCount()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	h.shutdown(ctx)
	assert.Len(t, sessionSpans(h.sink), 4, "every pending session scored")
	for _, sp := range sessionSpans(h.sink) {
		assert.Equal(t, "timeout", strAttr(sp, "eval.session_remote.status"))
	}
	assert.Equal(t, spans+4, h.sink.SpanCount())
	assert.Equal(t, int64(4), h.counter(metricSessionsScored, attrReason, reasonShutdown))
	assert.Zero(t, h.counter(metricSessionsUnscored, attrReason, reasonShutdown))
}

// Sessions the shutdown has no time for are counted, and their turn
// records dropped (with storage: kept for the next start); no span is.
func TestSessionsShutdownWithoutTimeCountsTheRest(t *testing.T) {
	h := newSessionHarness(t, nil)
	h.turn(1, "c1", false)
	h.turn(2, "c1", false)
	h.turn(3, "c2", false)
	spans := h.sink.SpanCount()
	h.shutdownNow()
	assert.Empty(t, sessionSpans(h.sink))
	assert.Equal(t, spans, h.sink.SpanCount(), "no span is lost: only turn records go")
	assert.Equal(t, int64(2), h.counter(metricSessionsUnscored, attrReason, reasonShutdown))
	assert.Equal(t, int64(3), h.counter(metricSessionTurnsDropped, attrReason, reasonShutdown))
}

// With storage:, turns are written as they are recorded: a collector
// killed (nothing it does after reaches the disk) loses none of them, and
// a turn after the restart is scored with the turns from before (before:
// the sessions were written at shutdown only, and the kill lost them).
func TestSessionTurnsSurviveAKill(t *testing.T) {
	h1 := newSessionHarnessStorage(t, t.TempDir())
	h1.turn(1, "conv-a", false)
	h1.turn(2, "conv-a", false)
	h1.turn(4, "conv-b", false)
	h1.storage.dead.Store(true) // SIGKILL: from here on nothing reaches the file
	h2 := h1.restart()
	h2.turn(3, "conv-a", true)
	h2.idleTick(2 * time.Minute)
	h2.waitSessionSpans(2)
	byConv := map[string]string{}
	for _, sp := range sessionSpans(h2.sink) {
		byConv[strAttr(sp, "gen_ai.conversation.id")] = strAttr(sp, "eval.session.turns")
	}
	assert.Equal(t, map[string]string{"conv-a": "3", "conv-b": "1"}, byConv,
		"conv-a: two turns from before the kill and the new one; conv-b, never scored, is scored after the restart")
}

// Sessions evicted beyond max_sessions wait at most max_sessions deep while
// every slot is busy; beyond that the oldest waiting one is dropped,
// counted and logged, instead of piling up.
func TestEvictedSessionsDoNotPileUp(t *testing.T) {
	remote := newSlowRemote(t)
	h := newSessionHarnessWith(t, func(c *Config) {
		withSlowRemoteSession(remote)(c)
		c.Sessions.MaxSessions = 1
	}, componenttest.NewNopHost(), func(p *evalProcessor) { p.sess.maxInFlight = 1 })
	h.turn(1, "c1", false)
	h.turn(2, "c2", false) // c1 evicted: scored at once, the remote holds it
	require.Eventually(t, func() bool { return remote.inFlight() == 1 }, 5*time.Second, time.Millisecond)
	h.turn(3, "c3", false) // c2 evicted: waits (the one slot is busy)
	h.turn(4, "c4", false) // c3 evicted: c2, the oldest waiting, is dropped
	assert.Equal(t, int64(1), h.counter(metricSessionsUnscored, attrReason, reasonBacklog))
	assert.Equal(t, int64(1), h.counter(metricSessionTurnsDropped, attrReason, reasonBacklog))
	remote.open()
	h.waitSessionSpans(2)
	got := map[string]bool{}
	for _, sp := range sessionSpans(h.sink) {
		got[strAttr(sp, "gen_ai.conversation.id")] = true
	}
	assert.Equal(t, map[string]bool{"c1": true, "c3": true}, got)
}
