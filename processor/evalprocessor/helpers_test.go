package evalprocessor

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// fakeClock is a hand-driven clock and ticker: tests advance time and tick
// explicitly, so nothing sleeps for `wait`.
type fakeClock struct {
	mu  sync.Mutex
	t   time.Time
	ch  chan time.Time
	got chan time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Unix(1_700_000_000, 0), ch: make(chan time.Time), got: make(chan time.Duration, 1)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

type fakeTicker struct{ c *fakeClock }

func (f fakeTicker) C() <-chan time.Time { return f.c.ch }
func (f fakeTicker) Stop()               {}

func (c *fakeClock) clock() *clock {
	return &clock{now: c.now, newTicker: func(d time.Duration) ticker { c.got <- d; return fakeTicker{c} }}
}

// advance moves time on by d and delivers one tick. The loop takes in
// every chunk ConsumeTraces handed it before it handles the tick
// (drainIngest), and the clock moves only once the tick is taken, so an
// ingest still under way stamps its spans with the time before. The tick
// is sent twice: the loop takes the second only once it has handled the
// first (a tick at the same time again finds nothing more to do), so what
// the tick released is decided when advance returns, before the test's
// next call.
func (c *fakeClock) advance(d time.Duration) {
	c.tick(d, true)
}

// advanceNoWait is advance for a test whose loop cannot finish the tick
// until the test does more: it returns once the loop has taken the tick.
func (c *fakeClock) advanceNoWait(d time.Duration) {
	c.tick(d, false)
}

func (c *fakeClock) tick(d time.Duration, handled bool) {
	c.mu.Lock()
	now := c.t.Add(d)
	c.mu.Unlock()
	c.ch <- now
	if handled {
		c.ch <- now
	}
	c.mu.Lock()
	c.t = now
	c.mu.Unlock()
}

type harness struct {
	t     *testing.T
	p     *evalProcessor
	sink  *consumertest.TracesSink
	clk   *fakeClock
	tel   *componenttest.Telemetry
	cfg   *Config
	ended bool
}

func toolErrorOnly() []evaluators.Config {
	return []evaluators.Config{{Type: "tool_error"}}
}

// newHarness starts a processor with a fake clock, telemetry and sink.
func newHarness(t *testing.T, mut func(*Config), next consumer.Traces, logger *zap.Logger) *harness {
	t.Helper()
	return newHarnessWith(t, mut, next, logger, nil)
}

// startHarness is newHarness with the processor in a logs pipeline too
// when nextLogs is set.
func startHarness(t *testing.T, mut func(*Config), next consumer.Traces, logger *zap.Logger, nextLogs consumer.Logs) *harness {
	t.Helper()
	return newHarnessWith(t, mut, next, logger, func(p *evalProcessor) { p.nextLogs = nextLogs })
}

// newHarnessWith is newHarness with prep run on the processor before Start
// (to set the retry backoff, the deadline grace, the scorer or the logs
// consumer).
func newHarnessWith(t *testing.T, mut func(*Config), next consumer.Traces, logger *zap.Logger, prep func(*evalProcessor)) *harness {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Wait = time.Second
	cfg.Workers = 2
	cfg.Evaluators = toolErrorOnly()
	if mut != nil {
		mut(cfg)
	}
	require.NoError(t, cfg.Config.Validate())
	h := &harness{t: t, sink: new(consumertest.TracesSink), clk: newFakeClock(), tel: componenttest.NewTelemetry(), cfg: cfg}
	if next == nil {
		next = h.sink
	}
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	if logger != nil {
		set.Logger = logger
	}
	p, err := newProcessor(set, cfg, next, h.clk.clock())
	require.NoError(t, err)
	if prep != nil {
		prep(p)
	}
	h.start(p, componenttest.NewNopHost())
	return h
}

// scoreOnce runs a processor of cfg whose telemetry goes to mp (and in a
// logs pipeline too when logs is set) on td: it consumes td, releases it,
// waits for spans to come out, shuts down and returns what came out.
func scoreOnce(t *testing.T, cfg *Config, mp metric.MeterProvider, logs bool, td ptrace.Traces) *consumertest.TracesSink {
	t.Helper()
	require.NoError(t, cfg.Config.Validate())
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings.MeterProvider = mp
	clk := newFakeClock()
	sink := new(consumertest.TracesSink)
	p, err := newProcessor(set, cfg, sink, clk.clock())
	require.NoError(t, err)
	if logs {
		p.nextLogs = new(consumertest.LogsSink)
	}
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	<-clk.got
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	clk.advance(2 * time.Second)
	require.Eventually(t, func() bool { return sink.SpanCount() > 0 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, p.Shutdown(context.Background()))
	return sink
}

// start starts p on host (waiting for its ticker) and shuts it down, if
// the test has not, at cleanup.
func (h *harness) start(p *evalProcessor, host component.Host) {
	h.t.Helper()
	require.NoError(h.t, p.Start(context.Background(), host))
	<-h.clk.got
	h.p = p
	h.t.Cleanup(func() {
		if !h.ended {
			require.NoError(h.t, p.Shutdown(context.Background()))
		}
		require.NoError(h.t, h.tel.Shutdown(context.Background()))
	})
}

func (h *harness) shutdown(ctx context.Context) {
	h.ended = true
	require.NoError(h.t, h.p.Shutdown(ctx))
}

// shutdownNow shuts down with a context that has ended: no time for
// anything.
func (h *harness) shutdownNow() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.shutdown(ctx)
}

func (h *harness) consume(td ptrace.Traces) {
	h.t.Helper()
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

func (h *harness) consumeLogs(ld plog.Logs) {
	h.t.Helper()
	require.NoError(h.t, h.p.ConsumeLogs(context.Background(), ld))
}

// waitSpans waits until the sink has n spans (workers forward asynchronously).
func (h *harness) waitSpans(n int) {
	h.t.Helper()
	waitCount(h.t, "spans", n, h.sink.SpanCount)
}

// waitCount waits until count() reaches n, and checks it is exactly n.
func waitCount(t *testing.T, what string, n int, count func() int) {
	t.Helper()
	require.Eventually(t, func() bool { return count() >= n }, 30*time.Second, time.Millisecond,
		"the sink has %d %s, want %d", count(), what, n)
	require.Equal(t, n, count())
}

// scoreAgentTrace sends agentTrace 1 (without a failed tool call),
// releases it, waits for its five spans and returns its agent span.
func (h *harness) scoreAgentTrace() ptrace.Span {
	h.t.Helper()
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5)
	return spansOf(h.sink, 1)[1]
}

// counter sums an int64 sum metric over the data points whose attributes
// include every kv pair given.
func (h *harness) counter(name string, kv ...string) int64 {
	h.t.Helper()
	return testkit.IntSumOrZero(h.t, h.tel, name, kv...)
}

func (h *harness) histogramCount(name string, kv ...string) uint64 {
	h.t.Helper()
	return testkit.HistogramCount(h.t, h.tel, name, kv...)
}

// --- building traces ---

func tid(b byte) pcommon.TraceID {
	return pcommon.TraceID{b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, b}
}
func sid(b byte) pcommon.SpanID { return pcommon.SpanID{0, 0, 0, 0, 0, 0, 1, b} }

func js(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// batch is a builder of one ptrace.Traces.
type batch struct {
	td    ptrace.Traces
	spans ptrace.SpanSlice
}

func newBatch() *batch {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-app")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	return &batch{td: td, spans: ss.Spans()}
}

func (b *batch) span(trace byte, id, parent byte, name string, attrs map[string]any) ptrace.Span {
	sp := b.spans.AppendEmpty()
	sp.SetName(name)
	sp.SetTraceID(tid(trace))
	sp.SetSpanID(sid(id))
	if parent != 0 {
		sp.SetParentSpanID(sid(parent))
	}
	base := int64(1_700_000_000_000) + int64(id)*10
	sp.SetStartTimestamp(pcommon.Timestamp(base * 1e6))
	sp.SetEndTimestamp(pcommon.Timestamp((base + 5) * 1e6))
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return sp
}

// agent adds the root agent span (id 1) of trace tr.
func (b *batch) agent(tr byte) ptrace.Span {
	return b.span(tr, 1, 0, "invoke_agent travel_agent", map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"})
}

// tool adds a tool span under the agent; failed sets status ERROR.
func (b *batch) tool(tr, id byte, name string, failed bool) ptrace.Span {
	sp := b.span(tr, id, 1, "execute_tool "+name, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
		"gen_ai.tool.call.arguments": js(map[string]any{"q": "paris"}),
		"gen_ai.tool.call.result":    `{"ok":true}`,
	})
	if failed {
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
	return sp
}

// llm adds an LLM span under the agent.
func (b *batch) llm(tr, id byte, content string) ptrace.Span {
	return b.span(tr, id, 1, "chat gpt-4o", map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
		"gen_ai.input.messages": js([]any{map[string]any{"role": "user", "parts": []any{
			map[string]any{"type": "text", "content": content}}}}),
		"gen_ai.output.messages": js([]any{map[string]any{"role": "assistant", "parts": []any{
			map[string]any{"type": "text", "content": "done"}}}}),
	})
}

// plain adds a span that is no GenAI span.
func (b *batch) plain(tr, id, parent byte) ptrace.Span {
	return b.span(tr, id, parent, "GET /health", map[string]any{"http.request.method": "GET"})
}

// agentTrace is one whole GenAI trace: agent, an LLM call, two tools (the
// second failed when failed is set) and an HTTP span.
func agentTrace(b *batch, tr byte, failed bool) {
	b.agent(tr)
	b.llm(tr, 2, "book me a flight")
	b.tool(tr, 3, "search_flights", false)
	b.tool(tr, 4, "book_hotel", failed)
	b.plain(tr, 5, 3)
}

// spansOf returns every span the sink got for trace tr, by span id byte.
func spansOf(sink *consumertest.TracesSink, tr byte) map[byte]ptrace.Span {
	out := map[byte]ptrace.Span{}
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if s := r.Span; s.TraceID() == tid(tr) {
				id := s.SpanID()
				out[id[7]] = s
			}
		})
	}
	return out
}

func strAttr(s ptrace.Span, key string) string {
	v, ok := s.Attributes().Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}
