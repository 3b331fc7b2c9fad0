package evalprocessor

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// Contract §17: topologies users build, and bounds on one trace.

// traceIDsOf lists the trace id bytes a sink got.
func traceIDsOf(sink *consumertest.TracesSink) map[byte]int {
	out := map[byte]int{}
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) { out[r.Span.TraceID()[0]]++ })
	}
	return out
}

// Two traces pipelines and a logs pipeline list one `eval` (the factory's
// shared instance): each pipeline's spans go on through its own next
// consumer, results on them; a log record that came through the logs
// pipeline joins the trace held from pipeline B and goes on through the
// logs pipeline. Before routes, every span went to the next consumer of
// the pipeline created last.
func TestSeveralPipelinesEachKeepTheirSpans(t *testing.T) {
	f := NewFactory()
	cfg := sharedToolErrorConfig(f)
	set := processortest.NewNopSettings(Type)
	a, b, sinkA, sinkB := twoTracesPipelines(t, f, set, cfg)
	logsSink := new(consumertest.LogsSink)
	l, err := f.CreateLogs(context.Background(), set, cfg, logsSink)
	require.NoError(t, err)
	startAll(t, a, b, l)

	ba := newBatch()
	agentTrace(ba, 1, false)
	ba.plain(3, 1, 0) // no GenAI: straight through A
	require.NoError(t, a.ConsumeTraces(context.Background(), ba.td))
	bb := newBatch()
	agentTrace(bb, 2, true)
	require.NoError(t, b.ConsumeTraces(context.Background(), bb.td))
	require.NoError(t, l.ConsumeLogs(context.Background(), contentLogsFor(2, 2, 1)))

	require.Eventually(t, func() bool { return sinkA.SpanCount() == 6 && sinkB.SpanCount() == 5 && logsSink.LogRecordCount() >= 1 },
		10*time.Second, time.Millisecond, "A %d B %d", sinkA.SpanCount(), sinkB.SpanCount())
	assert.Equal(t, map[byte]int{1: 5, 3: 1}, traceIDsOf(sinkA))
	assert.Equal(t, map[byte]int{2: 5}, traceIDsOf(sinkB))
	assert.Equal(t, "passed", strAttr(spansOf(sinkA, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, "failed", strAttr(spansOf(sinkB, 2)[1], "eval.tool_error.status"))
	// the content record (held with trace 2 from pipeline B) and both
	// traces' result records went on through the logs pipeline
	require.Eventually(t, func() bool { return logsSink.LogRecordCount() == 3 }, 10*time.Second, time.Millisecond)

	require.NoError(t, a.Shutdown(context.Background()))
	require.NoError(t, b.Shutdown(context.Background()))
	require.NoError(t, l.Shutdown(context.Background()))
}

// twoTracesPipelines creates the factory's shared instance in two traces
// pipelines, each with its own sink (the instance starts once every
// pipeline has it: startAll).
func twoTracesPipelines(t *testing.T, f processor.Factory, set processor.Settings, cfg *Config) (a, b processor.Traces, sinkA, sinkB *consumertest.TracesSink) {
	t.Helper()
	sinkA, sinkB = new(consumertest.TracesSink), new(consumertest.TracesSink)
	var err error
	a, err = f.CreateTraces(context.Background(), set, cfg, sinkA)
	require.NoError(t, err)
	b, err = f.CreateTraces(context.Background(), set, cfg, sinkB)
	require.NoError(t, err)
	return a, b, sinkA, sinkB
}

// sharedToolErrorConfig is f's default config with a 20 ms wait and
// tool_error alone.
func sharedToolErrorConfig(f processor.Factory) *Config {
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Wait = 20 * time.Millisecond
	cfg.Evaluators = toolErrorOnly()
	return cfg
}

// startAll starts each component, as the collector does.
func startAll(t *testing.T, cs ...component.Component) {
	t.Helper()
	for _, c := range cs {
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	}
}

// contentLogsFor is n GenAI content records of trace tr, span sp.
func contentLogsFor(tr, sp byte, n int) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := 0; i < n; i++ {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetEventName("gen_ai.user.message")
		lr.SetTraceID(tid(tr))
		lr.SetSpanID(sid(sp))
		lr.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(i)))
		lr.Body().SetEmptyMap().PutStr("content", "hello")
	}
	return ld
}

// A trace that keeps getting spans is released at max_hold after its
// first span (before: every span refreshed `wait`, 100 × wait held it
// with nothing delivered).
func TestMaxHoldReleasesEndlessTrace(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	h := newHarness(t, func(c *Config) { c.MaxHold = 10 * time.Second }, nil, zap.New(core))
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	for i := 0; i < 100; i++ {
		b = newBatch()
		b.plain(1, byte(10+i), 1)
		h.consume(b.td)
		h.clk.advance(500 * time.Millisecond) // a span every half wait
	}
	// every span is delivered: those of the first 10 s with the trace, the
	// rest as late spans
	h.waitSpans(105)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"), "scored")
	assert.Equal(t, int64(1), h.counter(metricReleasedEarly, "reason", "max_hold"))
	assert.Equal(t, 1, logs.FilterMessageSnippet("max_hold").Len(), "logged once")
	assert.Equal(t, int64(80), h.counter(metricSpansLate))
}

// Reaching max_trace_spans (spans plus GenAI log records) scores and
// releases the trace at once, without waiting for a tick.
func TestMaxTraceSpansReleasesAtOnce(t *testing.T) {
	logsSink := new(consumertest.LogsSink)
	h := startHarness(t, func(c *Config) { c.MaxTraceSpans = 8 }, nil, nil, logsSink)
	b := newBatch()
	agentTrace(b, 1, true) // 5 spans
	h.consume(b.td)
	require.NoError(t, h.p.ConsumeLogs(context.Background(), contentLogsFor(1, 2, 3))) // 8
	h.waitSpans(5)                                                                     // no tick: released by the bound
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, int64(1), h.counter(metricReleasedEarly, "reason", "max_trace_spans"))
	b = newBatch()
	b.plain(1, 20, 1)
	h.consume(b.td)
	assert.Equal(t, int64(1), h.counter(metricSpansLate), "later spans are late")
}

// refuser refuses (retryable) every request holding a span of trace
// `bad`; with a healthy sink behind one fan-out it is a pipeline whose
// second exporter cannot take one trace.
type refuser struct {
	bad     byte
	refused atomic.Int64
	on      atomic.Bool
}

func (r *refuser) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (r *refuser) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if !r.on.Load() {
		return nil
	}
	if traceIDsInTD(td)[r.bad] > 0 {
		r.refused.Add(1)
		return errors.New("sending queue is full")
	}
	return nil
}

func traceIDsInTD(td ptrace.Traces) map[byte]int {
	out := map[byte]int{}
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { out[r.Span.TraceID()[0]]++ })
	return out
}

// fanout is the collector's fan-out to two exporters: both get the data,
// errors are joined.
type fanout []consumer.Traces

func (f fanout) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (f fanout) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var errs []error
	for _, c := range f {
		errs = append(errs, c.ConsumeTraces(ctx, td))
	}
	return errors.Join(errs...)
}

// A refused release never holds back other traces' releases (finding 2):
// with one exporter of a fan-out refusing trace 1, trace 2 released later
// reaches the healthy exporter once, while trace 1 is still retried.
// Before: the forwarder retried trace 1 before sending anything else.
func TestRefusedReleaseDoesNotHoldOthersBack(t *testing.T) {
	healthy := new(consumertest.TracesSink)
	bad := &refuser{bad: 1}
	bad.on.Store(true)
	h := newHarnessWith(t, nil, fanout{healthy, bad}, nil, func(p *evalProcessor) {
		p.cfg.ReleaseRetry.InitialInterval = time.Hour // no retry during the test
		p.cfg.ReleaseRetry.MaxInterval = time.Hour
		p.cfg.ReleaseRetry.MaxElapsedTime = 0
	})
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return bad.refused.Load() == 1 }, 10*time.Second, time.Millisecond)

	b = newBatch()
	agentTrace(b, 2, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return traceIDsOf(healthy)[2] == 5 }, 10*time.Second, time.Millisecond,
		"the later trace arrives while the first is refused")
	assert.Equal(t, map[byte]int{1: 5, 2: 5}, traceIDsOf(healthy), "each span once")
	// The healthy sink has trace 2 while the fan-out's call is still on
	// its way back; the backlog shrinks once it returns.
	require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) == 5 }, 10*time.Second, time.Millisecond,
		"trace 1 waits for its retry")
	bad.on.Store(false)
	h.shutdown(context.Background()) // the shutdown retry delivers it
	assert.Equal(t, int64(0), h.counter(metricSpansDropped))
}

// release_retry gives up after max_elapsed_time: the release is dropped,
// logged at error level and counted (reason refused); with enabled: false
// at the first refusal. Spans and log records are counted apart.
func TestReleaseRetryGivesUp(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		core, logs := observer.New(zapcore.ErrorLevel)
		bad := &refuser{bad: 1}
		bad.on.Store(true)
		h := newHarnessWith(t, nil, bad, zap.New(core), func(p *evalProcessor) {
			retryGivesUpFast(p)
			p.cfg.ReleaseRetry.Enabled = enabled
		})
		b := newBatch()
		agentTrace(b, 1, false)
		h.consume(b.td)
		h.clk.advance(time.Second)
		require.Eventually(t, func() bool { return h.counter(metricSpansDropped, "reason", "refused") == 5 },
			10*time.Second, time.Millisecond)
		assert.Equal(t, 1, logs.FilterMessageSnippet("release_retry").Len())
		require.Eventually(t, func() bool { return h.counter(metricReleaseBacklog) == 0 }, 10*time.Second, time.Millisecond)
		if !enabled {
			assert.Equal(t, int64(0), h.counter(metricReleaseRetries))
		}
	}
}

// onceRefusing refuses its first call (retryable), then takes everything.
type onceRefusing struct {
	consumertest.TracesSink
	calls atomic.Int64
}

func (o *onceRefusing) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if o.calls.Add(1) == 1 {
		return errors.New("sending queue is full")
	}
	return o.TracesSink.ConsumeTraces(ctx, td)
}

// All or nothing per call (finding 6): a mixed batch whose pass-through
// part is refused returns the error and keeps nothing, so the client's
// resend is the only copy: every span is delivered once. Before: the
// GenAI part was already held, and delivered twice.
func TestFailedCallKeepsNothing(t *testing.T) {
	next := &onceRefusing{}
	h := newHarnessWith(t, nil, next, nil, nil)
	b := newBatch()
	agentTrace(b, 1, false)
	b.plain(7, 1, 0)
	require.Error(t, h.p.ConsumeTraces(context.Background(), b.td))
	h.consume(b.td) // the client's retry
	h.clk.advance(2 * time.Second)
	require.Eventually(t, func() bool { return next.SpanCount() >= 6 }, 10*time.Second, time.Millisecond)
	h.shutdown(context.Background())
	assert.Equal(t, map[byte]int{1: 5, 7: 1}, traceIDsOf(&next.TracesSink), "each span once")
	assert.Equal(t, 0, heldMarks(h.p))
}

// retryGivesUpFast makes release_retry give up after 20ms.
func retryGivesUpFast(p *evalProcessor) {
	p.cfg.ReleaseRetry.InitialInterval = time.Millisecond
	p.cfg.ReleaseRetry.MaxInterval = time.Millisecond
	p.cfg.ReleaseRetry.MaxElapsedTime = 20 * time.Millisecond
}

// heldMarks counts trace ids marked held in the processor's directory.
func heldMarks(p *evalProcessor) int {
	p.held.dirMu.RLock()
	defer p.held.dirMu.RUnlock()
	n := 0
	for _, st := range p.held.dir {
		if st == stateHeld {
			n++
		}
	}
	return n
}

// A storage write failure leaves no trace id marked held (finding 11):
// before, 200 refused traces left 200 ids marked held forever (their
// later spans would have been held as a trace no tick ever releases).
func TestStorageFailureLeavesNoHeldMarks(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	h := startDurable(t, st, nil, 0)
	st.failWrites.Store(true)
	for i := 0; i < 200; i++ {
		b := newBatch()
		agentTrace(b, byte(i), false)
		require.Error(t, h.p.ConsumeTraces(context.Background(), b.td))
	}
	require.NoError(t, h.p.ConsumeLogs(context.Background(), plog.NewLogs()))
	require.Error(t, h.p.ConsumeLogs(context.Background(), contentLogsFor(250, 2, 1)))
	// an ingest round trip: the loop has taken every undo in
	h.clk.advance(time.Millisecond)
	assert.Equal(t, 0, heldMarks(h.p))
	// a span of such a trace that comes without GenAI spans goes straight on
	b := newBatch()
	b.plain(3, 9, 0)
	h.consume(b.td)
	assert.Equal(t, 1, h.sink.SpanCount())
}

// The watchdog's take-over: the copy forwarded carries the results that
// finished (and `timeout` for the rest); the originals, which the stuck
// evaluator may still read, are not touched.
func TestTakeOverForwardsACopyWithPartialResults(t *testing.T) {
	b := newBatch()
	agentTrace(b, 1, false)
	c := heldChunkOf(t, b.td, tid(1), 0)
	ht := &heldTrace{id: tid(1)}
	ht.addChunk(c)
	partial := []engine.Partial{{Ref: ht.spanRefs(nil)[0], Case: &adapter.Case{SpanID: sid(1), TraceID: tid(1)}, Results: []evaluators.Result{
		{Name: "tool_error", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "slow", Status: evaluators.StatusTimeout, Reason: "still running"},
	}}}
	cp := ht.copyForTakeOver(partial, spanDups{}, true, nil)
	out := byRoute[ptrace.Traces](cp.parts)
	require.Len(t, out, 1)
	var root ptrace.Span
	adapter.ForEachSpan(out[0].data, func(r adapter.SpanRef) {
		if r.Span.SpanID() == sid(1) {
			root = r.Span
		}
	})
	assert.Equal(t, "passed", strAttr(root, "eval.tool_error.status"))
	assert.Equal(t, "timeout", strAttr(root, "eval.slow.status"))
	assert.Equal(t, 2, cp.resultN, "result records for both (timeout is emitted too)")
	assert.Empty(t, strAttr(ht.spanRefs(nil)[0].Span, "eval.tool_error.status"), "the original is untouched")
}

// The watchdog's take-over of a trace that came in through two pipelines
// (one receiver fanning out to both, each listing the same eval): each
// pipeline's copy carries the results that finished, not only the copy of
// the pipeline whose spans were scored.
func TestTakeOverCopiesResultsOntoTheOtherPipelinesSpans(t *testing.T) {
	ht := &heldTrace{id: tid(1)}
	for rt := route(0); rt < 2; rt++ {
		b := newBatch()
		agentTrace(b, 1, false)
		ht.addChunk(heldChunkOf(t, b.td, tid(1), rt))
	}
	refs, copies := uniqueSpanCopies(ht.spanRefs(nil))
	require.Len(t, copies, 5, "the second pipeline's spans are copies of the first's")
	var root adapter.SpanRef
	for _, r := range refs {
		if r.Span.SpanID() == sid(1) {
			root = r
		}
	}
	partial := []engine.Partial{{Ref: root, Case: &adapter.Case{SpanID: sid(1), TraceID: tid(1)}, Results: []evaluators.Result{
		{Name: "tool_error", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "slow", Status: evaluators.StatusTimeout, Reason: "still running"},
	}}}
	cp := ht.copyForTakeOver(partial, spanDups{scored: refs, copies: copies, origin: ht.origin()}, false, nil)
	out := byRoute[ptrace.Traces](cp.parts)
	require.Len(t, out, 2)
	for _, o := range out {
		n := 0
		adapter.ForEachSpan(o.data, func(r adapter.SpanRef) {
			if r.Span.SpanID() != sid(1) {
				assert.Empty(t, strAttr(r.Span, "eval.tool_error.status"), "route %d: no result on other spans", o.route)
				return
			}
			n++
			assert.Equal(t, "passed", strAttr(r.Span, "eval.tool_error.status"), "route %d", o.route)
			assert.Equal(t, "timeout", strAttr(r.Span, "eval.slow.status"), "route %d", o.route)
			assert.Equal(t, 1, r.Span.Events().Len(), "route %d: the scored result's event (none for timeout)", o.route)
		})
		assert.Equal(t, 1, n, "route %d", o.route)
	}
	for _, r := range ht.spanRefs(nil) {
		assert.Empty(t, strAttr(r.Span, "eval.tool_error.status"), "the originals are untouched")
	}
}

// mutator is a downstream processor that writes every span it gets.
type mutator struct {
	mu    sync.Mutex
	spans int
}

func (m *mutator) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}
func (m *mutator) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { r.Span.Attributes().PutStr("touched", "yes") })
	m.mu.Lock()
	m.spans += td.SpanCount()
	m.mu.Unlock()
	return nil
}

// Suspected: the watchdog forwards spans while the stuck evaluator still
// reads them. It did (a downstream processor that writes spans raced the
// evaluator: go test -race failed here); now it forwards a copy.
func TestWatchdogForwardsWhileEvaluatorReads(t *testing.T) {
	m := &mutator{}
	reading := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	h := newHarnessWith(t, func(c *Config) { c.Timeout = 10 * time.Millisecond }, m, nil, func(p *evalProcessor) {
		p.pool.grace = 0
		p.pool.score = func(ctx context.Context, refs []adapter.SpanRef, _ engine.ScoreOptions, done func(engine.Report)) {
			wg.Add(1)
			defer wg.Done()
			close(reading)
			for {
				for _, r := range refs { // an evaluator reading the spans, ignoring ctx
					_, _ = r.Span.Attributes().Get("touched")
				}
				rounds.Add(1)
				select {
				case <-release:
					done(engine.Report{})
					return
				default:
				}
			}
		}
	})
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	<-reading
	require.Eventually(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.spans == 5 }, 10*time.Second, time.Millisecond)
	// the reader goes on after the writer wrote (the race detector's window)
	after := rounds.Load()
	require.Eventually(t, func() bool { return rounds.Load() > after+100 }, 10*time.Second, time.Microsecond)
	close(release)
	wg.Wait()
}

// Suspected: the Kafka-partition map keyed by client metadata never
// expires. It did not (any client able to set `kafka.partition` metadata,
// e.g. an OTLP receiver with include_metadata, grew it by one entry per
// distinct value: 100,000 values, 100,000 entries). Now entries not seen
// for 10 × wait (at least 10 min) are forgotten and at most 4096 kept.
func TestPartitionWatchIsBounded(t *testing.T) {
	var w partitionWatch
	now := time.Unix(1_700_000_000, 0)
	ctxOf := func(part string) context.Context {
		return client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{
			"kafka.partition": {part}})})
	}
	for i := 0; i < 100_000; i++ {
		assert.True(t, w.recent(ctxOf(strconv.Itoa(i)), now, time.Second), "a new value counts as new")
		now = now.Add(time.Millisecond)
	}
	assert.LessOrEqual(t, w.size(), maxPartitions)
	// a partition still consumed stays remembered, and is old after wait
	w.recent(ctxOf("steady"), now, time.Second)
	for i := 0; i < 100; i++ {
		now = now.Add(time.Minute)
		w.recent(ctxOf("steady"), now, time.Second)
	}
	assert.False(t, w.recent(ctxOf("steady"), now, time.Second))
	assert.Equal(t, 1, w.size(), "the others were forgotten")
}

// refusingLogs refuses every request (retryable).
type refusingLogs struct{ calls atomic.Int64 }

func (r *refusingLogs) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (r *refusingLogs) ConsumeLogs(context.Context, plog.Logs) error {
	r.calls.Add(1)
	return errors.New("sending queue is full")
}

// Released log records the logs pipeline keeps refusing are dropped when
// release_retry gives up, counted apart from spans.
func TestReleaseRetryGivesUpOnLogRecords(t *testing.T) {
	bad := &refusingLogs{}
	h := newHarnessWith(t, nil, nil, nil, func(p *evalProcessor) {
		p.nextLogs = bad
		p.cfg.ResultLogRecords = false
		retryGivesUpFast(p)
	})
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	require.Error(t, h.p.ConsumeLogs(context.Background(), plog.NewLogs()), "pass-through refusals go back to the caller")
	bad.calls.Store(0)
	ld := contentLogsFor(1, 2, 4)
	// held with trace 1 (nothing passes through, so the call succeeds)
	require.NoError(t, h.p.ConsumeLogs(context.Background(), ld))
	h.clk.advance(time.Second)
	h.waitSpans(5)
	require.Eventually(t, func() bool { return h.counter(metricLogRecordsDropped, "reason", "refused") == 4 },
		10*time.Second, time.Millisecond)
	assert.Equal(t, int64(0), h.counter(metricSpansDropped))
	assert.Greater(t, bad.calls.Load(), int64(1), "retried before giving up")
}

// One receiver fanning out to two pipelines that list the same `eval`:
// both pipelines bring the same spans (each its own copy). The trace is
// scored once (one evaluation counted), and each pipeline's backend gets
// its copy with the results on it; a copy resent through the same
// pipeline is forwarded as received (TestResentRequestScoredOnce).
func TestFanoutCopiesScoredOnceResultsOnEach(t *testing.T) {
	f := NewFactory()
	cfg := sharedToolErrorConfig(f)
	set := processortest.NewNopSettings(Type)
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set.TelemetrySettings = tel.NewTelemetrySettings()
	a, b, sinkA, sinkB := twoTracesPipelines(t, f, set, cfg)
	startAll(t, a, b)

	bt := newBatch()
	agentTrace(bt, 1, true) // a failing tool call
	copyB := ptrace.NewTraces()
	bt.td.CopyTo(copyB) // what the fan-out clones for the second pipeline
	require.NoError(t, a.ConsumeTraces(context.Background(), bt.td))
	require.NoError(t, b.ConsumeTraces(context.Background(), copyB))

	require.Eventually(t, func() bool { return sinkA.SpanCount() == 5 && sinkB.SpanCount() == 5 },
		10*time.Second, time.Millisecond, "A %d B %d", sinkA.SpanCount(), sinkB.SpanCount())
	for name, sink := range map[string]*consumertest.TracesSink{"A": sinkA, "B": sinkB} {
		root := spansOf(sink, 1)[1]
		assert.Equal(t, "failed", strAttr(root, "eval.tool_error.status"), "pipeline %s", name)
		n := 0
		for i := 0; i < root.Events().Len(); i++ {
			if root.Events().At(i).Name() == "gen_ai.evaluation.result" {
				n++
			}
		}
		assert.Equal(t, 1, n, "pipeline %s: one result event", name)
	}
	require.NoError(t, a.Shutdown(context.Background()))
	require.NoError(t, b.Shutdown(context.Background()))
	got, err := tel.GetMetric("otelcol_processor_eval_evaluations")
	require.NoError(t, err)
	total := int64(0)
	for _, dp := range got.Data.(metricdata.Sum[int64]).DataPoints {
		total += dp.Value
	}
	assert.Equal(t, int64(1), total, "scored once")
}

// heldChunkOf is the chunk that holding td, all of trace id, through route
// rt makes: a copy of its spans (td is left as it is).
func heldChunkOf(t *testing.T, td ptrace.Traces, id pcommon.TraceID, rt route) *chunk {
	t.Helper()
	_, chunks := splitTraces(td, map[pcommon.TraceID]decision{id: decHold}, rt)
	require.Len(t, chunks, 1)
	return chunks[0]
}

// Stream mode in two traces pipelines: each pipeline's spans go on through
// its own next consumer at once, and each trace's result span follows the
// pipeline its evaluated span came through.
func TestStreamModeResultSpansFollowTheirPipeline(t *testing.T) {
	f := NewFactory()
	cfg := sharedToolErrorConfig(f)
	cfg.Mode = engine.ModeStream
	a, b, sinkA, sinkB := twoTracesPipelines(t, f, processortest.NewNopSettings(Type), cfg)
	startAll(t, a, b)

	ba := newBatch()
	agentTrace(ba, 1, false)
	require.NoError(t, a.ConsumeTraces(context.Background(), ba.td))
	bb := newBatch()
	agentTrace(bb, 2, true)
	require.NoError(t, b.ConsumeTraces(context.Background(), bb.td))
	assert.Equal(t, 5, sinkA.SpanCount(), "A's spans went on in the call")
	assert.Equal(t, 5, sinkB.SpanCount(), "B's spans went on in the call")

	require.Eventually(t, func() bool { return sinkA.SpanCount() == 6 && sinkB.SpanCount() == 6 },
		10*time.Second, time.Millisecond, "A %d B %d", sinkA.SpanCount(), sinkB.SpanCount())
	resA, _ := resultSpansOf(sinkA)
	resB, _ := resultSpansOf(sinkB)
	require.Len(t, resA[1], 1)
	require.Len(t, resB[2], 1)
	assert.Empty(t, resA[2])
	assert.Empty(t, resB[1])
	assert.Equal(t, "passed", strAttr(resA[1][0], "eval.tool_error.status"))
	assert.Equal(t, "failed", strAttr(resB[2][0], "eval.tool_error.status"))

	require.NoError(t, a.Shutdown(context.Background()))
	require.NoError(t, b.Shutdown(context.Background()))
}
