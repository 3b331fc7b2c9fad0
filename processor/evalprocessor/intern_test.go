package evalprocessor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// sameString reports whether a and b are one string in memory, not two
// equal ones.
func sameString(a, b string) bool {
	return a == b && unsafe.StringData(a) == unsafe.StringData(b)
}

// decoded is td as a receiver hands it on: unmarshaled from OTLP protobuf,
// so that every key, name and value is a string of its own.
func decoded(t *testing.T, td ptrace.Traces) ptrace.Traces {
	t.Helper()
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	out, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	return out
}

// heldSpans lists the spans of chunks by trace and span id byte.
func heldSpans(chunks []*chunk) map[[2]byte]ptrace.Span {
	out := map[[2]byte]ptrace.Span{}
	for _, c := range chunks {
		adapter.ForEachSpan(c.td, func(r adapter.SpanRef) {
			tr, id := r.Span.TraceID(), r.Span.SpanID()
			out[[2]byte{tr[15], id[7]}] = r.Span
		})
	}
	return out
}

func keyString(t *testing.T, m pcommon.Map, key string) string {
	t.Helper()
	for k := range m.All() {
		if k == key {
			return k
		}
	}
	t.Fatalf("no key %q", key)
	return ""
}

// The spans held from two requests, decoded separately, share one copy of
// each repeated key, span name, repeating value (the tool definitions an
// agent sends on every call, the model) and resource attribute; the rest
// (prompts) keeps its own. Nothing about the spans changes.
func TestHeldSpansShareRepeatedStrings(t *testing.T) {
	defs := `[{"type":"function","name":"search_flights","parameters":{"type":"object"}}]`
	build := func() ptrace.Traces {
		b := sdkBatch(2)
		for _, tr := range []byte{1, 2} {
			llm := b.llm(tr, 9, fmt.Sprintf("prompt of trace %d", tr))
			llm.Attributes().PutStr("gen_ai.tool.definitions", defs)
			llm.Events().AppendEmpty().SetName("gen_ai.choice")
		}
		return b.td
	}
	want := build()
	dec := map[pcommon.TraceID]decision{tid(1): decHoldNew, tid(2): decHoldNew}
	_, first := takeTraces(decoded(t, want), dec, 0)
	_, second := takeTraces(decoded(t, build()), dec, 0)
	a, b := heldSpans(first), heldSpans(second)
	require.Len(t, a, 12)
	require.Len(t, b, 12)

	llmA, llmB := a[[2]byte{1, 9}], b[[2]byte{2, 9}]
	for _, key := range []string{"gen_ai.operation.name", "gen_ai.input.messages", "gen_ai.tool.definitions"} {
		assert.True(t, sameString(keyString(t, llmA.Attributes(), key), keyString(t, llmB.Attributes(), key)), "key %s", key)
	}
	assert.True(t, sameString(llmA.Name(), llmB.Name()), "span name")
	assert.True(t, sameString(llmA.Events().At(0).Name(), llmB.Events().At(0).Name()), "event name")
	for _, key := range []string{"gen_ai.tool.definitions", "gen_ai.request.model", "gen_ai.operation.name"} {
		va, _ := llmA.Attributes().Get(key)
		vb, _ := llmB.Attributes().Get(key)
		assert.True(t, sameString(va.Str(), vb.Str()), "value of %s", key)
	}
	toolA, toolB := a[[2]byte{1, 3}], b[[2]byte{1, 3}]
	va, _ := toolA.Attributes().Get("gen_ai.tool.name")
	vb, _ := toolB.Attributes().Get("gen_ai.tool.name")
	assert.True(t, sameString(va.Str(), vb.Str()), "tool name")
	va, _ = toolA.Attributes().Get("gen_ai.tool.call.arguments")
	vb, _ = toolB.Attributes().Get("gen_ai.tool.call.arguments")
	assert.False(t, sameString(va.Str(), vb.Str()), "arguments differ from call to call: not interned")

	assertSharedAttr(t, first[0].shared[0].rs.Resource().Attributes(), second[0].shared[0].rs.Resource().Attributes(), "host.name")

	// The held spans are the spans sent, attribute order included.
	sent := heldSpans(decodedChunks(want))
	for id, s := range a {
		assertSameSpan(t, sent[id], s)
	}
}

// decodedChunks is want's spans, one chunk, for comparison.
func decodedChunks(want ptrace.Traces) []*chunk {
	c := newChunk(pcommon.TraceID{})
	c.td = want
	return []*chunk{c}
}

func assertSameSpan(t *testing.T, want, got ptrace.Span) {
	t.Helper()
	wt, gt := ptrace.NewTraces(), ptrace.NewTraces()
	want.CopyTo(wt.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	got.CopyTo(gt.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	wb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(wt)
	require.NoError(t, err)
	gb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(gt)
	require.NoError(t, err)
	assert.Equal(t, wb, gb, "span %q", want.Name())
}

// Interning leaves every kind of attribute as it was: values of each
// type, nested values, a key sent twice (pdata keeps both), a map too
// large to rebuild, events.
func TestInternKeepsSpanAsSent(t *testing.T) {
	s := ptrace.NewSpan()
	s.SetName("chat gpt-4o")
	attrs := s.Attributes()
	attrs.PutStr("gen_ai.request.model", "gpt-4o")
	attrs.PutInt("gen_ai.usage.input_tokens", 12)
	attrs.PutDouble("temperature", 0.5)
	attrs.PutBool("stream", true)
	attrs.PutEmptyBytes("blob").FromRaw([]byte{1, 2, 3})
	require.NoError(t, attrs.PutEmptyMap("nested").FromRaw(map[string]any{"a": []any{"x", 1}}))
	require.NoError(t, attrs.PutEmptySlice("ai.prompt.tools").FromRaw([]any{`{"name":"a"}`, `{"name":"b"}`, 3}))
	attrs.PutEmpty("empty")
	ev := s.Events().AppendEmpty()
	ev.SetName("gen_ai.content.prompt")
	ev.Attributes().PutStr("gen_ai.prompt", "hello")

	big := ptrace.NewSpan()
	for i := 0; i < maxRekeyedAttrs+5; i++ {
		big.Attributes().PutStr(fmt.Sprintf("llm.input_messages.%d.message.content", i), strings.Repeat("x", i))
	}

	// A key twice: only reachable by decoding what a sender sent.
	dup := ptrace.NewTraces()
	da := dup.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes()
	da.PutStr("a", "1")
	da.PutStr("b", "2")
	da.PutStr("c", "3")
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(dup)
	require.NoError(t, err)
	raw = append([]byte(nil), raw...)
	// Rename key "c" to "a" in the wire bytes: the map now holds a, b, a.
	i := strings.LastIndex(string(raw), "\x0a\x01c")
	require.Positive(t, i)
	raw[i+2] = 'a'
	withDup, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	dupSpan := withDup.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	require.Equal(t, 3, dupSpan.Attributes().Len())

	in := getInterner()
	defer in.release()
	for _, sp := range []ptrace.Span{s, big, dupSpan} {
		want := ptrace.NewSpan()
		sp.CopyTo(want)
		in.span(sp)
		assertSameSpan(t, want, sp)
	}
	var keys []string
	for k, v := range dupSpan.Attributes().All() {
		keys = append(keys, k+"="+v.Str())
	}
	assert.Equal(t, []string{"a=1", "b=2", "a=3"}, keys)
}

// A stream of keys that never repeat (hostile or high-cardinality input)
// does not grow an interner without bound, and long strings are not
// cached at all.
func TestInternerIsBounded(t *testing.T) {
	in := newInterner()
	s := ptrace.NewSpan()
	for i := 0; i < 2*maxInternerEntries; i++ {
		s.Attributes().Clear()
		s.Attributes().PutStr(fmt.Sprintf("key.%d", i), "v")
		in.span(s)
	}
	assert.LessOrEqual(t, len(in.known), maxInternerEntries)
	assert.NotEmpty(t, in.known)
	n := len(in.known)
	in.str(strings.Repeat("y", maxCachedLen+1))
	assert.Len(t, in.known, n, "a long string is not cached")

	// The table every interner shares starts over when full.
	table := &internTable{m: map[string]string{}}
	for i := 0; i < maxTableEntries; i++ {
		table.intern(fmt.Sprintf("k%d", i))
	}
	assert.Len(t, table.m, maxTableEntries)
	first := table.intern("k0")
	assert.True(t, sameString(first, table.intern("k0")), "a repeat gets the canonical copy")
	table.intern("one more")
	assert.Len(t, table.m, 1, "started over")
	big := strings.Repeat("z", maxTableBytes/2)
	assert.True(t, sameString(big, table.intern(big)), "returned as it is")
	assert.Len(t, table.m, 1, "a string that large is not kept")
}

// Held log records share their repeated keys and event names too.
func TestHeldLogRecordsShareRepeatedStrings(t *testing.T) {
	build := func() plog.Logs {
		ld := plog.NewLogs()
		lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for _, tr := range []byte{1, 2} {
			lr := lrs.AppendEmpty()
			lr.SetTraceID(tid(tr))
			lr.SetEventName("gen_ai.user.message")
			lr.Attributes().PutStr("gen_ai.system", "openai")
			lr.Body().SetStr(fmt.Sprintf("question %d", tr))
		}
		raw, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		out, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(raw)
		require.NoError(t, err)
		return out
	}
	dec := map[pcommon.TraceID]decision{tid(1): decHoldNew, tid(2): decHoldNew}
	_, chunks := takeLogs(build(), dec, 0)
	require.Len(t, chunks, 2)
	a := chunks[0].ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	b := chunks[1].ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.True(t, sameString(a.EventName(), b.EventName()))
	assert.True(t, sameString(keyString(t, a.Attributes(), "gen_ai.system"), keyString(t, b.Attributes(), "gen_ai.system")))
	va, _ := a.Attributes().Get("gen_ai.system")
	vb, _ := b.Attributes().Get("gen_ai.system")
	assert.True(t, sameString(va.Str(), vb.Str()))
	assert.Equal(t, "question 1", a.Body().Str())
	assert.Equal(t, "question 2", b.Body().Str())
}

// Chunks restored from the store after a restart are held again, and
// share their repeats as on ingest: two stored chunks of one service,
// spans and log records, decoded separately.
func TestRestoredChunksShareRepeatedStrings(t *testing.T) {
	b := sdkBatch(1)
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(b.td)
	require.NoError(t, err)
	first, second := decodedTwice(t, chunkKey(keyTraces, tid(1), 1, 0), raw)
	rsA, rsB := first.td.ResourceSpans().At(0), second.td.ResourceSpans().At(0)
	assertSharedAttr(t, rsA.Resource().Attributes(), rsB.Resource().Attributes(), "host.name")
	spanA, spanB := rsA.ScopeSpans().At(0).Spans().At(0), rsB.ScopeSpans().At(0).Spans().At(0)
	assert.True(t, sameString(spanA.Name(), spanB.Name()))
	assertSameSpan(t, b.td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), spanA)

	ld := sdkLogs(1)
	rawLogs, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	la, lb := decodedTwice(t, chunkKey(keyLogs, tid(1), 1, 0), rawLogs)
	ra, rb := la.ld.ResourceLogs().At(0).Resource().Attributes(), lb.ld.ResourceLogs().At(0).Resource().Attributes()
	assertSharedAttr(t, ra, rb, "host.name")
	assert.Equal(t, ld.ResourceLogs().At(0).Resource().Attributes().AsRaw(), ra.AsRaw())
}

// decodedTwice restores the stored value raw under key twice.
func decodedTwice(t *testing.T, key string, raw []byte) (*chunk, *chunk) {
	t.Helper()
	a, err := decodeChunk(key, raw)
	require.NoError(t, err)
	b, err := decodeChunk(key, raw)
	require.NoError(t, err)
	return a, b
}

// assertSharedAttr asserts that maps a and b hold attribute key, and its
// string value, as one string each.
func assertSharedAttr(t *testing.T, a, b pcommon.Map, key string) {
	t.Helper()
	assert.True(t, sameString(keyString(t, a, key), keyString(t, b, key)), "key %s", key)
	va, _ := a.Get(key)
	vb, _ := b.Get(key)
	assert.True(t, sameString(va.Str(), vb.Str()), "value of %s", key)
}

// In a GenAI span's map too large to rebuild, the values under repeating
// keys are still shared, whether or not the map lists its keys in the
// order of the last map of its length (the shape), and other values are
// left alone; so is a large map of a span of no GenAI convention (an HTTP
// span), whatever keys it has.
func TestLargeMapsShareRepeatingValues(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	keys := make([]string, 0, maxRekeyedAttrs+8)
	for i := 0; i < cap(keys)-2; i++ {
		keys = append(keys, fmt.Sprintf("http.request.header.x-%d", i))
	}
	keys = append(keys, "gen_ai.operation.name", "gen_ai.request.model")
	moved := append([]string{"gen_ai.request.model"}, keys[:len(keys)-1]...)
	orders := [][]string{keys, keys, moved, append(slices.Clone(keys[:len(keys)-2]), "gen_ai.request.model", "gen_ai.response.id")}
	for _, order := range orders {
		attrs := spans.AppendEmpty().Attributes()
		for _, k := range order {
			attrs.PutStr(k, "value of "+k)
		}
		if v, ok := attrs.Get("gen_ai.operation.name"); ok {
			v.SetStr("chat")
		}
	}
	dec := decoded(t, td) // every string its own
	sent := ptrace.NewTraces()
	dec.CopyTo(sent)
	in := getInterner()
	defer in.release()
	got := dec.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < got.Len(); i++ {
		in.span(got.At(i))
	}
	model := func(i int) string { v, _ := got.At(i).Attributes().Get("gen_ai.request.model"); return v.Str() }
	header := func(i int) string { v, _ := got.At(i).Attributes().Get("http.request.header.x-3"); return v.Str() }
	assert.True(t, sameString(model(0), model(1)), "same shape")
	assert.True(t, sameString(model(0), model(2)), "another order")
	assert.False(t, sameString(header(0), header(1)), "a value that does not repeat is not interned")
	assert.False(t, sameString(model(0), model(3)), "not a GenAI span: not read")
	want := sent.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < got.Len(); i++ {
		assertSameSpan(t, want.At(i), got.At(i))
	}
}
