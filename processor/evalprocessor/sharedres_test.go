package evalprocessor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

// sdkBatch is what an SDK's batch exporter sends: the spans of several
// traces (agent runs 1..n, interleaved with a non-GenAI trace 100) under
// one resource with an SDK's attributes and a schema URL.
func sdkBatch(n byte) *batch {
	b := newBatch()
	rs := b.td.ResourceSpans().At(0)
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.37.0")
	attrs := rs.Resource().Attributes()
	for _, k := range []string{"service.version", "service.instance.id", "deployment.environment.name", "telemetry.sdk.language",
		"telemetry.sdk.name", "telemetry.sdk.version", "host.name", "os.type", "process.runtime.name", "process.runtime.version"} {
		attrs.PutStr(k, k+"-value")
	}
	attrs.PutInt("process.pid", 7)
	for tr := byte(1); tr <= n; tr++ {
		agentTrace(b, tr, tr%2 == 0)
		b.plain(100, tr, 0)
	}
	return b
}

// everySpanUnder asserts that every span of every request in got is under
// resource want (attributes and schema URL), and returns how many there are.
func everySpanUnder(t *testing.T, got []ptrace.Traces, want ptrace.ResourceSpans) int {
	t.Helper()
	n := 0
	for _, td := range got {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			n++
			assert.Equal(t, want.Resource().Attributes().AsRaw(), r.ResourceSpans.Resource().Attributes().AsRaw(), "span %s", r.Span.Name())
			assert.Equal(t, want.SchemaUrl(), r.ResourceSpans.SchemaUrl())
		})
	}
	return n
}

// Held chunks split from one request share one copy of its resource; the
// evaluators read it while the traces are held (a `when` condition on a
// resource attribute), and every span leaves with the whole resource, from
// data the processor owns (moved) and from read-only data (copied).
func TestSharedResourceIsReadWhileHeldAndLeavesWhole(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "owned", true: "read_only"}[readOnly], func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Evaluators = []evaluators.Config{{Type: "tool_error",
					When: []string{`resource.attributes["deployment.environment.name"] == "deployment.environment.name-value"`}}}
			}, nil, nil)
			b := sdkBatch(6)
			want := ptrace.NewResourceSpans()
			copyResource(b.td.ResourceSpans().At(0), want)
			spans := b.td.SpanCount()
			if readOnly {
				b.td.MarkReadOnly()
			}
			h.consume(b.td)
			h.clk.advance(2 * time.Second)
			h.waitSpans(spans)
			assert.Equal(t, spans, everySpanUnder(t, h.sink.AllTraces(), want))
			for tr := byte(1); tr <= 6; tr++ {
				want := map[bool]string{false: "passed", true: "failed"}[tr%2 == 0]
				assert.Equal(t, want, strAttr(spansOf(h.sink, tr)[1], "eval.tool_error.status"), "trace %d scored with the resource read", tr)
			}
			released := 0
			for _, td := range h.sink.AllTraces() {
				released += td.ResourceSpans().Len()
			}
			assert.LessOrEqual(t, released, 2, "the held traces leave under one resource (and the non-GenAI trace under its own)")
		})
	}
}

// A request the next consumer refuses is handed back whole: the spans that
// were moved into held chunks get their resource back.
func TestRefusedRequestGetsSharedResourceBack(t *testing.T) {
	refuse, err := consumer.NewTraces(func(context.Context, ptrace.Traces) error { return errors.New("backend down") })
	require.NoError(t, err)
	h := newHarness(t, nil, refuse, nil)
	b := sdkBatch(3)
	want := ptrace.NewResourceSpans()
	copyResource(b.td.ResourceSpans().At(0), want)
	spans := b.td.SpanCount()
	require.Error(t, h.p.ConsumeTraces(context.Background(), b.td), "the non-GenAI part is refused")
	assert.Equal(t, spans, everySpanUnder(t, []ptrace.Traces{b.td}, want), "every span is back, under the whole resource")
}

// The durable store writes a chunk with a shared resource as pdata writes
// the same chunk with the resource in place, also where pdata's writer
// must take over (entity references on the resource).
func TestDurableValueOfSharedResourceChunk(t *testing.T) {
	for _, refs := range []bool{false, true} {
		b := sdkBatch(3)
		if refs {
			e := entity.ResourceEntityRefs(b.td.ResourceSpans().At(0).Resource()).AppendEmpty()
			e.SetType("service")
			e.IdKeys().Append("service.name")
		}
		dec := map[pcommon.TraceID]decision{tid(1): decHoldNew, tid(2): decHoldNew, tid(3): decHoldNew}
		_, chunks := takeTraces(b.td, dec, 0)
		require.Len(t, chunks, 3)
		var w protoWriter
		for _, c := range chunks {
			require.NotNil(t, c.shared, "the chunk shares the request's resource")
			whole := ptrace.NewTraces()
			c.td.CopyTo(whole)
			materialize(whole, c.shared)
			want, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(whole)
			require.NoError(t, err)
			assert.Equal(t, want, w.marshalTraces(c.td, c.shared), "entity refs %v", refs)
		}
	}
}

// Chunks that share one copy merge without comparing it; equal resources
// of different requests merge as before; different ones stay apart.
func TestMoveTracesWithSharedResources(t *testing.T) {
	split := func(service string) []*chunk {
		b := newBatch()
		b.td.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", service)
		agentTrace(b, 1, false)
		agentTrace(b, 2, false)
		_, chunks := takeTraces(b.td, map[pcommon.TraceID]decision{tid(1): decHoldNew, tid(2): decHoldNew}, 0)
		require.Len(t, chunks, 2)
		require.Same(t, chunks[0].shared[0], chunks[1].shared[0], "one copy for both traces")
		return chunks
	}
	a, again, other := split("travel-app"), split("travel-app"), split("billing")
	out := routedTraces{}
	for _, c := range []*chunk{a[0], a[1], again[0], other[0], other[1]} {
		out.merge(routedTraces{data: c.td, n: c.spans, shared: c.shared})
	}
	require.Equal(t, 2, out.data.ResourceSpans().Len(), "travel-app (two requests) and billing")
	require.Len(t, out.shared, 2)
	it := outItem{td: out.data, shared: out.shared}
	it.whole()
	assert.Nil(t, it.shared)
	services := map[string]int{}
	for i := 0; i < it.td.ResourceSpans().Len(); i++ {
		rs := it.td.ResourceSpans().At(i)
		name, _ := rs.Resource().Attributes().Get("service.name")
		services[name.Str()] += rs.ScopeSpans().At(0).Spans().Len()
	}
	assert.Equal(t, map[string]int{"travel-app": 15, "billing": 10}, services)
}

// sdkLogs is contentLogs of traces 1..n in one request under one resource
// with an SDK's attributes (a batch log record processor's export).
func sdkLogs(n byte) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.37.0")
	sdkBatch(0).td.ResourceSpans().At(0).Resource().CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	for tr := byte(1); tr <= n; tr++ {
		contentLogs(tr).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().MoveAndAppendTo(sl.LogRecords())
	}
	return ld
}

// Log records held with their traces share their request's resource too,
// and leave with it whole (owned and read-only requests).
func TestSharedResourceOfHeldLogRecords(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		h := newLogsHarness(t, nil)
		for tr := byte(1); tr <= 3; tr++ {
			h.consume(contentSpans(tr))
		}
		ld := sdkLogs(3)
		want := plog.NewResourceLogs()
		copyResource(ld.ResourceLogs().At(0), want)
		records := ld.LogRecordCount()
		if readOnly {
			ld.MarkReadOnly()
		}
		h.consumeLogs(ld)
		h.clk.advance(2 * time.Second)
		h.waitSpans(9)
		h.waitRecords(records + 6) // and two results a trace
		n := 0
		for _, got := range h.logs.AllLogs() {
			held := 0 // resources with held records in this request
			for i := 0; i < got.ResourceLogs().Len(); i++ {
				rl := got.ResourceLogs().At(i)
				if rl.ScopeLogs().Len() > 0 && rl.ScopeLogs().At(0).LogRecords().Len() > 0 &&
					rl.ScopeLogs().At(0).LogRecords().At(0).EventName() == "gen_ai.evaluation.result" {
					continue // the results: under the evaluated span's resource
				}
				held++
				n += rl.ScopeLogs().At(0).LogRecords().Len()
				assert.Equal(t, want.Resource().Attributes().AsRaw(), rl.Resource().Attributes().AsRaw(), "read-only %v", readOnly)
				assert.Equal(t, want.SchemaUrl(), rl.SchemaUrl())
			}
			assert.LessOrEqual(t, held, 1, "read-only %v: the traces' records released together go on under one resource", readOnly)
		}
		assert.Equal(t, records, n, "read-only %v: every record", readOnly)
		h.shutdownNow()
	}
}

// The durable store writes a log chunk with a shared resource as pdata
// writes it with the resource in place.
func TestDurableValueOfSharedResourceLogChunk(t *testing.T) {
	ld := sdkLogs(3)
	dec := map[pcommon.TraceID]decision{tid(1): decHoldNew, tid(2): decHoldNew, tid(3): decHoldNew}
	fwd, chunks := takeLogs(ld, dec, 0)
	require.Len(t, chunks, 3)
	var w protoWriter
	for _, c := range chunks {
		require.NotNil(t, c.logsShared)
		whole := plog.NewLogs()
		c.ld.CopyTo(whole)
		materializeLogs(whole, c.logsShared)
		want, err := (&plog.ProtoMarshaler{}).MarshalLogs(whole)
		require.NoError(t, err)
		assert.Equal(t, want, w.marshalLogs(c.ld, c.logsShared))
	}
	// handed back after a refusal: every record under the whole resource
	orig := sdkLogs(3)
	giveBack(ld, fwd, chunks)
	require.Equal(t, orig.LogRecordCount(), ld.LogRecordCount())
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		assert.Equal(t, orig.ResourceLogs().At(0).Resource().Attributes().AsRaw(), ld.ResourceLogs().At(i).Resource().Attributes().AsRaw())
	}
}
