package evalprocessor

import (
	"encoding/binary"
	"math"
	"math/bits"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
)

// protoWriter writes a chunk's OTLP protobuf (ExportTraceServiceRequest or
// ExportLogsServiceRequest) into a buffer it reuses, for the durable store:
// pdata's ProtoMarshaler allocates a new buffer for every value, which was
// most of what the store allocated (and the garbage collector then
// scanned and swept). It writes backwards, from the end of the buffer, as
// pdata's own marshaler does, so a message's length is known when its
// header is written; the fields come in the same order, so the bytes are
// those ProtoMarshaler writes (durable_proto_test.go checks that).
//
// It reads the data through pdata's public API, which does not show every
// field of the protocol (hiddenFields in the test lists them): a
// resource's entity references, and the string table indexes of profiles
// that a key or a value may carry instead of a string. Where the data may
// hold one (entity references, an empty key, a value of no type the API
// knows), the size written is compared with the size pdata computes, and
// pdata's ProtoMarshaler writes the chunk when they differ.
type protoWriter struct {
	buf []byte
	pos int // what is written is buf[pos:]
	// kvs is a stack of the entries of the maps being written: pcommon.Map
	// iterates forwards only.
	kvs []keyVal
	// unsure: the data may hold what the public API does not show (see
	// hiddenFields): the caller compares sizes with pdata's.
	unsure bool
}

type keyVal struct {
	k string
	v pcommon.Value
}

// marshalTraces returns td's protobuf, in w's buffer (valid until the next
// call) when it can.
// The resources td's ResourceSpans share (shared, sharedres.go) are
// written in their place.
func (w *protoWriter) marshalTraces(td ptrace.Traces, shared []*sharedResource) []byte {
	w.reset()
	w.traces(td, shared)
	if w.unsure {
		whole := td
		if shared != nil {
			whole = ptrace.NewTraces()
			td.CopyTo(whole)
			materialize(whole, shared)
		}
		var m ptrace.ProtoMarshaler
		if w.written() != m.TracesSize(whole) {
			// A field the public API does not show: pdata writes it.
			raw, _ := m.MarshalTraces(whole) // cannot fail: pdata marshals what it holds
			return raw
		}
	}
	return w.buf[w.pos:]
}

// marshalLogs is marshalTraces for log records.
func (w *protoWriter) marshalLogs(ld plog.Logs, shared []*sharedResource) []byte {
	w.reset()
	w.logs(ld, shared)
	if w.unsure {
		whole := ld
		if shared != nil {
			whole = plog.NewLogs()
			ld.CopyTo(whole)
			materializeLogs(whole, shared)
		}
		var m plog.ProtoMarshaler
		if w.written() != m.LogsSize(whole) {
			raw, _ := m.MarshalLogs(whole)
			return raw
		}
	}
	return w.buf[w.pos:]
}

func (w *protoWriter) traces(td ptrace.Traces, shared []*sharedResource) {
	rss := td.ResourceSpans()
	for i := rss.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.resourceSpans(rss.At(i), resourceAt(shared, i, rss.At(i).Resource()))
		w.lenTag(mark, 0xa)
	}
}

func (w *protoWriter) logs(ld plog.Logs, shared []*sharedResource) {
	rls := ld.ResourceLogs()
	for i := rls.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.resourceLogs(rls.At(i), resourceAt(shared, i, rls.At(i).Resource()))
		w.lenTag(mark, 0xa)
	}
}

func (w *protoWriter) reset() {
	w.buf = w.buf[:cap(w.buf)]
	w.pos = len(w.buf)
	w.unsure = false
}

// written is how many bytes are written: a mark that survives growth.
func (w *protoWriter) written() int { return len(w.buf) - w.pos }

// room makes room for n more bytes before pos.
func (w *protoWriter) room(n int) {
	if w.pos < n {
		w.grow(n)
	}
}

func (w *protoWriter) grow(n int) {
	done := w.written()
	nb := make([]byte, max(2*len(w.buf)+n, 16<<10))
	copy(nb[len(nb)-done:], w.buf[w.pos:])
	w.buf, w.pos = nb, len(nb)-done
}

func (w *protoWriter) tag(t byte) {
	w.room(1)
	w.pos--
	w.buf[w.pos] = t
}

func (w *protoWriter) varint(v uint64) {
	if v < 0x80 {
		w.room(1)
		w.pos--
		w.buf[w.pos] = byte(v)
		return
	}
	n := (bits.Len64(v) + 6) / 7
	w.room(n)
	w.pos -= n
	b := w.buf[w.pos : w.pos+n]
	for i := range n - 1 {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[n-1] = byte(v)
}

// lenTag ends a length-delimited field whose content was written since mark.
func (w *protoWriter) lenTag(mark int, t byte) {
	if l := w.written() - mark; l < 0x80 {
		w.room(2)
		w.pos -= 2
		w.buf[w.pos] = t
		w.buf[w.pos+1] = byte(l)
		return
	}
	w.varint(uint64(w.written() - mark))
	w.tag(t)
}

func (w *protoWriter) varintField(t byte, v uint64) {
	if v != 0 {
		w.varint(v)
		w.tag(t)
	}
}

func (w *protoWriter) fixed64Field(t byte, v uint64) {
	if v != 0 {
		w.room(9)
		w.pos -= 8
		binary.LittleEndian.PutUint64(w.buf[w.pos:], v)
		w.pos--
		w.buf[w.pos] = t
	}
}

// fixed32Field writes a fixed32 field; tag is its tag's bytes.
func (w *protoWriter) fixed32Field(tag string, v uint32) {
	if v != 0 {
		w.room(4 + len(tag))
		w.pos -= 4
		binary.LittleEndian.PutUint32(w.buf[w.pos:], v)
		w.pos -= len(tag)
		copy(w.buf[w.pos:], tag)
	}
}

// str writes a string field, even empty (a oneof's).
func (w *protoWriter) str(t byte, s string) {
	mark := w.written()
	w.room(len(s))
	w.pos -= len(s)
	copy(w.buf[w.pos:], s)
	w.lenTag(mark, t)
}

func (w *protoWriter) strField(t byte, s string) {
	if s != "" {
		w.str(t, s)
	}
}

// traceID and spanID write an id field: empty (length 0) when all zero,
// as pdata does.
func (w *protoWriter) traceID(t byte, id pcommon.TraceID) {
	if id.IsEmpty() {
		w.room(2)
		w.pos -= 2
		w.buf[w.pos], w.buf[w.pos+1] = t, 0
		return
	}
	w.room(18)
	w.pos -= 18
	w.buf[w.pos], w.buf[w.pos+1] = t, 16
	copy(w.buf[w.pos+2:], id[:])
}

func (w *protoWriter) spanID(t byte, id pcommon.SpanID) {
	if id.IsEmpty() {
		w.room(2)
		w.pos -= 2
		w.buf[w.pos], w.buf[w.pos+1] = t, 0
		return
	}
	w.room(10)
	w.pos -= 10
	w.buf[w.pos], w.buf[w.pos+1] = t, 8
	copy(w.buf[w.pos+2:], id[:])
}

// attrs writes m's entries as repeated KeyValue field t.
func (w *protoWriter) attrs(t byte, m pcommon.Map) {
	if m.Len() == 0 {
		return
	}
	base := len(w.kvs)
	for k, v := range m.All() {
		w.kvs = append(w.kvs, keyVal{k, v})
	}
	for i := len(w.kvs) - 1; i >= base; i-- {
		kv := w.kvs[i] // w.kvs may grow meanwhile (nested maps)
		mark := w.written()
		if kv.k == "" {
			w.unsure = true // or a key_strindex
		}
		w.strField(0xa, kv.k)
		vm := w.written()
		w.anyValue(kv.v)
		w.lenTag(vm, 0x12)
		w.lenTag(mark, t)
	}
	clear(w.kvs[base:])
	w.kvs = w.kvs[:base]
}

func (w *protoWriter) anyValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		w.str(0xa, v.Str())
	case pcommon.ValueTypeBool:
		w.room(2)
		w.pos -= 2
		w.buf[w.pos] = 0x10
		w.buf[w.pos+1] = 0
		if v.Bool() {
			w.buf[w.pos+1] = 1
		}
	case pcommon.ValueTypeInt:
		w.varint(uint64(v.Int()))
		w.tag(0x18)
	case pcommon.ValueTypeDouble:
		w.room(9)
		w.pos -= 8
		binary.LittleEndian.PutUint64(w.buf[w.pos:], math.Float64bits(v.Double()))
		w.pos--
		w.buf[w.pos] = 0x21
	case pcommon.ValueTypeSlice:
		mark := w.written()
		s := v.Slice()
		for i := s.Len() - 1; i >= 0; i-- {
			em := w.written()
			w.anyValue(s.At(i))
			w.lenTag(em, 0xa)
		}
		w.lenTag(mark, 0x2a)
	case pcommon.ValueTypeMap:
		mark := w.written()
		w.attrs(0xa, v.Map())
		w.lenTag(mark, 0x32)
	case pcommon.ValueTypeBytes:
		b := v.Bytes().AsRaw()
		w.room(len(b))
		w.pos -= len(b)
		copy(w.buf[w.pos:], b)
		w.varint(uint64(len(b)))
		w.tag(0x3a)
	default:
		w.unsure = true // empty, or a string_value_strindex
	}
}

func (w *protoWriter) resource(r pcommon.Resource) {
	if entity.ResourceEntityRefs(r).Len() > 0 {
		w.unsure = true
	}
	w.attrs(0xa, r.Attributes())
	w.varintField(0x10, uint64(r.DroppedAttributesCount()))
}

func (w *protoWriter) scope(s pcommon.InstrumentationScope) {
	w.strField(0xa, s.Name())
	w.strField(0x12, s.Version())
	w.attrs(0x1a, s.Attributes())
	w.varintField(0x20, uint64(s.DroppedAttributesCount()))
}

// resourceSpans writes rs with resource res (its own, or the one it
// shares).
func (w *protoWriter) resourceSpans(rs ptrace.ResourceSpans, res pcommon.Resource) {
	mark := w.written()
	w.resource(res)
	w.lenTag(mark, 0xa)
	sss := rs.ScopeSpans()
	for i := sss.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.scopeSpans(sss.At(i))
		w.lenTag(mark, 0x12)
	}
	w.strField(0x1a, rs.SchemaUrl())
}

func (w *protoWriter) scopeSpans(ss ptrace.ScopeSpans) {
	mark := w.written()
	w.scope(ss.Scope())
	w.lenTag(mark, 0xa)
	spans := ss.Spans()
	for i := spans.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.span(spans.At(i))
		w.lenTag(mark, 0x12)
	}
	w.strField(0x1a, ss.SchemaUrl())
}

func (w *protoWriter) span(s ptrace.Span) {
	w.traceID(0xa, s.TraceID())
	w.spanID(0x12, s.SpanID())
	w.strField(0x1a, s.TraceState().AsRaw())
	w.spanID(0x22, s.ParentSpanID())
	w.fixed32Field("\x85\x01", s.Flags())
	w.strField(0x2a, s.Name())
	w.varintField(0x30, uint64(s.Kind()))
	w.fixed64Field(0x39, uint64(s.StartTimestamp()))
	w.fixed64Field(0x41, uint64(s.EndTimestamp()))
	w.attrs(0x4a, s.Attributes())
	w.varintField(0x50, uint64(s.DroppedAttributesCount()))
	evs := s.Events()
	for i := evs.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.event(evs.At(i))
		w.lenTag(mark, 0x5a)
	}
	w.varintField(0x60, uint64(s.DroppedEventsCount()))
	links := s.Links()
	for i := links.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.link(links.At(i))
		w.lenTag(mark, 0x6a)
	}
	w.varintField(0x70, uint64(s.DroppedLinksCount()))
	mark := w.written()
	st := s.Status()
	w.strField(0x12, st.Message())
	w.varintField(0x18, uint64(st.Code()))
	w.lenTag(mark, 0x7a)
}

func (w *protoWriter) event(e ptrace.SpanEvent) {
	w.fixed64Field(0x9, uint64(e.Timestamp()))
	w.strField(0x12, e.Name())
	w.attrs(0x1a, e.Attributes())
	w.varintField(0x20, uint64(e.DroppedAttributesCount()))
}

func (w *protoWriter) link(l ptrace.SpanLink) {
	w.traceID(0xa, l.TraceID())
	w.spanID(0x12, l.SpanID())
	w.strField(0x1a, l.TraceState().AsRaw())
	w.attrs(0x22, l.Attributes())
	w.varintField(0x28, uint64(l.DroppedAttributesCount()))
	w.fixed32Field("\x35", l.Flags())
}

// resourceLogs is resourceSpans for log records.
func (w *protoWriter) resourceLogs(rl plog.ResourceLogs, res pcommon.Resource) {
	mark := w.written()
	w.resource(res)
	w.lenTag(mark, 0xa)
	sls := rl.ScopeLogs()
	for i := sls.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.scopeLogs(sls.At(i))
		w.lenTag(mark, 0x12)
	}
	w.strField(0x1a, rl.SchemaUrl())
}

func (w *protoWriter) scopeLogs(sl plog.ScopeLogs) {
	mark := w.written()
	w.scope(sl.Scope())
	w.lenTag(mark, 0xa)
	lrs := sl.LogRecords()
	for i := lrs.Len() - 1; i >= 0; i-- {
		mark := w.written()
		w.logRecord(lrs.At(i))
		w.lenTag(mark, 0x12)
	}
	w.strField(0x1a, sl.SchemaUrl())
}

func (w *protoWriter) logRecord(lr plog.LogRecord) {
	w.fixed64Field(0x9, uint64(lr.Timestamp()))
	w.fixed64Field(0x59, uint64(lr.ObservedTimestamp()))
	w.varintField(0x10, uint64(lr.SeverityNumber()))
	w.strField(0x1a, lr.SeverityText())
	mark := w.written()
	w.anyValue(lr.Body())
	w.lenTag(mark, 0x2a)
	w.attrs(0x32, lr.Attributes())
	w.varintField(0x38, uint64(lr.DroppedAttributesCount()))
	w.fixed32Field("\x45", uint32(lr.Flags()))
	w.traceID(0x4a, lr.TraceID())
	w.spanID(0x52, lr.SpanID())
	w.strField(0x62, lr.EventName())
}
