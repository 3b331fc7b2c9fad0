package evalprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// The processor owns its input (MutatesData): the spans it holds are moved
// out of the request, not copied (chunk.go, takeTraces). These tests check
// that every span still goes on exactly once, with its own resource and
// scope, whichever way it moved, and that a failed call gives every span
// back.

// resource starts a new ResourceSpans (service) with one scope in b; the
// spans added next go there.
func (b *batch) resource(service, scope string) *batch {
	rs := b.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scope)
	b.spans = ss.Spans()
	return b
}

// scope starts a new scope in the last resource of b.
func (b *batch) scope(name string) *batch {
	rss := b.td.ResourceSpans()
	ss := rss.At(rss.Len() - 1).ScopeSpans().AppendEmpty()
	ss.Scope().SetName(name)
	b.spans = ss.Spans()
	return b
}

// mixedRequest is one request with every layout the move handles: GenAI
// traces 1 (its first spans only) and 2 interleaved with plain trace 7 in
// one scope (spans move one by one), trace 3 alone in a resource (moves
// whole), trace 4 alone in a scope (moves whole) next to a scope that mixes
// it with plain trace 8.
func mixedRequest() ptrace.Traces {
	b := newBatch() // travel-app / test
	b.agent(1)
	b.plain(7, 1, 0)
	b.agent(2)
	b.llm(1, 2, "book me a flight")
	b.tool(2, 3, "search_flights", false)
	b.plain(7, 2, 1)
	b.resource("svc-3", "scope-3")
	agentTrace(b, 3, true)
	b.resource("svc-4", "scope-4a")
	agentTrace(b, 4, false)
	b.scope("scope-4b")
	b.plain(4, 6, 1)
	b.plain(8, 1, 0)
	return b.td
}

// restOfTrace1 is the second request of trace 1: its tools and HTTP span,
// with a plain span of trace 9.
func restOfTrace1() ptrace.Traces {
	b := newBatch()
	b.tool(1, 3, "search_flights", false)
	b.tool(1, 4, "book_hotel", true)
	b.plain(1, 5, 3)
	b.resource("other", "other")
	b.plain(9, 1, 0)
	return b.td
}

// spanKeys counts the spans of tds by service, scope, trace and span id.
func spanKeys(tds ...ptrace.Traces) map[string]int {
	out := map[string]int{}
	for _, td := range tds {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			svc, _ := r.ResourceSpans.Resource().Attributes().Get("service.name")
			tid, sid := r.Span.TraceID(), r.Span.SpanID()
			out[fmt.Sprintf("%s/%s/%d/%d", svc.Str(), r.ScopeSpans.Scope().Name(), tid[15], sid[7])]++
		})
	}
	return out
}

func cloneTraces(td ptrace.Traces) ptrace.Traces {
	c := ptrace.NewTraces()
	td.CopyTo(c)
	return c
}

// checkDelivered waits until sink has every span of want and checks each
// came once, with its resource and scope, and that the GenAI traces were
// scored.
func checkDelivered(t *testing.T, sink *consumertest.TracesSink, want map[string]int, failed map[byte]string) {
	t.Helper()
	total := 0
	for _, n := range want {
		total += n
	}
	require.Eventually(t, func() bool { return sink.SpanCount() >= total }, 10*time.Second, time.Millisecond)
	assert.Equal(t, want, spanKeys(sink.AllTraces()...), "each span once, with its resource and scope")
	for tr, status := range failed {
		assert.Equal(t, status, strAttr(spansOf(sink, tr)[1], "eval.tool_error.status"), "trace %d", tr)
	}
}

var mixedStatuses = map[byte]string{1: "failed", 2: "passed", 3: "failed", 4: "passed"}

func TestHeldSpansMovedAndForwardedOnce(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	first, second := mixedRequest(), restOfTrace1()
	want := spanKeys(first, second)

	h.consume(first)
	assert.Equal(t, 0, first.SpanCount(), "moved out, not copied: the request is left empty")
	assert.Equal(t, 3, h.sink.SpanCount(), "the plain traces' spans (7, 8) go on at once")
	h.consume(second)
	assert.Equal(t, 4, h.sink.SpanCount(), "trace 9 goes on at once, trace 1's spans join it held")
	h.clk.advance(2 * time.Second)
	checkDelivered(t, h.sink, want, mixedStatuses)
}

// The input a fan-out marks read-only (shared between consumers) is
// copied, never written: it stays as it came.
func TestReadOnlyInputIsCopied(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	td := mixedRequest()
	want := spanKeys(td)
	before := cloneTraces(td)
	td.MarkReadOnly()
	h.consume(td)
	h.clk.advance(2 * time.Second)
	checkDelivered(t, h.sink, want, map[byte]string{2: "passed", 3: "failed", 4: "passed"})
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	rawBefore, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(before)
	require.NoError(t, err)
	assert.Equal(t, rawBefore, raw, "not written")
}

// refusal refuses the first call (retryable) of the consumer it is in.
type refusal struct{ calls atomic.Int64 }

var errQueueFull = errors.New("sending queue is full")

func (r *refusal) refuses() bool { return r.calls.Add(1) == 1 }

// refusingFirst refuses its first call, marking what it refuses read-only
// when readOnly is set (as a fan-out to several read-only consumers does),
// then takes everything.
type refusingFirst struct {
	consumertest.TracesSink
	refusal
	readOnly bool
}

func (r *refusingFirst) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !r.refuses() {
		return r.TracesSink.ConsumeTraces(ctx, td)
	}
	if r.readOnly {
		td.MarkReadOnly()
	}
	return errQueueFull
}

// A call that fails because the next consumer refused the part that goes
// on at once gives every moved span back: the request holds each span
// again (the sender's retry sends the same pdata) and the retry delivers
// each once. A next consumer that marked the refused part read-only gets
// it copied back, not written.
func TestRefusedCallGivesEverySpanBack(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read_only_%v", readOnly), func(t *testing.T) {
			next := &refusingFirst{readOnly: readOnly}
			h := newHarness(t, nil, next, nil)
			td := mixedRequest()
			want := spanKeys(td)
			require.Error(t, h.p.ConsumeTraces(context.Background(), td))
			assert.Equal(t, want, spanKeys(td), "every span back in the request")
			assert.False(t, td.IsReadOnly())
			h.consume(td) // the sender's retry, the same pdata
			h.consume(restOfTrace1())
			for k, n := range spanKeys(restOfTrace1()) {
				want[k] += n
			}
			h.clk.advance(2 * time.Second)
			checkDelivered(t, &next.TracesSink, want, mixedStatuses)
			assert.Equal(t, 0, heldMarks(h.p))
		})
	}
}

// A call that fails because the held chunks could not be persisted gives
// every span back too; the retry, once storage works, delivers each once.
func TestPersistFailureGivesEverySpanBack(t *testing.T) {
	st := startFileStorage(t, t.TempDir())
	h := startDurable(t, st, nil, 0)
	st.failWrites.Store(true)
	td := mixedRequest()
	want := spanKeys(td)
	require.Error(t, h.p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, want, spanKeys(td), "every span back in the request")
	assert.Zero(t, h.sink.SpanCount())

	st.failWrites.Store(false)
	h.consume(td)
	h.clk.advance(2 * time.Second)
	checkDelivered(t, h.sink, want, map[byte]string{1: "passed", 2: "passed", 3: "failed", 4: "passed"})
	require.Eventually(t, func() bool { return len(h.storedKeys()) == 0 }, 10*time.Second, time.Millisecond)
}

// refusingFirstLogs is refusingFirst for log records.
type refusingFirstLogs struct {
	consumertest.LogsSink
	refusal
}

func (r *refusingFirstLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if r.refuses() {
		return errQueueFull
	}
	return r.LogsSink.ConsumeLogs(ctx, ld)
}

// recordKeys counts the log records of lds by trace, span and body,
// results left out.
func recordKeys(lds ...plog.Logs) map[string]int {
	out := map[string]int{}
	for _, ld := range lds {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			if lr.EventName() != "gen_ai.evaluation.result" {
				tid, sid := lr.TraceID(), lr.SpanID()
				out[fmt.Sprintf("%d/%d/%v", tid[15], sid[7], lr.Body().AsRaw())]++
			}
		})
	}
	return out
}

// Log records of a held trace move too: a refused call gives them back,
// the retry moves them out of the request, and each goes on once.
func TestLogRecordsMovedAndGivenBack(t *testing.T) {
	logs := &refusingFirstLogs{}
	h := startHarness(t, nil, nil, nil, logs)
	h.consume(contentSpans(7)) // trace 7 is held
	in := contentLogs(7)       // three records of trace 7, one of an unrelated trace
	want := recordKeys(in)
	require.Error(t, h.p.ConsumeLogs(context.Background(), in), "the unrelated record is refused")
	assert.Equal(t, want, recordKeys(in), "every record back in the request")
	require.NoError(t, h.p.ConsumeLogs(context.Background(), in))
	assert.Zero(t, in.LogRecordCount(), "moved out, not copied")
	h.clk.advance(2 * time.Second)
	h.waitSpans(3)
	require.Eventually(t, func() bool { return len(recordKeys(logs.AllLogs()...)) >= len(want) }, 10*time.Second, time.Millisecond)
	assert.Equal(t, want, recordKeys(logs.AllLogs()...), "each record once")
}
