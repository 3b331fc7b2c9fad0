package evalprocessor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
)

func streamMode(c *Config) { c.Mode = engine.ModeStream }

// resultSpansOf is the result spans (eval.generated) the sink got, by
// trace byte; others counts the spans that are not results.
func resultSpansOf(sink *consumertest.TracesSink) (results map[byte][]ptrace.Span, others int) {
	results = map[byte][]ptrace.Span{}
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if strAttr(r.Span, adapter.AttrGenerated) != "true" {
				others++
				return
			}
			id := r.Span.TraceID()
			results[id[0]] = append(results[id[0]], r.Span)
		})
	}
	return results, others
}

// resultRecordsOf counts the result records (the processor's scope) the
// sink got, by trace byte.
func resultRecordsOf(sink *consumertest.LogsSink) map[byte]int {
	out := map[byte]int{}
	for _, ld := range sink.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, sl plog.ScopeLogs) {
			if sl.Scope().Name() == scopeName {
				id := lr.TraceID()
				out[id[0]]++
			}
		})
	}
	return out
}

func TestStreamModeWithStorageValidates(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Evaluators = toolErrorOnly()
	cfg.Mode = engine.ModeStream
	id := storageID
	cfg.Storage = &id
	require.NoError(t, confmap.Validate(cfg))
}

// A kept part's value reads back as written; what is not one is refused.
func TestKeptPartEncoding(t *testing.T) {
	b := newBatch()
	agentTrace(b, 1, false)
	chunks := keepSpans(b.td, map[pcommon.TraceID]decision{tid(1): decHoldNew}, 3)
	packAll(chunks)
	c := chunks[0]
	require.NotEmpty(t, c.kept.stubs)
	var e encoder
	v := e.encodeKept(c)
	assert.Equal(t, formatKept, v[0])
	assert.Less(t, len(v), len(c.kept.packed)+16*len(c.kept.stubs)+16, "the packed bytes as they are, not compressed again")

	key := chunkKey(keyKept, tid(1), 7, 3)
	_, kind, stamp, rt, ok := parseKey(key)
	require.True(t, ok)
	assert.Equal(t, kindKept, kind)
	assert.Equal(t, uint64(7), stamp)
	assert.Equal(t, route(3), rt)

	got, err := decodeChunk(key, v)
	require.NoError(t, err)
	assert.Equal(t, c.kept.packed, got.kept.packed)
	assert.Equal(t, c.kept.stubs, got.kept.stubs)
	assert.Equal(t, c.spans, got.spans)
	assert.True(t, got.root)
	assert.False(t, got.isLogs)
	assert.Equal(t, key, got.key)

	lc := keepLogs(contentLogs(1), map[pcommon.TraceID]decision{tid(1): decHold}, 0)
	packAll(lc)
	gotLogs, err := decodeChunk(chunkKey(keyKept, tid(1), 8, 0), e.encodeKept(lc[0]))
	require.NoError(t, err)
	assert.True(t, gotLogs.isLogs)
	assert.Equal(t, 2, gotLogs.count, "the two GenAI records")

	for _, bad := range [][]byte{{formatKept}, {formatKept, 0, 1, 200}, append(v[:len(v)-1:len(v)-1], 0xee, 0xee), {formatS2, 1, 2}} {
		_, err := decodeChunk(key, bad)
		assert.Error(t, err, "%x", bad)
	}
}

// Stream mode with storage: the spans go on in the call, and what is kept
// is in storage before it returns. The process dies before the traces are
// scored; a new processor on the same file_storage directory restores
// them, scores them and emits their result spans and records exactly
// once, never the original spans again; storage is empty afterwards.
func TestDurableStreamRestoreAfterCrash(t *testing.T) {
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, streamMode, 0)

	b := newBatch()
	agentTrace(b, 2, true) // 5 spans, one failed tool
	h1.consume(b.td)
	h1.consume(contentSpans(1)) // 3 spans
	h1.consumeLogs(contentLogs(1))
	assert.Equal(t, 8, h1.sink.SpanCount(), "the spans went on in their calls")
	assert.Equal(t, 4, h1.logs.LogRecordCount(), "and the log records")
	keys := h1.storedKeys()
	require.Len(t, keys, 3, "one kept part per trace and call")
	for _, k := range keys {
		_, kind, _, _, ok := parseKey(k)
		assert.True(t, ok && kind == kindKept, k)
	}
	h1.crash(st1)

	h2 := startDurable(t, startFileStorage(t, dir), streamMode, time.Second)
	assert.Equal(t, int64(2), h2.counter(metricRestoredTraces))
	assert.Equal(t, int64(8), h2.counter(metricRestoredSpans))
	assert.Equal(t, int64(2), h2.counter(metricRestoredRecords), "the GenAI records kept")
	assert.Equal(t, int64(2), h2.counter(metricTracesHeld))
	assert.Zero(t, h2.sink.SpanCount(), "nothing goes on before the traces are scored")

	h2.clk.advance(2 * time.Second)
	require.Eventually(t, func() bool { return h2.counter(metricTracesScored) == 2 }, 10*time.Second, time.Millisecond)
	h2.waitStoreEmpty()
	h2.clk.advance(2 * time.Second) // time for a second result, were there one
	h2.shutdown(context.Background())

	results, others := resultSpansOf(h2.sink)
	assert.Zero(t, others, "the original spans are not sent again")
	require.Len(t, results[2], 1, "one result span for trace 2 (tool_error on its agent span)")
	require.Len(t, results[1], 1, "and one for trace 1")
	assert.Equal(t, sid(1), results[2][0].ParentSpanID(), "a child of the evaluated span")
	assert.Equal(t, "failed", strAttr(results[2][0], "eval.tool_error.status"))
	assert.Equal(t, "passed", strAttr(results[1][0], "eval.tool_error.status"))
	recs := resultRecordsOf(h2.logs)
	assert.Positive(t, recs[1])
	assert.Positive(t, recs[2])
	assert.Equal(t, h2.counter(metricResultRecords), int64(h2.logs.LogRecordCount()), "only result records, each once")
}

// Shutdown whose time is up before a kept trace is scored leaves its kept
// state in storage (nothing of it has gone on yet): the next start scores
// it. A trace scored before the shutdown leaves nothing.
func TestDurableStreamShutdownBeforeScoringKeepsState(t *testing.T) {
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, streamMode, 0)
	b := newBatch()
	agentTrace(b, 1, false)
	h1.consume(b.td)
	h1.clk.advance(2 * time.Second)
	h1.waitStoreEmpty()
	b = newBatch()
	agentTrace(b, 2, true)
	h1.consume(b.td)
	h1.shutdownNow()
	st1.stop()

	h2 := startDurable(t, startFileStorage(t, dir), streamMode, time.Second)
	assert.Equal(t, int64(1), h2.counter(metricRestoredTraces))
	h2.clk.advance(2 * time.Second)
	h2.waitStoreEmpty()
	results, others := resultSpansOf(h2.sink)
	assert.Zero(t, others)
	require.Len(t, results[2], 1)
	assert.Empty(t, results[1])
	assert.Equal(t, "failed", strAttr(results[2][0], "eval.tool_error.status"))
}

// A write failure refuses the call with a retryable error before anything
// goes on (the retry brings it all), as in hold mode.
func TestDurableStreamWriteFailureRefuses(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	h := startDurable(t, st, streamMode, 0)
	st.failWrites.Store(true)
	b := newBatch()
	agentTrace(b, 1, false)
	err := h.p.ConsumeTraces(context.Background(), b.td)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable")
	assert.Zero(t, h.sink.SpanCount(), "nothing went on")
	assert.Equal(t, int64(1), h.counter(metricStorageErrors, attrOperation, storageOpWrite))
	assert.Equal(t, int64(5), h.counter(metricSpansRefused))

	st.failWrites.Store(false)
	h.consume(b.td)
	assert.Equal(t, 5, h.sink.SpanCount())
	h.clk.advance(2 * time.Second)
	h.waitSpans(6) // and its result span
	h.waitStoreEmpty()
}

// The result spans and records of a trace go in separate deliveries: its
// keys go only once both are accepted.
func TestDurableStreamKeysWaitForEveryResult(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	refuse := make(chan struct{})
	logs := &gatedLogs{open: refuse} // result records refused until refuse closes
	h := startDurableWith(t, st, streamMode, 0, nil, func(p *evalProcessor) {
		p.nextLogs = logs
		fastRetry(p)
	})
	b := newBatch()
	agentTrace(b, 1, true)
	h.consume(b.td)
	h.clk.advance(2 * time.Second)
	h.waitSpans(6)
	require.Eventually(t, func() bool { return logs.refusals.Load() > 0 }, 10*time.Second, time.Millisecond)
	time.Sleep(3 * deleteDelay)
	assert.Len(t, h.storedKeys(), 1, "the result records are not delivered yet")
	close(refuse)
	h.waitStoreEmpty()
}

// A user switches from mode: hold to mode: stream between restarts: the
// spans and records hold mode held go on as they came, and their traces
// are scored the stream way; storage is empty once all is delivered.
func TestDurableHoldStoreRestoredInStreamMode(t *testing.T) {
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, nil, 0)
	b := newBatch()
	agentTrace(b, 1, true)
	h1.consume(b.td)
	h1.consumeLogs(contentLogs(1))
	require.Len(t, h1.storedKeys(), 2)
	h1.crash(st1)

	core, logged := observer.New(zapcore.WarnLevel)
	h2 := startDurableWith(t, startFileStorage(t, dir), streamMode, time.Second, zap.New(core), nil)
	require.Equal(t, 1, logged.FilterMessageSnippet("written by mode: hold").Len())
	h2.waitSpans(5) // the held spans go on at once, as they came
	for _, s := range spansOf(h2.sink, 1) {
		assert.Empty(t, strAttr(s, "eval.tool_error.status"), "unchanged")
	}
	require.Eventually(t, func() bool { return h2.logs.LogRecordCount() == 3 }, 10*time.Second, time.Millisecond,
		"the held records of trace 1 go on")
	h2.clk.advance(2 * time.Second)
	h2.waitSpans(6)
	results, others := resultSpansOf(h2.sink)
	assert.Equal(t, 5, others)
	require.Len(t, results[1], 1)
	assert.Equal(t, "failed", strAttr(results[1][0], "eval.tool_error.status"))
	require.Eventually(t, func() bool { return resultRecordsOf(h2.logs)[1] > 0 }, 10*time.Second, time.Millisecond)
	h2.waitStoreEmpty()
}

// From mode: stream to mode: hold: kept state cannot be scored without
// the spans (they went on long ago). It is deleted, and an error says how
// many traces get no results.
func TestDurableStreamStoreRestoredInHoldMode(t *testing.T) {
	dir := crashedWithAgentTraces(t, streamMode, 2)

	core, logged := observer.New(zapcore.ErrorLevel)
	h2 := startDurableWith(t, startFileStorage(t, dir), nil, time.Second, zap.New(core), nil)
	lines := logged.FilterMessageSnippet("written by mode: stream").All()
	require.Len(t, lines, 1)
	assert.Equal(t, int64(2), lines[0].ContextMap()["traces"])
	assert.Equal(t, int64(10), lines[0].ContextMap()["spans"])
	h2.waitStoreEmpty()
	assert.Zero(t, h2.counter(metricTracesHeld))
	h2.clk.advance(2 * time.Second)
	assert.Zero(t, h2.sink.SpanCount())
}

// gatedLogs refuses every request (retryable) until open is closed, then
// accepts them.
type gatedLogs struct {
	open     <-chan struct{}
	refusals atomic.Int64
}

func (g *gatedLogs) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (g *gatedLogs) ConsumeLogs(context.Context, plog.Logs) error {
	select {
	case <-g.open:
		return nil
	default:
		g.refusals.Add(1)
		return errors.New("logs backend down (test)")
	}
}

// §22 in stream mode: a corrupt store does not keep the processor down
// with storage_failure: continue (it runs without durable holding, spans
// go on and traces are scored), and refuses to start with fail.
func TestDurableStreamCorruptStore(t *testing.T) {
	dir := corruptStores(t)["garbage"]
	core, logs := observer.New(zapcore.WarnLevel)
	h, err := startOnStore(t, dir, engine.StorageFailureContinue, zap.New(core), streamMode)
	require.NoError(t, err)
	assert.Nil(t, h.p.store)
	v, ok := h.gauge(metricStorageUnavailable)
	assert.True(t, ok && v == 1, "%s = %d (recorded: %v), want 1", metricStorageUnavailable, v, ok)
	require.Len(t, logs.FilterMessageSnippet("WITHOUT durable holding").All(), 1)
	b := newBatch()
	agentTrace(b, 1, true)
	h.consume(b.td)
	assert.Equal(t, 5, h.sink.SpanCount(), "went on in the call")
	h.clk.advance(2 * time.Second)
	h.waitSpans(6)
	results, _ := resultSpansOf(h.sink)
	require.Len(t, results[1], 1)
	assert.Equal(t, "failed", strAttr(results[1][0], "eval.tool_error.status"))

	_, err = startOnStore(t, dir, engine.StorageFailureFail, zap.NewNop(), streamMode)
	require.ErrorContains(t, err, "storage_failure is fail")
}

// waitStoreEmpty waits until the processor's storage holds nothing.
func (h *durableHarness) waitStoreEmpty() {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return len(h.storedKeys()) == 0 }, 30*time.Second, time.Millisecond,
		"left in storage: %v", h.storedKeys())
}
