package evalprocessor

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
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
	// pack, until packed is set, compresses the copies taken from the
	// request: the consume call runs it after the request has gone on, so
	// compressing adds nothing to the request's latency.
	pack func() []byte
}

// packAll sets packed on every chunk's part from its copies.
func packAll(chunks []*chunk) {
	for _, c := range chunks {
		if k := c.kept; k != nil && k.pack != nil {
			k.packed, k.pack = k.pack(), nil
		}
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

// spanKeeper gathers what one consume call keeps of one trace.
type spanKeeper struct {
	c     *chunk
	td    ptrace.Traces
	stubs []spanStub
	// the request's resource and scope of the last span kept, and their
	// copies in td
	srcRS, rs ptrace.ResourceSpans
	srcSS, ss ptrace.ScopeSpans
}

// scopeOf returns the keeper's copy of ss under rs.
func (k *spanKeeper) scopeOf(r adapter.SpanRef) ptrace.ScopeSpans {
	if k.srcRS != r.ResourceSpans {
		k.rs = copyResource(r.ResourceSpans, k.td.ResourceSpans().AppendEmpty())
		k.srcRS, k.srcSS = r.ResourceSpans, ptrace.ScopeSpans{}
	}
	if k.srcSS != r.ScopeSpans {
		k.ss, k.srcSS = copyScope(r.ScopeSpans, k.rs.ScopeSpans().AppendEmpty()), r.ScopeSpans
	}
	return k.ss
}

// keepSpans extracts from td what stream mode keeps of the spans of the
// traces dec holds: one chunk per trace, in order of first appearance,
// to be packed (packAll) once td has gone on. td is only read.
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
					last = &spanKeeper{c: &chunk{id: id, route: rt}, td: ptrace.NewTraces()}
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
			r.Span.CopyTo(k.scopeOf(r).Spans().AppendEmpty())
			k.c.root = k.c.root || r.Span.ParentSpanID().IsEmpty()
		case r.Span.ParentSpanID().IsEmpty():
			keepRoot(r, k.scopeOf(r).Spans().AppendEmpty())
			k.c.root = true
		default:
			k.stubs = append(k.stubs, spanStub{id: r.Span.SpanID(), parent: r.Span.ParentSpanID()})
		}
	})
	chunks := make([]*chunk, len(order))
	for i, k := range order {
		part := &keptPart{route: rt, stubs: k.stubs, n: k.c.spans}
		if td := k.td; td.ResourceSpans().Len() > 0 {
			part.pack = func() []byte { return packTraces(td) }
		}
		k.c.kept = part
		chunks[i] = k.c
	}
	return chunks
}

// keepRoot copies of root span r, not a GenAI span, what a case may read:
// its ids, name, kind, times, status and §3 attributes.
func keepRoot(r adapter.SpanRef, dst ptrace.Span) {
	s := r.Span
	dst.SetTraceID(s.TraceID())
	dst.SetSpanID(s.SpanID())
	dst.SetName(s.Name())
	dst.SetKind(s.Kind())
	dst.SetStartTimestamp(s.StartTimestamp())
	dst.SetEndTimestamp(s.EndTimestamp())
	s.Status().CopyTo(dst.Status())
	attrs := s.Attributes()
	for _, key := range rootAttrs {
		if v, ok := attrs.Get(key); ok {
			v.CopyTo(dst.Attributes().PutEmpty(key))
		}
	}
}

// keepLogs extracts from ld the GenAI content events of the traces dec
// holds: one chunk per trace. Other records of those traces are not kept
// (no case reads them).
func keepLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) []*chunk {
	type logKeeper struct {
		c         *chunk
		ld        plog.Logs
		srcRL, rl plog.ResourceLogs
		srcSL, sl plog.ScopeLogs
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
			k = &logKeeper{c: &chunk{id: id, route: rt, isLogs: true}, ld: plog.NewLogs()}
			byID[id] = k
			order = append(order, k)
		}
		if k.srcRL != rl {
			k.rl = copyResource(rl, k.ld.ResourceLogs().AppendEmpty())
			k.srcRL, k.srcSL = rl, plog.ScopeLogs{}
		}
		if k.srcSL != sl {
			k.sl, k.srcSL = copyScope(sl, k.rl.ScopeLogs().AppendEmpty()), sl
		}
		lr.CopyTo(k.sl.LogRecords().AppendEmpty())
		k.c.count++
	})
	chunks := make([]*chunk, len(order))
	for i, k := range order {
		ld := k.ld
		k.c.kept = &keptPart{route: rt, pack: func() []byte { return packLogs(ld) }, isLogs: true, n: k.c.count}
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

func packTraces(td ptrace.Traces) []byte {
	raw, err := tracesMarshaler.MarshalTraces(td)
	if err != nil {
		// pdata marshals what it holds; a failure is a bug, and the trace
		// is then scored with the ids alone.
		return nil
	}
	return compress(raw)
}

func packLogs(ld plog.Logs) []byte {
	raw, err := logsMarshaler.MarshalLogs(ld)
	if err != nil {
		return nil
	}
	return compress(raw)
}

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

// keep adds a stream-mode chunk to its trace.
func (t *heldTrace) keep(c *chunk) {
	t.kept = append(t.kept, *c.kept)
	if c.isLogs {
		t.keptRecords += c.count
		return
	}
	t.spans += c.spans
	t.root = t.root || c.root
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
