package evalprocessor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// gate is a real sink behind a switch: while refusing, it answers every
// request holding a GenAI span with err (the backend of released spans
// is down); other requests go through.
type gate struct {
	sink     consumertest.TracesSink
	err      error
	refusing atomic.Bool
	refused  atomic.Int64
}

// refusingHarness is a harness (with fastRetry) whose next consumer is a
// gate refusing with msg; logger may be nil.
func refusingHarness(t *testing.T, msg string, logger *zap.Logger) (*harness, *gate) {
	g := &gate{err: errors.New(msg)}
	g.refusing.Store(true)
	return newHarnessWith(t, nil, g, logger, fastRetry), g
}

func (g *gate) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (g *gate) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if g.refusing.Load() && hasGenAI(td) {
		g.refused.Add(1)
		return g.err
	}
	return g.sink.ConsumeTraces(ctx, td)
}

func hasGenAI(td ptrace.Traces) bool {
	found := false
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { found = found || adapter.IsGenAI(r.Span) })
	return found
}

// fastRetry makes refused releases retry at once (backoff is not what
// these tests are about).
func fastRetry(p *evalProcessor) {
	p.cfg.ReleaseRetry.InitialInterval = time.Microsecond
	p.cfg.ReleaseRetry.MaxInterval = time.Millisecond
}

// tidN is trace id number n.
func tidN(n int) pcommon.TraceID {
	var id pcommon.TraceID
	id[0] = 0xee
	binary.BigEndian.PutUint64(id[8:], uint64(n))
	return id
}

// bigTrace adds the agent span of trace tr and n plain spans under it.
func bigTrace(b *batch, tr byte, n int) {
	b.agent(tr)
	for i := 0; i < n; i++ {
		sp := b.spans.AppendEmpty()
		sp.SetName("GET /x")
		sp.SetTraceID(tid(tr))
		var id pcommon.SpanID
		id[0] = 0xaa
		binary.BigEndian.PutUint32(id[4:], uint32(i))
		sp.SetSpanID(id)
		sp.SetParentSpanID(sid(1))
	}
}

func TestReleasedTracesGoInOneRequest(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	for tr := byte(1); tr <= 5; tr++ {
		agentTrace(b, tr, false)
	}
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(25)
	require.Len(t, h.sink.AllTraces(), 1, "five traces released by one tick: one request")
	assert.Equal(t, int64(5), h.counter(metricTracesScored))

	// A tick's release larger than maxRequestSpans is cut at trace
	// boundaries: 3001 + 1001 + 1001 spans make two requests.
	h.sink.Reset()
	b = newBatch()
	bigTrace(b, 10, 3000)
	bigTrace(b, 11, 1000)
	bigTrace(b, 12, 1000)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5003)
	require.Len(t, h.sink.AllTraces(), 2)
	for _, td := range h.sink.AllTraces() {
		assert.LessOrEqual(t, td.SpanCount(), maxRequestSpans)
	}
}

func TestRetryableRefusalKeepsSpans(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h, g := refusingHarness(t, "sending queue is full", zap.New(core))
	b := newBatch()
	agentTrace(b, 1, true)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return g.refused.Load() >= 3 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 0, g.sink.SpanCount())
	assert.Equal(t, int64(5), h.counter(metricReleaseBacklog), "kept while refused")
	g.refusing.Store(false)
	require.Eventually(t, func() bool { return g.sink.SpanCount() == 5 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "failed", strAttr(spansOf(&g.sink, 1)[1], "eval.tool_error.status"), "scored, then kept")
	assert.GreaterOrEqual(t, h.counter(metricReleaseRetries), int64(3))
	assert.Equal(t, int64(0), h.counter(metricSpansDropped))
	require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) == 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, logs.FilterMessageSnippet("it is retried on its own").Len(), "warned once per outage")
	assert.Equal(t, 1, logs.FilterMessageSnippet("accepts released data again").Len())
}

// fillBacklog starts a processor whose next consumer refuses GenAI spans,
// and releases one trace larger than the backlog bound into it.
func fillBacklog(t *testing.T) (*harness, *gate) {
	h, g := refusingHarness(t, "backend unavailable", nil)
	b := newBatch()
	bigTrace(b, 1, maxBacklogSpans) // one more span than the bound, with the agent
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) > maxBacklogSpans },
		5*time.Second, time.Millisecond)
	return h, g
}

func TestBackPressureRefusesNewGenAIData(t *testing.T) {
	h, g := fillBacklog(t)

	// New GenAI data is refused with a retryable error, and none of it is
	// kept or forwarded (a retry duplicates nothing).
	fresh := newBatch()
	agentTrace(fresh, 2, false)
	err := h.p.ConsumeTraces(context.Background(), fresh.td)
	require.ErrorIs(t, err, errBackPressure)
	assert.False(t, consumererror.IsPermanent(err), "retryable: receivers answer 503/UNAVAILABLE")
	assert.Equal(t, int64(5), h.counter(metricSpansRefused))
	assert.Equal(t, int64(0), h.counter(metricTracesHeld))

	// Non-GenAI spans still go to the next consumer at once.
	plain := newBatch()
	plain.plain(7, 1, 0)
	require.NoError(t, h.p.ConsumeTraces(context.Background(), plain.td))
	assert.Len(t, spansOf(&g.sink, 7), 1)

	// Once the backend is back, the backlog drains and the retried
	// request is held and scored like any other.
	g.refusing.Store(false)
	require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, h.p.ConsumeTraces(context.Background(), fresh.td))
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return len(spansOf(&g.sink, 2)) == 5 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "passed", strAttr(spansOf(&g.sink, 2)[1], "eval.tool_error.status"))
	assert.Equal(t, maxBacklogSpans+1+1+5, g.sink.SpanCount(), "nothing lost")
}

func TestShutdownFlushesBacklog(t *testing.T) {
	t.Run("delivered when the next consumer recovers in time", func(t *testing.T) {
		h, g := refusingHarness(t, "unavailable", nil)
		b := newBatch()
		agentTrace(b, 1, false)
		h.consume(b.td)
		h.clk.advance(time.Second)
		require.Eventually(t, func() bool { return g.refused.Load() >= 1 }, 5*time.Second, time.Millisecond)
		g.refusing.Store(false)
		h.shutdown(context.Background())
		assert.Equal(t, 5, g.sink.SpanCount())
		assert.Equal(t, int64(0), h.counter(metricSpansDropped))
	})
	t.Run("counted and logged when shutdown's time is up", func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		h, g := refusingHarness(t, "unavailable", zap.New(core))
		b := newBatch()
		agentTrace(b, 1, false)
		agentTrace(b, 2, false)
		h.consume(b.td)
		h.shutdownNow() // returns although the next consumer never accepts
		assert.Equal(t, 0, g.sink.SpanCount())
		assert.Equal(t, int64(10), h.counter(metricSpansDropped, "reason", "shutdown"))
		assert.Equal(t, 1, logs.FilterMessageSnippet("when shutdown's time was up").Len())
		assert.Equal(t, int64(0), h.counter(metricReleaseBacklog))
	})
}

func TestDecisionsOutliveOverflowChurn(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxTraces = 2 }, nil, nil)
	const n = 2000 // the old memory kept 1024 ids
	for i := 0; i < n; i++ {
		b := newBatch()
		agentTrace(b, 1, false)
		setTraceID(b.td, tidN(i))
		h.consume(b.td)
	}
	h.waitSpans((n - 2) * 5)
	// A late root span of the first trace: late, forwarded at once, never
	// held as a new root-only trace (which would be scored as a failure).
	late := newBatch()
	late.agent(1)
	setTraceID(late.td, tidN(0))
	h.consume(late.td)
	h.waitSpans((n-2)*5 + 1)
	assert.Equal(t, int64(1), h.counter(metricSpansLate))
	assert.Equal(t, int64(2), h.counter(metricTracesHeld))

	// Forgotten only once the retention (wait + timeout + margin) has
	// passed: then the id starts a new trace.
	h.clk.advance(h.cfg.Wait + h.cfg.Timeout + decisionMargin + time.Minute)
	h.waitSpans(n*5 + 1)
	h.consume(late.td)
	h.clk.advance(0)
	assert.Equal(t, int64(1), h.counter(metricTracesHeld))
	assert.Equal(t, int64(0), h.counter(metricDecisionsForgotten))
}

func TestDecisionsByTimeWithHardCap(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	d := newDecisions(time.Second, time.Second, 4)
	dir := map[pcommon.TraceID]traceState{}
	forgotten := 0
	for i := 0; i < 3; i++ {
		forgotten += d.markDone(dir, tidN(i), t0)
	}
	for i := 3; i < 6; i++ {
		forgotten += d.markDone(dir, tidN(i), t0.Add(d.width))
	}
	assert.Equal(t, 3, forgotten, "the oldest bucket is dropped at the cap, and counted")
	assert.Len(t, dir, 3)
	for i := 3; i < 6; i++ {
		assert.True(t, dir[tidN(i)].done())
	}
	d.expire(dir, t0.Add(d.retention))
	assert.Len(t, dir, 3, "kept for the whole retention")
	d.expire(dir, t0.Add(d.retention+2*d.width))
	assert.Empty(t, dir)
	assert.Equal(t, 0, d.total)

	// An id held again after it was forgotten is not removed by the
	// expiry of an older bucket.
	d = newDecisions(time.Second, time.Second, 100)
	d.markDone(dir, tidN(1), t0)
	d.markDone(dir, tidN(1), t0.Add(2*d.width))
	d.expire(dir, t0.Add(d.retention+d.width))
	assert.True(t, dir[tidN(1)].done())
}

func TestResentRequestScoredOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Evaluators = []evaluators.Config{{Type: "tool_trajectory", Options: map[string]any{"mode": "strict",
			"expected": []any{map[string]any{"name": "search_flights"}, map[string]any{"name": "book_hotel"}}}}}
	}, nil, nil)
	b := newBatch()
	agentTrace(b, 1, false)
	resent := ptrace.NewTraces() // the processor owns (and moves from) what it is given
	b.td.CopyTo(resent)
	h.consume(b.td)
	h.consume(resent) // the client resends after a lost response
	h.clk.advance(time.Second)
	h.waitSpans(10)
	assert.Equal(t, int64(5), h.counter(metricSpansDuplicate))
	var statuses []string
	for _, td := range h.sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if r.Span.SpanID() == sid(1) {
				statuses = append(statuses, strAttr(r.Span, "eval.tool_trajectory.status"))
			}
		})
	}
	// Scored once and passed (with the resent calls counted twice a strict
	// trajectory fails); the resent root is forwarded as received.
	assert.ElementsMatch(t, []string{"passed", ""}, statuses)
	assert.Equal(t, int64(1), h.counter(metricEvaluations, "evaluator", "tool_trajectory", "status", "passed"))
}

func TestSharedSpanIDResultsOnCaseSpan(t *testing.T) {
	for _, toolFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("toolFirst=%v", toolFirst), func(t *testing.T) { sharedSpanID(t, toolFirst) })
	}
}

// sharedSpanID: a tool span of the run carries the agent span's id; it
// arrives after the agent span or, as SDKs export children first, before.
func sharedSpanID(t *testing.T, toolFirst bool) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	if toolFirst {
		clash := b.tool(1, 9, "search_flights", false)
		clash.SetSpanID(sid(1))
	}
	agentTrace(b, 1, true)
	if !toolFirst {
		clash := b.tool(1, 9, "search_flights", false)
		clash.SetSpanID(sid(1)) // a different span with the agent span's id
	}
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(6)
	var agent, tool int
	for _, td := range h.sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if r.Span.SpanID() != sid(1) {
				return
			}
			if r.Span.Name() == "invoke_agent travel_agent" {
				agent++
				assert.Equal(t, "failed", strAttr(r.Span, "eval.tool_error.status"))
			} else {
				tool++
				assert.Empty(t, strAttr(r.Span, "eval.tool_error.status"), "results never go on the other span")
			}
		})
	}
	assert.Equal(t, 1, agent)
	assert.Equal(t, 1, tool, "both spans are forwarded")
	assert.Equal(t, int64(0), h.counter(metricSpansDuplicate), "two different spans, not a resent one")
	assert.Positive(t, h.counter(metricBadInputProblems), "the shared id is bad input, counted")
}

func TestInvalidTraceIDForwardedAtOnce(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	agentTrace(b, 1, false)
	setTraceID(b.td, pcommon.TraceID{})
	agentTrace(b, 2, false) // a valid trace in the same batch is held
	h.consume(b.td)
	assert.Equal(t, 5, h.sink.SpanCount(), "forwarded within ConsumeTraces")
	assert.Equal(t, int64(5), h.counter(metricSpansInvalidID))
	h.clk.advance(0)
	assert.Equal(t, int64(1), h.counter(metricTracesHeld))
}

// stuckScorer scores like the engine, but only once the test lets it go:
// an evaluator that ignores its context.
type stuckScorer struct {
	started chan struct{}
	unblock chan struct{}
	exited  sync.WaitGroup
}

func newStuckScorer(t *testing.T) *stuckScorer {
	s := &stuckScorer{started: make(chan struct{}, 16), unblock: make(chan struct{})}
	t.Cleanup(func() {
		close(s.unblock)
		s.exited.Wait()
	})
	return s
}

func (s *stuckScorer) install(p *evalProcessor) {
	p.pool.score = func(ctx context.Context, refs []adapter.SpanRef, opts engine.ScoreOptions, done func(engine.Report)) {
		s.exited.Add(1)
		defer s.exited.Done()
		s.started <- struct{}{}
		<-s.unblock
		p.eng.ScoreTraceAsync(ctx, refs, opts, done)
	}
}

func TestEvaluatorIgnoringDeadline(t *testing.T) {
	s := newStuckScorer(t)
	h := newHarnessWith(t, func(c *Config) { c.Timeout = 10 * time.Millisecond }, nil, nil, func(p *evalProcessor) {
		s.install(p)
		p.pool.grace = 0
	})
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	<-s.started
	h.waitSpans(5) // while the scorer is still stuck
	assert.Equal(t, int64(5), h.counter(metricSpansUnscored, "reason", "timeout"))
	assert.Equal(t, int64(0), h.counter(metricTracesHeld))

	// The worker is free: the next trace is released too.
	b = newBatch()
	agentTrace(b, 2, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	<-s.started
	h.waitSpans(10)

	// The late scorer finishes on spans already forwarded: the engine's
	// guard keeps it from writing them (the race detector would see it).
	s.unblock <- struct{}{}
	s.unblock <- struct{}{}
	s.exited.Wait()
	assert.Equal(t, int64(0), h.counter(metricTracesScored), "the late results are discarded")
	assert.Empty(t, strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
}

func TestTracesHeldCountsTracesBeingScored(t *testing.T) {
	s := newStuckScorer(t)
	h := newHarnessWith(t, nil, nil, nil, s.install)
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	<-s.started
	assert.Equal(t, int64(1), h.counter(metricTracesHeld), "released, being scored: still held")
	s.unblock <- struct{}{}
	h.waitSpans(5)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, int64(0), h.counter(metricTracesHeld))
}

func TestShutdownDoesNotWaitForStuckEvaluator(t *testing.T) {
	s := newStuckScorer(t)
	h := newHarnessWith(t, func(c *Config) { c.Timeout = time.Hour }, nil, nil, s.install)
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	<-s.started
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-time.After(10 * time.Millisecond); cancel() }()
	h.shutdown(ctx) // returns once ctx ends although the scorer never does
	assert.Equal(t, 5, h.sink.SpanCount(), "the spans go on unscored")
	assert.Equal(t, int64(5), h.counter(metricSpansUnscored, "reason", "shutdown"))
	assert.Empty(t, strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
}

// The real OTLP receiver in front of the processor answers a refusal for
// back-pressure with 503, which OTLP clients retry; once the backlog has
// drained the same request is accepted.
func TestBackPressureIsHTTP503AtTheReceiver(t *testing.T) {
	h, g := fillBacklog(t)

	addr := testkit.FreeAddr(t)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"protocols": map[string]any{"http": map[string]any{"endpoint": addr}}}).Unmarshal(cfg))
	rcv, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, h.p)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, rcv.Shutdown(context.Background())) }()

	fresh := newBatch()
	agentTrace(fresh, 2, false)
	body, err := ptraceotlp.NewExportRequestFromTraces(fresh.td).MarshalProto()
	require.NoError(t, err)
	post := func() int {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusServiceUnavailable, post())
	g.refusing.Store(false)
	require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) == 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusOK, post())
}

func TestUniqueSpans(t *testing.T) {
	for _, n := range []int{5, 32, 33, 200} {
		b := newBatch()
		bigTrace(b, 1, n-1)
		var refs []adapter.SpanRef
		adapter.ForEachSpan(b.td, func(r adapter.SpanRef) { refs = append(refs, r) })
		got, dups := uniqueSpans(refs)
		assert.Equal(t, 0, dups)
		assert.Len(t, got, n)
		// Resent: every span twice, and a third copy of the root.
		refs = append(append(refs, refs...), refs[0])
		got, dups = uniqueSpans(refs)
		assert.Equal(t, n+1, dups, "n=%d", n)
		require.Len(t, got, n)
		assert.Equal(t, refs[:n], got, "the first of each id, in order")
	}
}

// A trace that begins on a Kafka partition this collector has just started
// consuming may be the remainder of a trace split by a rebalance: counted.
// Batches without Kafka metadata count nothing.
func TestTracesOnNewPartitionCounted(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	kafka := func(partition string) context.Context {
		return client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{
			"kafka.topic": {"otlp_spans"}, "kafka.partition": {partition}})})
	}
	consume := func(ctx context.Context, tr byte) {
		b := newBatch()
		agentTrace(b, tr, false)
		require.NoError(t, h.p.ConsumeTraces(ctx, b.td))
	}
	consume(context.Background(), 1) // OTLP: no partition
	consume(kafka("3"), 2)           // partition 3 first seen now
	consume(kafka("3"), 3)           // still within `wait` of it
	h.clk.advance(2 * time.Second)   // past wait (1s)
	consume(kafka("3"), 4)           // partition 3 is old now
	consume(kafka("4"), 5)           // a newly assigned partition
	assert.Equal(t, int64(3), h.counter(metricTracesNewPartition))
}

// The loop behind: every worker busy and the queue of released traces
// full, the loop waits in submit, the queue of consume calls fills, and
// further consume calls wait for room. Once the workers move again every
// call returns without an error and every span goes on, scored.
func TestIngestQueueFullWhileWorkersAreBusy(t *testing.T) {
	release := make(chan struct{})
	var scored atomic.Int64
	h := newHarnessWith(t, func(c *Config) {
		c.Workers = 1
		c.Timeout = time.Hour // no watchdog: the worker stays busy
	}, nil, nil, func(p *evalProcessor) {
		p.pool.score = func(ctx context.Context, refs []adapter.SpanRef, opts engine.ScoreOptions, done func(engine.Report)) {
			<-release
			scored.Add(1)
			p.eng.ScoreTraceAsync(ctx, refs, opts, done)
		}
	})
	queued := cap(h.p.pool.jobs) + 2 // one being scored, the queue full, one the loop waits to submit
	b := newBatch()
	for i := 0; i < queued; i++ {
		agentTrace(b, byte(i+1), false)
	}
	h.consume(b.td)
	h.clk.advanceNoWait(2 * time.Second) // the loop stays in this tick, submitting
	require.Eventually(t, func() bool { return len(h.p.pool.jobs) == cap(h.p.pool.jobs) }, 10*time.Second, time.Millisecond,
		"the released traces fill the workers' queue")

	callers := cap(h.p.in) + 4
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		b := newBatch()
		agentTrace(b, byte(200+i), false)
		go func() { errs <- h.p.ConsumeTraces(context.Background(), b.td) }()
	}
	require.Eventually(t, func() bool { return len(h.p.in) == cap(h.p.in) }, 10*time.Second, time.Millisecond,
		"the consume calls fill the ingest queue")
	close(release)
	for i := 0; i < callers; i++ {
		require.NoError(t, <-errs)
	}
	h.clk.advance(2 * time.Second)
	h.waitSpans(5 * (queued + callers))
	assert.Equal(t, int64(queued+callers), scored.Load())
	for _, tr := range []byte{1, byte(queued), 200, byte(200 + callers - 1)} {
		assert.Equal(t, "passed", strAttr(spansOf(h.sink, tr)[1], "eval.tool_error.status"), "trace %d", tr)
	}
}
