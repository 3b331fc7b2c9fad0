package evalprocessor

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
)

// What stream mode keeps of a trace (docs/contract.md §26), one keptPart
// per trace and consume call: the GenAI spans whole, with their resources
// and scopes, and the root span's name, times and §3 attributes, as one
// s2-compressed OTLP protobuf (a GenAI span's messages are most of its
// size and compress well); of every other span only its id and parent id,
// 16 bytes. Log records: the GenAI content events, compressed likewise.
// Nothing else of the request is kept: it has already gone on. unpack
// turns the parts back into spans and records when the trace is scored,
// so scoring is the same as in hold mode.
type keptPart struct {
	route route
	// packed is the compressed protobuf of the GenAI spans (or records).
	packed []byte
	// stubs are the other spans, ids only.
	stubs  []spanStub
	isLogs bool
	// n is the spans (all of them) or GenAI records it stands for.
	n int
	// raw, until packed is set, is the protobuf written from the request
	// (in a buffer of the consume call's, arena): the consume call
	// compresses it after the request has gone on, so compressing adds
	// nothing to the request's latency.
	raw   []byte
	arena *keptArena
}

// keptArena is the buffer one consume call writes the protobuf of what it
// keeps into, before the request goes on; packAll compresses each part
// out of it and gives it back.
type keptArena struct {
	w   protoWriter // writes each part (backwards, into its own buffer)
	buf []byte      // the parts written, one after another
}

var keptArenas = sync.Pool{New: func() any { return new(keptArena) }}

// add appends what w wrote to the arena and returns it (valid until the
// arena goes back to its pool).
func (a *keptArena) add() []byte {
	off := len(a.buf)
	a.buf = append(a.buf, a.w.buf[a.w.pos:]...)
	return a.buf[off:len(a.buf):len(a.buf)]
}

// packAll sets packed on every chunk's part from its protobuf and gives
// the call's arena back.
func packAll(chunks []*chunk) {
	var arena *keptArena
	for _, c := range chunks {
		k := c.kept
		if k == nil {
			continue
		}
		if k.raw != nil {
			k.packed = compress(k.raw)
		}
		arena = k.arena
		k.raw, k.arena = nil, nil
	}
	if arena != nil && cap(arena.buf) <= 1<<20 && cap(arena.w.buf) <= 1<<20 {
		arena.buf = arena.buf[:0]
		keptArenas.Put(arena)
	}
}

// spanStub is a span no case reads, kept for the parent chain.
type spanStub struct {
	id, parent pcommon.SpanID
}

// keptPartOverhead is what a keptPart costs besides its bytes (the
// struct and its slice headers), for keptBytes.
const keptPartOverhead = 96

// size is the bytes the part keeps.
func (k *keptPart) size() int {
	return keptPartOverhead + len(k.packed) + 16*len(k.stubs)
}

// rootAttrs are the §3 attributes a root span that is not a GenAI span
// keeps: an agent case reads its expectations from the root when its own
// span has none.
var rootAttrs = [...]string{
	adapter.AttrExpectedToolCalls, adapter.AttrExpectedOutput, adapter.AttrExpectedDocuments,
	adapter.AttrTasks, adapter.AttrConstraints, adapter.AttrConversationGoal, adapter.AttrContext,
}

// spanKeeper gathers what one consume call keeps of one trace: the spans
// to write, by resource and scope, and the stubs of the rest.
type spanKeeper struct {
	c      *chunk
	groups []keptGroup
	stubs  []spanStub
}

// keptGroup is spans of the request under one resource and scope, kept
// whole (GenAI spans) or as a root (keepRoot's fields).
type keptGroup struct {
	rs    ptrace.ResourceSpans
	ss    ptrace.ScopeSpans
	spans []keptSpan
}

type keptSpan struct {
	span     ptrace.Span
	rootOnly bool
}

func (k *spanKeeper) add(r adapter.SpanRef, rootOnly bool) {
	if n := len(k.groups); n == 0 || k.groups[n-1].rs != r.ResourceSpans || k.groups[n-1].ss != r.ScopeSpans {
		k.groups = append(k.groups, keptGroup{rs: r.ResourceSpans, ss: r.ScopeSpans})
	}
	g := &k.groups[len(k.groups)-1]
	g.spans = append(g.spans, keptSpan{span: r.Span, rootOnly: rootOnly})
}

// keepSpans extracts from td what stream mode keeps of the spans of the
// traces dec holds: one chunk per trace, in order of first appearance.
// It writes their protobuf straight from td (no pdata copy) before td
// goes on; packAll compresses it after. td is only read.
func keepSpans(td ptrace.Traces, dec map[pcommon.TraceID]decision, rt route) []*chunk {
	var order []*spanKeeper
	byID := make(map[pcommon.TraceID]*spanKeeper, len(dec))
	var lastID pcommon.TraceID
	var last *spanKeeper
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		id := r.Span.TraceID()
		if last == nil || id != lastID {
			lastID, last = id, nil
			if dec[id].holds() {
				if last = byID[id]; last == nil {
					last = &spanKeeper{c: &chunk{id: id, route: rt}}
					byID[id] = last
					order = append(order, last)
				}
			}
		}
		if last == nil {
			return
		}
		k := last
		k.c.spans++
		switch {
		case adapter.IsGenAI(r.Span):
			k.add(r, false)
			k.c.root = k.c.root || r.Span.ParentSpanID().IsEmpty()
		case r.Span.ParentSpanID().IsEmpty():
			k.add(r, true)
			k.c.root = true
		default:
			k.stubs = append(k.stubs, spanStub{id: r.Span.SpanID(), parent: r.Span.ParentSpanID()})
		}
	})
	if len(order) == 0 {
		return nil
	}
	arena := keptArenas.Get().(*keptArena)
	chunks := make([]*chunk, len(order))
	for i, k := range order {
		part := &keptPart{route: rt, stubs: k.stubs, n: k.c.spans, arena: arena}
		if len(k.groups) > 0 {
			part.raw = arena.spans(k.groups)
		}
		k.c.kept = part
		chunks[i] = k.c
	}
	return chunks
}

// spans writes groups as an ExportTraceServiceRequest into the arena.
func (a *keptArena) spans(groups []keptGroup) []byte {
	w := &a.w
	w.reset()
	for i := len(groups) - 1; i >= 0; i-- {
		g := &groups[i]
		writeKeptGroup(w, g.rs, g.ss, func() {
			for j := len(g.spans) - 1; j >= 0; j-- {
				m := w.written()
				if g.spans[j].rootOnly {
					w.rootSpan(g.spans[j].span)
				} else {
					w.span(g.spans[j].span)
				}
				w.lenTag(m, 0x12)
			}
		})
	}
	if w.unsure {
		// A field pdata's public API does not show (protoWriter): pdata
		// copies and writes these spans.
		raw, _ := tracesMarshaler.MarshalTraces(copyKept(groups)) // cannot fail: pdata marshals what it holds
		off := len(a.buf)
		a.buf = append(a.buf, raw...)
		return a.buf[off:len(a.buf):len(a.buf)]
	}
	return a.add()
}

// writeKeptGroup writes one ResourceSpans (or ResourceLogs) of a kept part:
// res's resource, one scope, sc's, the items that items writes (backwards,
// as everything protoWriter writes), and both schema URLs. The fields and
// their tags are the same for spans and records.
func writeKeptGroup[R resourceOf, S scopeOf](w *protoWriter, res R, sc S, items func()) {
	mark := w.written()
	rm := w.written()
	w.resource(res.Resource())
	w.lenTag(rm, 0xa)
	sm := w.written()
	scm := w.written()
	w.scope(sc.Scope())
	w.lenTag(scm, 0xa)
	items()
	w.strField(0x1a, sc.SchemaUrl())
	w.lenTag(sm, 0x12)
	w.strField(0x1a, res.SchemaUrl())
	w.lenTag(mark, 0xa)
}

// rootSpan writes of root span s, not a GenAI span, what a case may read:
// its ids, name, kind, times, status and rootKept attributes.
func (w *protoWriter) rootSpan(s ptrace.Span) {
	w.traceID(0xa, s.TraceID())
	w.spanID(0x12, s.SpanID())
	w.spanID(0x22, s.ParentSpanID())
	w.strField(0x2a, s.Name())
	w.varintField(0x30, uint64(s.Kind()))
	w.fixed64Field(0x39, uint64(s.StartTimestamp()))
	w.fixed64Field(0x41, uint64(s.EndTimestamp()))
	kept := rootKept(s.Attributes())
	for i := len(kept) - 1; i >= 0; i-- {
		mark := w.written()
		w.strField(0xa, kept[i].k)
		vm := w.written()
		w.anyValue(kept[i].v)
		w.lenTag(vm, 0x12)
		w.lenTag(mark, 0x4a)
	}
	mark := w.written()
	st := s.Status()
	w.strField(0x12, st.Message())
	w.varintField(0x18, uint64(st.Code()))
	w.lenTag(mark, 0x7a)
}

// copyKept is groups as pdata, for what protoWriter cannot write.
func copyKept(groups []keptGroup) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, g := range groups {
		rs := copyResource(g.rs, td.ResourceSpans().AppendEmpty())
		ss := copyScope(g.ss, rs.ScopeSpans().AppendEmpty())
		for _, ks := range g.spans {
			if ks.rootOnly {
				keepRoot(ks.span, ss.Spans().AppendEmpty())
			} else {
				ks.span.CopyTo(ss.Spans().AppendEmpty())
			}
		}
	}
	return td
}

// keepRoot copies of root span s what rootSpan writes.
func keepRoot(s, dst ptrace.Span) {
	dst.SetTraceID(s.TraceID())
	dst.SetSpanID(s.SpanID())
	dst.SetName(s.Name())
	dst.SetKind(s.Kind())
	dst.SetStartTimestamp(s.StartTimestamp())
	dst.SetEndTimestamp(s.EndTimestamp())
	s.Status().CopyTo(dst.Status())
	for _, kv := range rootKept(s.Attributes()) {
		kv.v.CopyTo(dst.Attributes().PutEmpty(kv.k))
	}
}

// maxDescribing bounds the describing attributes kept of a root, and
// copied onto a result span.
const maxDescribing = annotator.MaxDescribing

type keyValue struct {
	k string
	v pcommon.Value
}

// rootKept is what a root span that is no GenAI span keeps of its
// attributes, in their order: the §3 ones, and those that describe it
// (annotator.Describing, at most maxDescribing): an agent case
// anchored on the root reads them in `when` conditions and `cel`, and its
// result span carries them for monitors, as in hold mode.
func rootKept(attrs pcommon.Map) []keyValue {
	var out []keyValue
	describing := 0
	for k, v := range attrs.All() {
		switch {
		case slices.Contains(rootAttrs[:], k):
		case describing < maxDescribing && annotator.Describing(k, v):
			describing++
		default:
			continue
		}
		out = append(out, keyValue{k, v})
	}
	return out
}

// keepLogs extracts from ld the GenAI content events of the traces dec
// holds: one chunk per trace, written like keepSpans'. Other records of
// those traces are not kept (no case reads them).
func keepLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) []*chunk {
	type logGroup struct {
		rl      plog.ResourceLogs
		sl      plog.ScopeLogs
		records []plog.LogRecord
	}
	type logKeeper struct {
		c      *chunk
		groups []logGroup
	}
	var order []*logKeeper
	var byID map[pcommon.TraceID]*logKeeper
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs) {
		id := lr.TraceID()
		if !dec[id].holds() || !adapter.IsGenAIEvent(lr) {
			return
		}
		k := byID[id]
		if k == nil {
			if byID == nil {
				byID = make(map[pcommon.TraceID]*logKeeper, len(dec))
			}
			k = &logKeeper{c: &chunk{id: id, route: rt, isLogs: true}}
			byID[id] = k
			order = append(order, k)
		}
		if n := len(k.groups); n == 0 || k.groups[n-1].rl != rl || k.groups[n-1].sl != sl {
			k.groups = append(k.groups, logGroup{rl: rl, sl: sl})
		}
		g := &k.groups[len(k.groups)-1]
		g.records = append(g.records, lr)
		k.c.count++
	})
	if len(order) == 0 {
		return nil
	}
	arena := keptArenas.Get().(*keptArena)
	chunks := make([]*chunk, len(order))
	for i, k := range order {
		w := &arena.w
		w.reset()
		for gi := len(k.groups) - 1; gi >= 0; gi-- {
			g := &k.groups[gi]
			writeKeptGroup(w, g.rl, g.sl, func() {
				for j := len(g.records) - 1; j >= 0; j-- {
					m := w.written()
					w.logRecord(g.records[j])
					w.lenTag(m, 0x12)
				}
			})
		}
		var raw []byte
		if !w.unsure {
			raw = arena.add()
		} else {
			// What protoWriter cannot write: pdata copies and writes it.
			cp := plog.NewLogs()
			for _, g := range k.groups {
				sl := copyScope(g.sl, copyResource(g.rl, cp.ResourceLogs().AppendEmpty()).ScopeLogs().AppendEmpty())
				for _, lr := range g.records {
					lr.CopyTo(sl.LogRecords().AppendEmpty())
				}
			}
			raw, _ = logsMarshaler.MarshalLogs(cp) // cannot fail: pdata marshals what it holds
		}
		k.c.kept = &keptPart{route: rt, raw: raw, arena: arena, isLogs: true, n: k.c.count}
		chunks[i] = k.c
	}
	return chunks
}

var (
	tracesMarshaler   ptrace.ProtoMarshaler
	tracesUnmarshaler ptrace.ProtoUnmarshaler
	logsMarshaler     plog.ProtoMarshaler
	logsUnmarshaler   plog.ProtoUnmarshaler
	// packBuf is the scratch the compressor writes into; what is kept is
	// an exact-size copy (s2 sizes its output for the worst case).
	packBuf = sync.Pool{New: func() any { return new([]byte) }}
)

func compress(raw []byte) []byte {
	bp := packBuf.Get().(*[]byte)
	if n := s2.MaxEncodedLen(len(raw)); cap(*bp) < n {
		*bp = make([]byte, n)
	}
	out := bytes.Clone(s2.Encode((*bp)[:cap(*bp)], raw))
	if cap(*bp) <= 1<<20 {
		packBuf.Put(bp)
	}
	return out
}

// keep adds a stream-mode chunk to its trace: into its last part when it
// can (merge), else as a part of its own.
func (t *heldTrace) keep(c *chunk) {
	if n := len(t.kept); n == 0 || !t.kept[n-1].merge(c.kept) {
		t.kept = append(t.kept, *c.kept)
	}
	t.keepKey(c)
	if c.isLogs {
		t.keptRecords += c.count
		return
	}
	t.spans += c.spans
	t.root = t.root || c.root
}

// maxMergedRaw bounds the protobuf a kept part gathers by merging. Each
// consume call compresses what it keeps of a trace on its own, and a
// trace's requests repeat much (the resource in each, the tool
// definitions every chat span carries): compressed apart, the parts of
// the load generator's traces (3 requests each) kept 0.62 of their OTLP
// size; compressed together, 0.30 (BenchmarkLoadShapeHeldBytes: 618 and
// 326 B a held span, hold mode 1,030). A merge compresses the whole part
// again, so a long trace starts a new part past this size rather than
// compress its kept bytes again with each request.
const maxMergedRaw = 32 << 10

// maxMergeGrowth bounds what a merge compresses again against what it
// adds: a part takes the next in only while it is at most this many times
// its size, so a trace sent a span at a time compresses each byte at most
// about five times, not once per request up to maxMergedRaw.
const maxMergeGrowth = 3

// merge adds next, a later part of the same trace, to k, compressing
// their protobuf together (concatenated, two protobuf messages of a type
// are one with both's repeated fields), and says whether it did: not
// across routes or between spans and records, nor past maxMergedRaw or
// maxMergeGrowth, nor what does not decode (unpack reports that part).
func (k *keptPart) merge(next *keptPart) bool {
	if k.route != next.route || k.isLogs != next.isLogs || k.raw != nil || next.raw != nil {
		return false
	}
	switch {
	case len(next.packed) == 0:
	case len(k.packed) == 0:
		k.packed = next.packed
	default:
		packed, ok := compressTogether(k.packed, next.packed)
		if !ok {
			return false
		}
		k.packed = packed
	}
	k.stubs = append(k.stubs, next.stubs...)
	k.n += next.n
	return true
}

// compressTogether is the compressed concatenation of what a and b
// decompress to; false past maxMergedRaw or maxMergeGrowth, or when either
// does not decode.
func compressTogether(a, b []byte) ([]byte, bool) {
	na, errA := s2.DecodedLen(a)
	nb, errB := s2.DecodedLen(b)
	if errA != nil || errB != nil || na+nb > maxMergedRaw || na > maxMergeGrowth*nb {
		return nil, false
	}
	bp := packBuf.Get().(*[]byte)
	defer packBuf.Put(bp) // at most maxMergedRaw: always pooled
	if cap(*bp) < na+nb {
		*bp = make([]byte, na+nb)
	}
	raw := (*bp)[:na+nb]
	if _, err := s2.Decode(raw[:na], a); err != nil {
		return nil, false
	}
	if _, err := s2.Decode(raw[na:], b); err != nil {
		return nil, false
	}
	return compress(raw), true
}

// keptBytes is what stream mode keeps of t.
func (t *heldTrace) keptBytes() int {
	n := 0
	for i := range t.kept {
		n += t.kept[i].size()
	}
	return n
}

// unpack turns what stream mode kept of t back into spans (t.parts) and
// content records (t.records), on the worker that scores it. A part that
// does not decode (a bug, or a damaged store) is left out and reported.
func (t *heldTrace) unpack() error {
	var errs []error
	for i := range t.kept {
		k := &t.kept[i]
		if k.isLogs {
			ld, err := unpackLogs(k.packed)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
				t.records = append(t.records, lr)
			})
			continue
		}
		td := ptrace.NewTraces()
		if len(k.packed) > 0 {
			var err error
			if td, err = unpackTraces(k.packed); err != nil {
				errs = append(errs, err)
				td = ptrace.NewTraces()
			}
		}
		if len(k.stubs) > 0 {
			spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
			spans.EnsureCapacity(len(k.stubs))
			for _, st := range k.stubs {
				s := spans.AppendEmpty()
				s.SetTraceID(t.id)
				s.SetSpanID(st.id)
				s.SetParentSpanID(st.parent)
			}
		}
		t.parts = append(t.parts, tracePart{td: td, route: k.route, spans: td.SpanCount()})
	}
	t.kept, t.keptRecords = nil, 0
	if len(errs) > 0 {
		return fmt.Errorf("stream mode: %d kept parts of trace %s do not decode: %w", len(errs), t.id, errs[0])
	}
	return nil
}

func unpackTraces(b []byte) (ptrace.Traces, error) {
	return decompressed(b, tracesUnmarshaler.UnmarshalTraces)
}

func unpackLogs(b []byte) (plog.Logs, error) {
	return decompressed(b, logsUnmarshaler.UnmarshalLogs)
}

// decompressed decodes b into a pooled buffer and unmarshals it (pdata
// copies every string and byte slice out of what it unmarshals, so the
// buffer is reused).
func decompressed[D any](b []byte, unmarshal func([]byte) (D, error)) (D, error) {
	var zero D
	n, err := s2.DecodedLen(b)
	if err != nil {
		return zero, err
	}
	bp := packBuf.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	raw, err := s2.Decode((*bp)[:cap(*bp)], b)
	if err != nil {
		packBuf.Put(bp)
		return zero, err
	}
	d, err := unmarshal(raw)
	if cap(*bp) <= 1<<20 {
		packBuf.Put(bp)
	}
	return d, err
}
