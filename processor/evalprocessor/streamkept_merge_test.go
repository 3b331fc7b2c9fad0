package evalprocessor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// keptRequest is what stream mode keeps of one request carrying spans of
// trace tr only, packed as the consume call packs it.
func keptRequest(t *testing.T, td ptrace.Traces, tr byte, rt route) *chunk {
	t.Helper()
	chunks := keepSpans(td, map[pcommon.TraceID]decision{tid(tr): decHoldNew}, rt)
	require.Len(t, chunks, 1)
	packAll(chunks)
	return chunks[0]
}

// richBatch is newBatch under an SDK's resource, as every request of a
// service repeats it.
func richBatch() *batch {
	b := newBatch()
	res := b.td.ResourceSpans().At(0).Resource().Attributes()
	for _, k := range []string{"service.version", "service.instance.id", "host.name", "telemetry.sdk.name", "process.runtime.version"} {
		res.PutStr(k, k+"-6f1c2a7e-0b9d-4c3e-9a51-2f0d8c7b4e11")
	}
	return b
}

// A trace's parts from several requests are kept as one, compressed
// together: what the requests repeat (the resource, the tool definitions
// each chat span carries) is kept once, and unpacking gives every span,
// GenAI spans whole and the others as stubs, as keeping them apart does.
func TestStreamKeptPartsOfATraceMerge(t *testing.T) {
	tools := strings.Repeat(`{"name":"search_flights","parameters":{"from":"string","to":"string","date":"string"}},`, 12)
	var reqs []ptrace.Traces
	for i := byte(0); i < 3; i++ {
		b := richBatch()
		b.llm(1, 10+i, "book me a flight").Attributes().PutStr("gen_ai.tool.definitions", tools)
		b.tool(1, 20+i, "search_flights", false)
		b.plain(1, 30+i, 20+i)
		if i == 2 {
			b.agent(1)
		}
		reqs = append(reqs, b.td)
	}
	merged, apart := &heldTrace{id: tid(1)}, &heldTrace{id: tid(1)}
	for _, td := range reqs {
		c := keptRequest(t, td, 1, 0)
		merged.keep(c)
		apart.kept = append(apart.kept, *c.kept)
	}
	require.Len(t, merged.kept, 1)
	require.Len(t, apart.kept, 3)
	assert.Less(t, float64(merged.keptBytes()), 0.6*float64(apart.keptBytes()),
		"kept together %d B, apart %d B", merged.keptBytes(), apart.keptBytes())
	assert.Equal(t, 10, merged.kept[0].n)
	assert.Len(t, merged.kept[0].stubs, 3)

	require.NoError(t, merged.unpack())
	require.NoError(t, apart.unpack())
	spansOf := func(ht *heldTrace) map[pcommon.SpanID]map[string]any {
		out := map[pcommon.SpanID]map[string]any{}
		for _, pt := range ht.parts {
			adapter.ForEachSpan(pt.td, func(r adapter.SpanRef) {
				attrs := r.Span.Attributes().AsRaw()
				attrs["@parent"] = r.Span.ParentSpanID().String()
				attrs["@service"] = r.Resource().Attributes().AsRaw()["service.instance.id"]
				out[r.Span.SpanID()] = attrs
			})
		}
		return out
	}
	require.Len(t, merged.parts, 1)
	assert.Equal(t, 10, merged.parts[0].spans)
	got := spansOf(merged)
	assert.Len(t, got, 10)
	assert.Equal(t, spansOf(apart), got)
	assert.Equal(t, tools, got[sid(11)]["gen_ai.tool.definitions"])
}

// Parts merge only where unpacking them together gives what they kept:
// not across routes, not spans with records; not past maxMergedRaw nor a
// part many times the size of the next (a long trace is not compressed
// again whole with each request); and not what does not decode (unpack
// reports it).
func TestStreamKeptPartsMergeOnlyWhereTheyMay(t *testing.T) {
	small := func(rt route) *chunk {
		b := richBatch()
		b.llm(1, 2, "hi")
		return keptRequest(t, b.td, 1, rt)
	}

	ht := &heldTrace{id: tid(1)}
	ht.keep(small(0))
	ht.keep(small(1))
	assert.Len(t, ht.kept, 2, "another route: a part of its own")

	ht = &heldTrace{id: tid(1)}
	ht.keep(small(0))
	ht.keep(&chunk{id: tid(1), isLogs: true, kept: &keptPart{isLogs: true, n: 1, packed: compress([]byte{0xa, 0})}})
	assert.Len(t, ht.kept, 2, "records and spans apart")

	big := func() *chunk {
		b := richBatch()
		b.llm(1, 2, strings.Repeat("x", maxMergedRaw/2))
		return keptRequest(t, b.td, 1, 0)
	}
	ht = &heldTrace{id: tid(1)}
	ht.keep(big())
	ht.keep(big())
	assert.Len(t, ht.kept, 2, "past maxMergedRaw: a new part")
	ht.keep(big())
	assert.Len(t, ht.kept, 3, "past maxMergedRaw: a new part")
	ht.keep(small(0))
	assert.Len(t, ht.kept, 4, "a part many times the next's size: a new part")
	ht.keep(small(0))
	assert.Len(t, ht.kept, 4, "the new part takes the next one in")

	ht = &heldTrace{id: tid(1)}
	ht.keep(small(0))
	ht.kept[0].packed = []byte{0xff, 0xff, 0xff}
	ht.keep(small(0))
	require.Len(t, ht.kept, 2, "a part that does not decode stays apart")
	err := ht.unpack()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 kept parts of trace")
	require.Len(t, ht.parts, 2)
	assert.Equal(t, 0, ht.parts[0].spans)
	assert.Equal(t, 1, ht.parts[1].spans)
}
