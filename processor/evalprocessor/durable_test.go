package evalprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
)

var storageID = component.MustNewIDWithName("file_storage", "eval")

// testStorage is contrib's real file_storage extension on a directory,
// wrapped so a test can make its client fail writes (failWrites) or
// simulate the process dying (dead: from then on nothing reaches the file).
type testStorage struct {
	storage.Extension
	failWrites, dead atomic.Bool
	stop             func()
	// onBatch, when set before the processor starts, sees every batch
	// before it is written (and may hold it up).
	onBatch func(ops []*storage.Operation)
}

type testClient struct {
	storage.Client
	storage.Walker
	s *testStorage
}

func (c *testClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	if c.s.onBatch != nil {
		c.s.onBatch(ops)
	}
	if c.s.dead.Load() {
		return nil // the process is gone: nothing it does reaches the file
	}
	if c.s.failWrites.Load() {
		for _, op := range ops {
			if op.Type == storage.Set {
				return errors.New("disk full (test)")
			}
		}
	}
	return c.Client.Batch(ctx, ops...)
}

// Set is refused like Batch once the process is dead.
func (c *testClient) Set(ctx context.Context, k string, v []byte) error {
	if c.s.dead.Load() {
		return nil
	}
	return c.Client.Set(ctx, k, v)
}

func (s *testStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := s.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, err
	}
	return &testClient{Client: c, Walker: c.(storage.Walker), s: s}, nil
}

// startFileStorage starts file_storage on dir; it is shut down at cleanup
// (after the processors, which close their clients in Shutdown).
func startFileStorage(t *testing.T, dir string) *testStorage { return startFileStorageB(t, dir) }

func startFileStorageB(t testing.TB, dir string) *testStorage {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	var once sync.Once
	stop := func() { once.Do(func() { require.NoError(t, ext.Shutdown(context.Background())) }) }
	t.Cleanup(stop)
	return &testStorage{Extension: ext.(storage.Extension), stop: stop}
}

type extHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extHost) GetExtensions() map[component.ID]component.Component { return h.exts }

// durableHarness is a processor in a traces and a logs pipeline with
// `storage: file_storage/eval`.
type durableHarness struct {
	*harness
	logs *consumertest.LogsSink
}

// startDurable starts it with its fake clock set `later` after the usual
// start time (a process started that much later).
func startDurable(t *testing.T, st *testStorage, mut func(*Config), later time.Duration) *durableHarness {
	t.Helper()
	return startDurableWith(t, st, mut, later, nil, nil)
}

// startDurableWith is startDurable with logger (nil: none) and prep run on
// the processor before Start (nil: none).
func startDurableWith(t *testing.T, st *testStorage, mut func(*Config), later time.Duration, logger *zap.Logger, prep func(*evalProcessor)) *durableHarness {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Wait = time.Second
	cfg.Workers = 2
	cfg.Evaluators = toolErrorOnly()
	id := storageID
	cfg.Storage = &id
	if mut != nil {
		mut(cfg)
	}
	require.NoError(t, confmap.Validate(cfg), "the config validates (stream mode with storage too)")
	h := &harness{t: t, sink: new(consumertest.TracesSink), clk: newFakeClock(), tel: componenttest.NewTelemetry(), cfg: cfg}
	h.clk.t = h.clk.t.Add(later)
	logs := new(consumertest.LogsSink)
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	if logger != nil {
		set.Logger = logger
	}
	p, err := newProcessor(set, cfg, h.sink, h.clk.clock())
	require.NoError(t, err)
	p.nextLogs = logs
	if prep != nil {
		prep(p)
	}
	host := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
	h.start(p, host)
	return &durableHarness{harness: h, logs: logs}
}

// storedKeys lists the keys the processor's storage holds.
func (h *durableHarness) storedKeys() []string {
	var keys []string
	require.NoError(h.t, h.p.store.walker.Walk(context.Background(), func(k string, _ []byte) ([]*storage.Operation, error) {
		keys = append(keys, k)
		return nil, nil
	}))
	return keys
}

// spanCounts counts every span the sink got by (trace byte, span byte).
func spanCounts(sink *consumertest.TracesSink) map[[2]byte]int {
	out := map[[2]byte]int{}
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			tr, s := r.Span.TraceID(), r.Span.SpanID()
			out[[2]byte{tr[0], s[7]}]++
		})
	}
	return out
}

// recordCount counts the log records the sink got that are not results.
func recordCount(sink *consumertest.LogsSink) int {
	n := 0
	for _, ld := range sink.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, sl plog.ScopeLogs) {
			if sl.Scope().Name() != scopeName {
				n++
			}
		})
	}
	return n
}

// The process dies (nothing after the crash reaches the file) while two
// traces and their content log records are held; a new processor on the
// same file_storage directory restores them with a fresh wait, Kafka-style
// redelivery of spans it holds is dropped while a new span joins, and every
// span and record is forwarded and scored exactly once; storage is empty
// afterwards.
func TestDurableRestoreAfterCrash(t *testing.T) {
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, nil, 0)

	b := newBatch()
	agentTrace(b, 2, true) // 5 spans, one failed tool
	h1.consume(b.td)
	h1.consume(contentSpans(1)) // 3 spans
	require.NoError(t, h1.p.ConsumeLogs(context.Background(), contentLogs(1)))
	require.Equal(t, 1, recordCount(h1.logs), "the unrelated record goes on at once")
	require.Len(t, h1.storedKeys(), 3, "one key per chunk: two span chunks, one log chunk")

	// Crash: from here on nothing reaches the file. Shutdown only cleans
	// up the goroutines; what it forwards went nowhere in a real crash.
	h1.crash(st1)

	// The new process: a new file_storage on the same directory, a second later.
	h2 := startDurable(t, startFileStorage(t, dir), nil, time.Second)
	assert.Equal(t, int64(2), h2.counter(metricRestoredTraces))
	assert.Equal(t, int64(8), h2.counter(metricRestoredSpans))
	assert.Equal(t, int64(3), h2.counter(metricRestoredRecords))
	assert.Equal(t, int64(2), h2.counter(metricTracesHeld))

	// Redelivery: trace 1 again (all three spans already held), plus a new
	// span of trace 1 in the same batch.
	re := contentSpans(1)
	extra := re.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	re.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(2).CopyTo(extra)
	extra.SetSpanID(sid(9))
	h2.consume(re)
	require.Eventually(t, func() bool { return h2.counter(metricSpansRedelivered) == 3 }, 10*time.Second, time.Millisecond)
	// And its log records again: the three held ones are dropped, the
	// unrelated one goes on at once (again: it was acknowledged before).
	require.NoError(t, h2.p.ConsumeLogs(context.Background(), contentLogs(1)))
	require.Eventually(t, func() bool { return h2.counter(metricRecordsRedelivered) == 3 }, 10*time.Second, time.Millisecond)

	h2.clk.advance(2 * time.Second)
	h2.waitSpans(9)
	counts := spanCounts(h2.sink)
	for k, n := range counts {
		assert.Equal(t, 1, n, "span %v forwarded %d times", k, n)
	}
	assert.Len(t, counts, 9)
	assert.Equal(t, "failed", strAttr(spansOf(h2.sink, 2)[1], "eval.tool_error.status"), "restored trace scored")
	assert.Equal(t, "passed", strAttr(spansOf(h2.sink, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, int64(2), h2.counter(metricTracesScored))
	held := 0
	require.Eventually(t, func() bool { return recordCount(h2.logs) == 4 }, 10*time.Second, time.Millisecond)
	for _, ld := range h2.logs.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, sl plog.ScopeLogs) {
			if sl.Scope().Name() != scopeName && lr.TraceID() == tid(1) {
				held++
			}
		})
	}
	assert.Equal(t, 3, held, "each held record of trace 1 once")
	assert.Positive(t, h2.counter(metricResultRecords))

	// Keys go once the next consumer has accepted the data.
	require.Eventually(t, func() bool { return len(h2.storedKeys()) == 0 }, 10*time.Second, time.Millisecond,
		"left in storage: %v", h2.storedKeys())
	h2.shutdown(context.Background())
}

// A storage write failure refuses the whole batch with a retryable error:
// nothing is held or forwarded (the retry brings it all), and it is counted.
func TestDurableWriteFailureRefuses(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	h := startDurable(t, st, nil, 0)
	st.failWrites.Store(true)

	b := newBatch()
	agentTrace(b, 1, false)
	b.plain(7, 1, 0) // a trace without GenAI spans in the same batch
	err := h.p.ConsumeTraces(context.Background(), b.td)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable")
	err = h.p.ConsumeLogs(context.Background(), contentLogs(3))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.Equal(t, int64(2), h.counter(metricStorageErrors, attrOperation, storageOpWrite))
	assert.Equal(t, int64(6), h.counter(metricSpansRefused))
	assert.Equal(t, int64(4), h.counter(metricLogRecordsRefused))
	assert.Zero(t, h.sink.SpanCount(), "nothing forwarded: the retry sends it all")

	// The retry, once storage works again, is held, persisted and scored once.
	st.failWrites.Store(false)
	h.consume(b.td)
	assert.Equal(t, 1, h.sink.SpanCount(), "the non-GenAI span goes on at once")
	h.clk.advance(2 * time.Second)
	h.waitSpans(6)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
	require.Eventually(t, func() bool { return len(h.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// A restored trace older than the bound is forwarded unscored at once.
func TestDurableRestoreTooOld(t *testing.T) {
	dir := t.TempDir()
	st := startFileStorage(t, dir)
	h1 := startDurable(t, st, nil, 0)
	b := newBatch()
	agentTrace(b, 1, false)
	h1.consume(b.td)
	h1.crash(st)

	// The second process starts two minutes later: past 10 x wait and the
	// one-minute floor.
	h2 := startDurable(t, startFileStorage(t, dir), nil, 2*time.Minute)
	h2.waitSpans(5)
	assert.Empty(t, strAttr(spansOf(h2.sink, 1)[1], "eval.tool_error.status"), "unscored")
	assert.Equal(t, int64(5), h2.counter(metricSpansUnscored, attrReason, reasonTooOld))
	require.Eventually(t, func() bool { return len(h2.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// Start fails clearly on an unknown extension or one that is not storage;
// without `storage:` there is no store at all.
func TestDurableStartErrors(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Evaluators = toolErrorOnly()
	id := storageID
	cfg.Storage = &id
	p, err := newProcessor(processortest.NewNopSettings(Type), cfg, consumertest.NewNop(), nil)
	require.NoError(t, err)
	err = p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, `extension "file_storage/eval" is not configured`)

	p, err = newProcessor(processortest.NewNopSettings(Type), cfg, consumertest.NewNop(), nil)
	require.NoError(t, err)
	notStorage := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: nopExtension{}}}
	err = p.Start(context.Background(), notStorage)
	require.ErrorContains(t, err, `extension "file_storage/eval" is not a storage extension`)

	h := newHarness(t, nil, nil, nil)
	assert.Nil(t, h.p.store)
	td := ptrace.NewTraces()
	h.consume(td)
}

type nopExtension struct{}

func (nopExtension) Start(context.Context, component.Host) error { return nil }
func (nopExtension) Shutdown(context.Context) error              { return nil }

// Suspected: restore applies max_traces only later. It did: 6 traces
// restored into max_traces 2 stayed held (6) until the next ingest. Now
// the oldest beyond max_traces go on unscored first thing (overflow).
func TestDurableRestoreAppliesMaxTraces(t *testing.T) {
	dir := crashedWithAgentTraces(t, nil, 6)

	h2 := startDurable(t, startFileStorage(t, dir), func(c *Config) { c.MaxTraces = 2 }, time.Second)
	assert.Equal(t, int64(6), h2.counter(metricRestoredTraces))
	h2.waitSpans(20) // four traces, unscored, without any new span or tick
	assert.Equal(t, int64(20), h2.counter(metricSpansUnscored, "reason", "overflow"))
	assert.Equal(t, int64(2), h2.counter(metricTracesHeld))
	got := traceIDsOf(h2.sink)
	assert.Equal(t, map[byte]int{1: 5, 2: 5, 3: 5, 4: 5}, got, "the oldest four")
}

// crashedWithAgentTraces is the directory of a store that a processor
// (mut applied to its config) crashed on while it held agent traces 1..n,
// five spans each.
func crashedWithAgentTraces(t *testing.T, mut func(*Config), n byte) string {
	t.Helper()
	dir := t.TempDir()
	st := startFileStorage(t, dir)
	h := startDurable(t, st, mut, 0)
	for tr := byte(1); tr <= n; tr++ {
		b := newBatch()
		agentTrace(b, tr, false)
		h.consume(b.td)
	}
	h.crash(st)
	return dir
}

// crash ends a durable harness as a SIGKILL would: nothing it does from
// now on reaches the file.
func (h *durableHarness) crash(st *testStorage) {
	st.dead.Store(true)
	h.shutdown(context.Background())
	st.stop()
}

// manyTraces is one span of each of traces 0..n-1 (trace ids tidN): the
// root agent span when root is set, else a tool span under it.
func manyTraces(n int, root bool) ptrace.Traces {
	b := newBatch()
	for i := 0; i < n; i++ {
		var sp ptrace.Span
		if root {
			sp = b.agent(0)
		} else {
			sp = b.tool(0, 2, "search_flights", false)
		}
		sp.SetTraceID(tidN(i))
	}
	return b.td
}

func hasOp(ops []*storage.Operation, typ storage.OpType) bool {
	for _, op := range ops {
		if op.Type == typ {
			return true
		}
	}
	return false
}

// Restore streams: it reads what storage holds in bounded batches and hands
// each trace to the normal ingest path as it goes, so max_traces applies
// while the rest is still being read. The second batch of reads is held up
// until the traces beyond max_traces from the first one have been
// delivered (their keys deleted): that could not happen if everything were
// read and decoded before anything was handed on. Every span still goes
// on exactly once, the newest max_traces traces scored.
func TestDurableRestoreStreams(t *testing.T) {
	const traces, maxTraces = 300, 50
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, nil, 0)
	h1.consume(manyTraces(traces, true))
	h1.consume(manyTraces(traces, false)) // two chunks a trace: 600 keys
	h1.crash(st1)

	st2 := startFileStorage(t, dir)
	var mu sync.Mutex
	var gets []int
	var deleted bool
	st2.onBatch = func(ops []*storage.Operation) {
		mu.Lock()
		defer mu.Unlock()
		if hasOp(ops, storage.Delete) {
			deleted = true
		}
		if !hasOp(ops, storage.Get) {
			return
		}
		gets = append(gets, len(ops))
		if len(gets) != 2 {
			return
		}
		for start := time.Now(); !deleted; {
			if time.Since(start) > 10*time.Second {
				t.Errorf("the traces beyond max_traces were not delivered before the second read")
				return
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
		}
	}
	h2 := startDurable(t, st2, func(c *Config) { c.MaxTraces = maxTraces }, time.Second)
	mu.Lock()
	assert.Len(t, gets, 3, "600 keys, at most %d a batch", restoreBatchKeys)
	for _, n := range gets {
		assert.LessOrEqual(t, n, restoreBatchKeys)
	}
	mu.Unlock()
	assert.Equal(t, int64(traces), h2.counter(metricRestoredTraces))
	assert.Equal(t, int64(2*traces), h2.counter(metricRestoredSpans))
	assert.LessOrEqual(t, len(h2.p.held.traces), maxTraces)

	h2.clk.advance(2 * time.Second)
	h2.waitSpans(2 * traces)
	assert.Equal(t, int64(2*(traces-maxTraces)), h2.counter(metricSpansUnscored, attrReason, reasonOverflow))
	assert.Equal(t, int64(maxTraces), h2.counter(metricTracesScored))
	perTrace := map[pcommon.TraceID]int{}
	for _, td := range h2.sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) { perTrace[r.Span.TraceID()]++ })
	}
	assert.Len(t, perTrace, traces)
	for id, n := range perTrace {
		assert.Equal(t, 2, n, "trace %v", id)
	}
	require.Eventually(t, func() bool { return len(h2.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// What an earlier version wrote (uncompressed protobuf, keys without a
// route) is restored; a value that does not decode is deleted, logged and
// counted, and does not keep the rest from being restored.
func TestDurableRestoresEarlierFormatAndDropsBadValues(t *testing.T) {
	dir := t.TempDir()
	st1 := startFileStorage(t, dir)
	h1 := startDurable(t, st1, nil, 0)
	b := newBatch()
	agentTrace(b, 1, true)
	var m ptrace.ProtoMarshaler
	raw, err := m.MarshalTraces(b.td)
	require.NoError(t, err)
	b3 := newBatch()
	agentTrace(b3, 3, false)
	raw3, err := m.MarshalTraces(b3.td)
	require.NoError(t, err)
	// The layouts of earlier versions: trace id first, without and with a route.
	stamp := fmt.Sprintf("%016x", h1.clk.now().UnixNano())
	legacy := keyTraces + tid(1).String() + "/" + stamp
	legacyRoute := keyTraces + tid(3).String() + "/" + stamp + "/00"
	bad := chunkKey(keyTraces, tid(2), uint64(h1.clk.now().UnixNano()), 0)
	require.NoError(t, h1.p.store.client.Batch(context.Background(), storage.SetOperation(legacy, raw),
		storage.SetOperation(legacyRoute, raw3), storage.SetOperation(bad, []byte{formatS2, 0xff, 0xff, 0xff})))
	h1.crash(st1)

	h2 := startDurable(t, startFileStorage(t, dir), nil, time.Second)
	assert.Equal(t, int64(2), h2.counter(metricRestoredTraces))
	assert.Equal(t, int64(10), h2.counter(metricRestoredSpans))
	assert.Equal(t, int64(1), h2.counter(metricStorageErrors, attrOperation, storageOpRead))
	assert.ElementsMatch(t, []string{legacy, legacyRoute}, h2.storedKeys(), "the bad value is deleted")
	h2.clk.advance(2 * time.Second)
	h2.waitSpans(10)
	assert.Equal(t, "failed", strAttr(spansOf(h2.sink, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, "passed", strAttr(spansOf(h2.sink, 3)[1], "eval.tool_error.status"))
	require.Eventually(t, func() bool { return len(h2.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// Concurrent calls share one storage transaction (group commit), and each
// returns only once its own chunks are written.
func TestDurableGroupCommit(t *testing.T) {
	const calls = 8
	st := startFileStorage(t, t.TempDir())
	release := make(chan struct{})
	var writes atomic.Int32
	var first sync.Once
	st.onBatch = func(ops []*storage.Operation) {
		if !hasOp(ops, storage.Set) {
			return
		}
		writes.Add(1)
		first.Do(func() { <-release }) // the first write is slow
	}
	h := startDurable(t, st, nil, 0)
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		go func() {
			b := newBatch()
			agentTrace(b, byte(10+i), false)
			errs <- h.p.ConsumeTraces(context.Background(), b.td)
		}()
	}
	// One call writes (held up); the other seven wait for the next batch.
	require.Eventually(t, func() bool {
		h.p.store.mu.Lock()
		defer h.p.store.mu.Unlock()
		return len(h.p.store.waiting) == calls-1
	}, 10*time.Second, time.Millisecond)
	select {
	case err := <-errs:
		t.Fatalf("a call returned before its chunks were written: %v", err)
	default:
	}
	close(release)
	for i := 0; i < calls; i++ {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int32(2), writes.Load(), "two transactions for eight calls")
	assert.Len(t, h.storedKeys(), calls)
	h.clk.advance(2 * time.Second)
	h.waitSpans(5 * calls)
	require.Eventually(t, func() bool { return len(h.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// Deletes of released chunks wait for a write's transaction, but a write
// takes them only once they have waited deleteBatchAge (or a flush, or
// Shutdown, does), so one transaction deletes a run of the oldest keys.
func TestDurableDeletesBatched(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	var mu sync.Mutex
	var batches [][]*storage.Operation
	st.onBatch = func(ops []*storage.Operation) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, ops)
	}
	h := startDurable(t, st, nil, 0)
	s := h.p.store
	s.mu.Lock()
	s.delay, s.batchAge = time.Hour, time.Hour // only writes and Shutdown take them
	s.mu.Unlock()
	consumeTrace := func(id byte) []*storage.Operation {
		mu.Lock()
		n := len(batches)
		mu.Unlock()
		b := newBatch()
		agentTrace(b, id, false)
		h.consume(b.td)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, batches, n+1, "one write")
		return batches[n]
	}
	waitingDeletes := func() []string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]string(nil), s.dels...)
	}

	consumeTrace(1)
	released := h.storedKeys()
	require.Len(t, released, 1)
	h.clk.advance(2 * time.Second)
	h.waitSpans(5)
	require.Eventually(t, func() bool { return len(waitingDeletes()) == 1 }, 10*time.Second, time.Millisecond)

	// Young: the next write leaves them waiting.
	assert.False(t, hasOp(consumeTrace(2), storage.Delete))
	assert.Equal(t, released, waitingDeletes())
	// Old enough: the next write takes them.
	s.mu.Lock()
	s.batchAge = 0
	s.mu.Unlock()
	ops := consumeTrace(3)
	require.True(t, hasOp(ops, storage.Delete))
	assert.Equal(t, released[0], ops[len(ops)-1].Key)
	assert.Empty(t, waitingDeletes())
	assert.Len(t, h.storedKeys(), 2)

	// Shutdown writes those still waiting.
	s.mu.Lock()
	s.batchAge = time.Hour
	s.mu.Unlock()
	h.clk.advance(2 * time.Second)
	h.waitSpans(15)
	require.Eventually(t, func() bool { return len(waitingDeletes()) == 2 }, 10*time.Second, time.Millisecond)
	h.shutdown(context.Background())
	mu.Lock()
	last := batches[len(batches)-1]
	mu.Unlock()
	assert.Len(t, last, 2)
	assert.True(t, hasOp(last, storage.Delete))
}
