package evalprocessor

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
)

// fillValues puts a value of every type in m, nested maps and slices too.
func fillValues(m pcommon.Map) {
	m.PutStr("str", "value")
	m.PutStr("", "empty key")
	m.PutStr("empty", "")
	m.PutInt("int", 42)
	m.PutInt("negative", -7)
	m.PutInt("zero", 0)
	m.PutDouble("double", 3.25)
	m.PutDouble("double_zero", 0)
	m.PutBool("true", true)
	m.PutBool("false", false)
	m.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 0xff})
	m.PutEmptyBytes("no_bytes")
	m.PutEmpty("nothing")
	inner := m.PutEmptyMap("map")
	inner.PutStr("a", "b")
	inner.PutEmptyMap("deeper").PutEmptySlice("list").AppendEmpty().SetInt(1)
	m.PutEmptyMap("empty_map")
	s := m.PutEmptySlice("slice")
	s.AppendEmpty().SetStr("x")
	s.AppendEmpty()
	s.AppendEmpty().SetEmptyMap().PutBool("in_slice", true)
	s.AppendEmpty().SetEmptySlice().AppendEmpty().SetDouble(-1.5)
	m.PutEmptySlice("empty_slice")
}

// richTraces sets every field ptrace shows, empty and zero ones among them.
func richTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
	fillValues(rs.Resource().Attributes())
	rs.Resource().SetDroppedAttributesCount(3)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.SetSchemaUrl("scope-schema")
	ss.Scope().SetName("lib")
	ss.Scope().SetVersion("1.2.3")
	ss.Scope().Attributes().PutStr("k", "v")
	ss.Scope().SetDroppedAttributesCount(1)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	sp.SetParentSpanID(pcommon.SpanID{8, 7, 6, 5, 4, 3, 2, 1})
	sp.TraceState().FromRaw("vendor=value")
	sp.SetFlags(0x301)
	sp.SetName("chat gpt-4o")
	sp.SetKind(ptrace.SpanKindClient)
	sp.SetStartTimestamp(1_700_000_000_000_000_000)
	sp.SetEndTimestamp(1_700_000_000_500_000_000)
	fillValues(sp.Attributes())
	sp.SetDroppedAttributesCount(2)
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	ev.SetTimestamp(1_700_000_000_100_000_000)
	ev.Attributes().PutStr("exception.message", "boom")
	ev.SetDroppedAttributesCount(4)
	sp.Events().AppendEmpty() // all empty
	sp.SetDroppedEventsCount(5)
	ln := sp.Links().AppendEmpty()
	ln.SetTraceID(pcommon.TraceID{9})
	ln.SetSpanID(pcommon.SpanID{9})
	ln.TraceState().FromRaw("a=b")
	ln.Attributes().PutInt("n", 1)
	ln.SetDroppedAttributesCount(6)
	ln.SetFlags(1)
	sp.Links().AppendEmpty()
	sp.SetDroppedLinksCount(7)
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage("failed")
	ss.Spans().AppendEmpty() // a span with nothing set: empty ids, status
	rs.ScopeSpans().AppendEmpty()
	td.ResourceSpans().AppendEmpty()
	return td
}

func richLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl("res-schema")
	fillValues(rl.Resource().Attributes())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.SetSchemaUrl("scope-schema")
	sl.Scope().SetName("lib")
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(1_700_000_000_000_000_000)
	lr.SetObservedTimestamp(1_700_000_000_000_000_001)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	lr.Body().SetEmptyMap().PutStr("content", "hello")
	fillValues(lr.Attributes())
	lr.SetDroppedAttributesCount(2)
	lr.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
	lr.SetTraceID(pcommon.TraceID{1})
	lr.SetSpanID(pcommon.SpanID{2})
	lr.SetEventName("gen_ai.client.inference.operation.details")
	sl.LogRecords().AppendEmpty().Body().SetStr("plain")
	sl.LogRecords().AppendEmpty()
	return ld
}

// The writer's bytes are ProtoMarshaler's, for every field, and they
// read back as the same data; the writer's buffer is reused and grows.
func TestProtoWriterWritesWhatPdataWrites(t *testing.T) {
	var w protoWriter
	var tm ptrace.ProtoMarshaler
	var lm plog.ProtoMarshaler
	var seq uint64
	cases := []ptrace.Traces{ptrace.NewTraces(), richTraces(), makeBatch(genAITemplate(), &seq), richTraces()}
	for i, td := range cases {
		want, err := tm.MarshalTraces(td)
		require.NoError(t, err)
		got := w.marshalTraces(td, nil)
		require.Equal(t, want, append([]byte{}, got...), "traces case %d", i)
		back, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(got)
		require.NoError(t, err)
		assert.Equal(t, td, back)
	}
	for i, ld := range []plog.Logs{plog.NewLogs(), richLogs()} {
		want, err := lm.MarshalLogs(ld)
		require.NoError(t, err)
		got := w.marshalLogs(ld, nil)
		require.Equal(t, want, append([]byte{}, got...), "logs case %d", i)
		back, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(got)
		require.NoError(t, err)
		assert.Equal(t, ld, back)
	}
	assert.Empty(t, w.kvs, "the map stack is emptied")

	// Growth while writing (from an empty buffer) keeps what is written.
	td := richTraces()
	want, err := tm.MarshalTraces(td)
	require.NoError(t, err)
	w = protoWriter{}
	w.reset()
	w.traces(td, nil)
	assert.Equal(t, want, w.buf[w.pos:])
}

// Fields the public API does not show are not lost: where one may be set
// the writer is unsure, compares its size with pdata's and pdata writes
// the chunk when they differ.
func TestProtoWriterFallsBackOnHiddenFields(t *testing.T) {
	td := richTraces()
	ref := entity.ResourceEntityRefs(td.ResourceSpans().At(0).Resource()).AppendEmpty()
	ref.SetType("service")
	ref.IdKeys().Append("service.name")
	ld := richLogs()
	entity.ResourceEntityRefs(ld.ResourceLogs().At(0).Resource()).AppendEmpty().SetType("host")

	var w protoWriter
	want, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	assert.Equal(t, want, w.marshalTraces(td, nil))
	wantLogs, _ := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	assert.Equal(t, wantLogs, w.marshalLogs(ld, nil))

	// A resource attribute with a profile's key_strindex (5) and
	// string_value_strindex (7) instead of strings.
	strindex := []byte{0x0a, 0x0a, 0x0a, 0x08, 0x0a, 0x06, 0x12, 0x02, 0x40, 0x07, 0x18, 0x05}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(strindex)
	require.NoError(t, err)
	want, _ = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.Len(t, want, len(strindex), "pdata keeps both")
	assert.Equal(t, want, w.marshalTraces(td, nil))
}

// protoFields lists the fields of the structs pdata keeps t in (its
// internal protobuf types), as "Type.Field", recursively.
func protoFields(t reflect.Type, seen map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != "go.opentelemetry.io/collector/pdata/internal" {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		*out = append(*out, t.Name()+"."+f.Name)
		protoFields(f.Type, seen, out)
	}
}

// The writer knows every field pdata holds for traces and logs, but those
// the public API does not show (hiddenFields), which make it unsure. A
// pdata upgrade that adds a field fails this test: teach protoWriter the
// field (and richTraces/richLogs), or list it as hidden and make the
// writer unsure where it may be set.
func TestProtoWriterKnowsPdataFields(t *testing.T) {
	written := []string{
		"ExportTraceServiceRequest.ResourceSpans", "ExportLogsServiceRequest.ResourceLogs",
		"ResourceSpans.Resource", "ResourceSpans.ScopeSpans", "ResourceSpans.SchemaUrl",
		"ResourceLogs.Resource", "ResourceLogs.ScopeLogs", "ResourceLogs.SchemaUrl",
		"Resource.Attributes", "Resource.DroppedAttributesCount",
		"KeyValue.Key", "KeyValue.Value", "AnyValue.Value",
		"InstrumentationScope.Name", "InstrumentationScope.Version", "InstrumentationScope.Attributes",
		"InstrumentationScope.DroppedAttributesCount",
		"ScopeSpans.Scope", "ScopeSpans.Spans", "ScopeSpans.SchemaUrl",
		"ScopeLogs.Scope", "ScopeLogs.LogRecords", "ScopeLogs.SchemaUrl",
		"Span.TraceId", "Span.SpanId", "Span.TraceState", "Span.ParentSpanId", "Span.Flags", "Span.Name",
		"Span.Kind", "Span.StartTimeUnixNano", "Span.EndTimeUnixNano", "Span.Attributes",
		"Span.DroppedAttributesCount", "Span.Events", "Span.DroppedEventsCount", "Span.Links",
		"Span.DroppedLinksCount", "Span.Status",
		"SpanEvent.TimeUnixNano", "SpanEvent.Name", "SpanEvent.Attributes", "SpanEvent.DroppedAttributesCount",
		"SpanLink.TraceId", "SpanLink.SpanId", "SpanLink.TraceState", "SpanLink.Attributes",
		"SpanLink.DroppedAttributesCount", "SpanLink.Flags",
		"Status.Message", "Status.Code",
		"LogRecord.TimeUnixNano", "LogRecord.ObservedTimeUnixNano", "LogRecord.SeverityNumber",
		"LogRecord.SeverityText", "LogRecord.Body", "LogRecord.Attributes", "LogRecord.DroppedAttributesCount",
		"LogRecord.Flags", "LogRecord.TraceId", "LogRecord.SpanId", "LogRecord.EventName",
	}
	hiddenFields := []string{
		// Entity references: the writer is unsure when a resource has some.
		"Resource.EntityRefs", "EntityRef.SchemaUrl", "EntityRef.Type", "EntityRef.IdKeys", "EntityRef.DescriptionKeys",
		// Profiles' string table: the writer is unsure on an empty key.
		"KeyValue.KeyStrindex",
		// Moved to ScopeSpans/ScopeLogs when pdata unmarshals.
		"ResourceSpans.DeprecatedScopeSpans", "ResourceLogs.DeprecatedScopeLogs",
	}
	var got []string
	seen := map[reflect.Type]bool{}
	protoFields(reflect.TypeOf(ptrace.NewTraces()).Field(0).Type, seen, &got)
	protoFields(reflect.TypeOf(plog.NewLogs()).Field(0).Type, seen, &got)
	want := append(append([]string(nil), written...), hiddenFields...)
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)
}
