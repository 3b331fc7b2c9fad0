package webhookexporter

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startLimited starts an exporter, sending to a new recorder, that sends
// at most perMinute alerts a minute by a fake clock.
func startLimited(t *testing.T, perMinute int) (*recorder, *harness, *fakeClock) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.MaxAlertsPerMinute = perMinute
	clock := newFakeClock()
	return rec, start(t, cfg, clock.Now), clock
}

func TestRateLimitFolding(t *testing.T) {
	rec, h, clock := startLimited(t, 2)
	ctx := context.Background()
	consume := func(results ...evaluatorsResult) {
		t.Helper()
		require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(results...)))
	}

	consume(failed("a", 0, 1, "")) // t0: sent (1/2)
	clock.Advance(10 * time.Second)
	consume(failed("a", 0, 1, "")) // t0+10s: sent (2/2)
	require.Len(t, rec.requests(), 2)

	clock.Advance(10 * time.Second)
	consume(failed("a", 0, 1, ""), failed("b", 0, 1, ""), failed("c", 0, 1, "")) // t0+20s: all 3 suppressed
	clock.Advance(30 * time.Second)
	consume(failed("b", 0, 1, "")) // t0+50s: window still full, suppressed
	assert.Len(t, rec.requests(), 2, "nothing sent while the window is full")
	assert.Equal(t, int64(4), h.counter(t, "otelcol_exporter_webhook_alerts_suppressed", ""))

	clock.Advance(11 * time.Second) // t0+61s: the t0 alert left the window
	consume(failed("c", 0, 1, "late"))
	require.Len(t, rec.requests(), 3)
	p := rec.payload(t, 2)
	require.Len(t, p.Alerts, 1)
	assert.Equal(t, "c", p.Alerts[0].Evaluator)
	assert.Equal(t, 4, p.Suppressed)
	assert.Equal(t, map[string]int{"a": 1, "b": 2, "c": 1}, p.SuppressedByEvaluator)

	clock.Advance(10 * time.Second) // t0+71s: t0+10s left too
	consume(failed("a", 0, 1, ""))
	p = rec.payload(t, 3)
	assert.Equal(t, 0, p.Suppressed, "folded counts are reported once")
	assert.Nil(t, p.SuppressedByEvaluator)

	assert.Equal(t, int64(4), h.counter(t, "otelcol_exporter_webhook_alerts_sent", ""))
	assert.Equal(t, int64(4), h.counter(t, "otelcol_exporter_webhook_alerts_suppressed", ""))
}

func TestRateLimitExcessOfOneBatchIsFoldedIntoIt(t *testing.T) {
	rec, h, _ := startLimited(t, 2)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(),
		agentTraces(failed("a", 0, 1, ""), failed("b", 0, 1, ""), failed("c", 0, 1, ""))))
	p := rec.payload(t, 0)
	assert.Len(t, p.Alerts, 2)
	assert.Equal(t, 1, p.Suppressed)
	assert.Equal(t, map[string]int{"c": 1}, p.SuppressedByEvaluator)
}

// A failed send is retried by exporterhelper with the same data; the limiter
// must not count its alerts or its excess twice.
func TestRateLimitRetryDoesNotDoubleCount(t *testing.T) {
	rec, h, clock := startLimited(t, 2)
	ctx := context.Background()

	// Fill the window and leave one suppressed alert pending.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("a", 0, 1, ""), failed("b", 0, 1, ""))))
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("p", 0, 1, ""))))
	require.Len(t, rec.requests(), 1)
	clock.Advance(61 * time.Second)

	rec.answer(status(http.StatusBadGateway), status(http.StatusBadGateway))
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("x", 0, 1, ""), failed("y", 0, 1, ""), failed("z", 0, 1, ""))))

	reqs := rec.requests()
	require.Len(t, reqs, 4) // 1 + 2 failures + success
	for i := 1; i <= 3; i++ {
		p := rec.payload(t, i)
		assert.Len(t, p.Alerts, 2, "attempt %d", i)
		assert.Equal(t, 2, p.Suppressed, "attempt %d: pending p + excess z", i)
		assert.Equal(t, map[string]int{"p": 1, "z": 1}, p.SuppressedByEvaluator)
	}
	assert.Equal(t, int64(4), h.counter(t, "otelcol_exporter_webhook_alerts_sent", ""))
	assert.Equal(t, int64(2), h.counter(t, "otelcol_exporter_webhook_alerts_suppressed", ""))

	// The window holds exactly the two alerts of the successful attempt.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("q", 0, 1, ""))))
	assert.Len(t, rec.requests(), 4, "limit reached")
}

func TestRateLimitPermanentFailureKeepsCounts(t *testing.T) {
	rec, h, clock := startLimited(t, 1)
	ctx := context.Background()

	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("a", 0, 1, ""))))
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("p", 0, 1, "")))) // pending 1
	clock.Advance(61 * time.Second)
	rec.answer(status(http.StatusBadRequest))
	require.Error(t, h.inner.ConsumeTraces(ctx, agentTraces(failed("x", 0, 1, ""), failed("y", 0, 1, ""))))
	// The rejected request carried p (pending) and y (excess); both stay pending.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("w", 0, 1, ""))))
	p := rec.payload(t, 2)
	assert.Equal(t, "w", p.Alerts[0].Evaluator)
	assert.Equal(t, map[string]int{"p": 1, "y": 1}, p.SuppressedByEvaluator)
	assert.Equal(t, 2, p.Suppressed)
}

func TestShutdownLogsSuppressed(t *testing.T) {
	rec, h, _ := startLimited(t, 1)
	ctx := context.Background()
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("a", 0, 1, ""), failed("b", 0, 1, ""), failed("b", 0.2, 1, ""))))
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("b", 0, 1, ""))))
	// "b" twice on one span is one alert: the first request carried 1 suppressed (b).
	assert.Equal(t, 1, rec.payload(t, 0).Suppressed)

	h.shutdown(t)
	entries := h.logs.FilterField(zapInt("suppressed", 1)).All()
	require.Len(t, entries, 1)
	assert.Equal(t, "b=1", entries[0].ContextMap()["by_evaluator"])
}

func TestLimiterUnit(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(2, clock.Now)
	al := func(names ...string) []Alert {
		out := make([]Alert, len(names))
		for i, n := range names {
			out[i] = Alert{Evaluator: n}
		}
		return out
	}
	send, res, sup := l.reserve(al("a", "b", "c"))
	assert.Len(t, send, 2)
	assert.Equal(t, 0, sup)
	assert.Equal(t, 1, res.folded().count)
	res.cancel(false)
	// Same decision again after a cancel.
	send, res, _ = l.reserve(al("a", "b", "c"))
	assert.Len(t, send, 2)
	assert.Equal(t, 1, res.folded().count)
	// Committed (nothing to do): the window is now full.
	send, _, sup = l.reserve(al("d"))
	assert.Empty(t, send)
	assert.Equal(t, 1, sup)
	clock.Advance(time.Minute + time.Nanosecond)
	send, res, _ = l.reserve(al("e"))
	assert.Len(t, send, 1)
	assert.Equal(t, "d=1", res.folded().String())
	assert.Equal(t, 0, l.drain().count)

	unlimited := newLimiter(0, clock.Now)
	send, res, _ = unlimited.reserve(al("a", "b", "c"))
	assert.Len(t, send, 3)
	assert.Equal(t, 0, res.folded().count)
}
