package evalprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// chunk is the spans (or log records) of one trace from one request,
// moved out of it or copied (chunker), or, for the forwarded part of a
// read-only request, a copy of the items that go on at once.
//
// Moving or copying is the one step the traces and logs paths keep apart: pdata's
// ResourceSpans/ScopeSpans/Span and ResourceLogs/ScopeLogs/LogRecord share
// no interface, and a generic over the three levels of both would take six
// type parameters and read worse than the two short walks below.
type chunk struct {
	id pcommon.TraceID
	// isLogs: the chunk holds log records (logPart), not spans.
	isLogs bool
	// route is the pipeline it came in through.
	route route
	// key is the chunk's storage key once persisted (durable.go).
	key string
	logPart

	// td holds the spans; no reference per span is kept (the held trace
	// lists them when it is scored: heldTrace.spanRefs).
	td ptrace.Traces
	// shared, when not nil, has an entry for each of td's ResourceSpans (by
	// position): the resource it shares with the other chunks split from
	// the same ResourceSpans of a request, its own resource left empty; nil
	// where it has its own (sharedres.go).
	shared []*sharedResource
	root   bool
	spans  int
	// kept, in stream mode, is what the chunk keeps instead of td or ld
	// (streamkept.go).
	kept *keptPart

	// The source resource and scope of the last span copied, and their
	// copies.
	srcRS, rs ptrace.ResourceSpans
	srcSS, ss ptrace.ScopeSpans
}

func newChunk(id pcommon.TraceID) *chunk {
	return &chunk{id: id, td: ptrace.NewTraces()}
}

// logPart is the log records side of a chunk.
type logPart struct {
	ld plog.Logs
	// logsShared is shared for ld's ResourceLogs.
	logsShared []*sharedResource
	records    []plog.LogRecord // the copies, for the adapter
	count      int

	srcRL, rl plog.ResourceLogs
	srcSL, sl plog.ScopeLogs
}

func newLogChunk(id pcommon.TraceID) *chunk {
	return &chunk{id: id, isLogs: true, logPart: logPart{ld: plog.NewLogs()}}
}

// chunker hands out, per trace id, the chunk a request's items are moved
// or copied into: one per held trace, in order of first appearance, and fwd for the
// rest. Consecutive items mostly share a trace: the last answer is kept.
type chunker struct {
	dec      map[pcommon.TraceID]decision
	rt       route
	newChunk func(pcommon.TraceID) *chunk
	fwd      *chunk
	byID     map[pcommon.TraceID]*chunk
	order    []*chunk
	lastID   pcommon.TraceID
	last     *chunk
	// The request's ResourceSpans (or ResourceLogs) whose resource the held
	// chunks last shared, and the copy they share.
	resSrc resourceOf
	res    *sharedResource
	// in interns the held items' repeats (intern.go); release returns it.
	in *interner
}

func newChunker(dec map[pcommon.TraceID]decision, rt route, newC func(pcommon.TraceID) *chunk) *chunker {
	return &chunker{dec: dec, rt: rt, newChunk: newC, fwd: newC(pcommon.TraceID{}), byID: make(map[pcommon.TraceID]*chunk, len(dec)), in: getInterner()}
}

// release ends the chunker's walk of a request.
func (k *chunker) release() {
	k.in.release()
	k.in = nil
}

// of is the chunk an item of trace id goes into, and whether it is held.
func (k *chunker) of(id pcommon.TraceID) (*chunk, bool) {
	if k.last == nil || id != k.lastID {
		k.lastID, k.last = id, k.fwd
		if k.dec[id].holds() {
			c := k.byID[id]
			if c == nil {
				c = k.newChunk(id)
				c.route = k.rt
				k.byID[id] = c
				k.order = append(k.order, c)
			}
			k.last = c
		}
	}
	return k.last, k.last != k.fwd
}

// splitTraces copies the spans of td: held traces' into one chunk per
// trace, the rest into fwd. td itself is never written.
func splitTraces(td ptrace.Traces, dec map[pcommon.TraceID]decision, rt route) (ptrace.Traces, []*chunk) {
	k := newChunker(dec, rt, newChunk)
	defer k.release()
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		c, held := k.of(r.Span.TraceID())
		c.add(r, held, k)
	})
	return k.fwd.td, k.order
}

// add copies the span of r into the chunk, copying its scope once per run
// of spans that share it, its resource likewise or sharing k's copy of it.
func (c *chunk) add(r adapter.SpanRef, held bool, k *chunker) {
	dst := c.scopeOf(r.ResourceSpans, r.ScopeSpans, k).Spans().AppendEmpty()
	r.Span.CopyTo(dst)
	c.added(dst, held, k.in)
}

// scopeOf returns the chunk's copy of scope ss of resource rs, made (with
// a ResourceSpans for rs: newRS) on the first span of a run of spans that
// share them.
func (c *chunk) scopeOf(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, k *chunker) ptrace.ScopeSpans {
	if c.srcRS != rs {
		c.rs = c.newRS(rs, k)
		c.srcRS, c.srcSS = rs, ptrace.ScopeSpans{}
	}
	if c.srcSS != ss {
		c.ss, c.srcSS = copyScope(ss, c.rs.ScopeSpans().AppendEmpty()), ss
	}
	return c.ss
}

// added counts span dst, now in the chunk, and, when the chunk is held,
// notes a root span and interns the span's repeats with in (intern.go).
func (c *chunk) added(dst ptrace.Span, held bool, in *interner) {
	c.spans++
	if held {
		c.root = c.root || dst.ParentSpanID().IsEmpty()
		in.span(dst)
	}
}

// takeTraces is splitTraces for a request the processor owns (not marked
// read-only): the spans of held traces are moved out of td into their
// trace's chunk, not copied. A ResourceSpans (else a ScopeSpans) whose
// spans all belong to one held trace moves whole; otherwise each span
// moves, its scope copied once per chunk and its resource shared by the
// chunks (sharedres.go). What stays
// goes on at once: fwd takes td's remaining resources (no copy), and td is
// left empty. giveBack undoes it.
func takeTraces(td ptrace.Traces, dec map[pcommon.TraceID]decision, rt route) (ptrace.Traces, []*chunk) {
	k := newChunker(dec, rt, newChunk)
	defer k.release()
	rss := td.ResourceSpans()
	rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
		if id, ok := oneTrace(rs); ok {
			c, held := k.of(id)
			if held {
				c.moveResource(rs, k.in)
			}
			return held
		}
		took := false
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			if id, ok := oneTraceOf(ss.Spans()); ok {
				c, held := k.of(id)
				if held {
					c.moveScope(rs, ss, k)
					took = true
				}
				return held
			}
			tookHere := false
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				c, held := k.of(s.TraceID())
				if held {
					dst := c.scopeOf(rs, ss, k).Spans().AppendEmpty()
					s.MoveTo(dst)
					c.added(dst, true, k.in)
					tookHere = true
				}
				return held
			})
			took = took || tookHere
			return tookHere && ss.Spans().Len() == 0
		})
		return took && rs.ScopeSpans().Len() == 0
	})
	fwd := ptrace.NewTraces()
	rss.MoveAndAppendTo(fwd.ResourceSpans())
	return fwd, k.order
}

// giveBack puts back into b what take moved out of it into fwd and chunks,
// after a failed call: b holds every item again (grouped by chunk, after
// the forwarded part), for a sender that retries the same request. A next
// consumer may have marked fwd read-only (a fan-out that shares it): then
// its items are copied back. b itself is never read-only here (take is
// only called on data the processor owns).
func giveBack[B pdata](b, fwd B, chunks []*chunk) {
	if readOnly(fwd) {
		copyAll(b, fwd)
	} else {
		moveAll(b, fwd)
	}
	for _, c := range chunks {
		if c.isLogs {
			c.materializeLogs()
			moveAll(any(b).(plog.Logs), c.ld)
			c.records, c.count = nil, 0
		} else {
			c.materialize()
			moveAll(any(b).(ptrace.Traces), c.td)
			c.spans, c.root = 0, false
		}
	}
}

// oneTrace returns the trace id of every span of rs when they all share
// one (false when rs has no span or several traces).
func oneTrace(rs ptrace.ResourceSpans) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	found := false
	sss := rs.ScopeSpans()
	for i := 0; i < sss.Len(); i++ {
		spans := sss.At(i).Spans()
		if spans.Len() == 0 {
			continue
		}
		sid, ok := oneTraceOf(spans)
		if !ok || (found && sid != id) {
			return pcommon.TraceID{}, false
		}
		id, found = sid, true
	}
	return id, found
}

// oneTraceOf is oneTrace for the spans of one scope.
func oneTraceOf(spans ptrace.SpanSlice) (pcommon.TraceID, bool) {
	if spans.Len() == 0 {
		return pcommon.TraceID{}, false
	}
	id := spans.At(0).TraceID()
	for i := 1; i < spans.Len(); i++ {
		if spans.At(i).TraceID() != id {
			return pcommon.TraceID{}, false
		}
	}
	return id, true
}

// moveResource moves rs, whose spans all belong to the chunk's trace,
// into the chunk whole.
func (c *chunk) moveResource(rs ptrace.ResourceSpans, in *interner) {
	c.rs = c.td.ResourceSpans().AppendEmpty()
	c.ownResource()
	rs.MoveTo(c.rs)
	in.resource(c.rs.Resource())
	c.srcRS, c.srcSS = ptrace.ResourceSpans{}, ptrace.ScopeSpans{}
	sss := c.rs.ScopeSpans()
	for i := 0; i < sss.Len(); i++ {
		c.movedScope(sss.At(i), in)
	}
}

// moveScope moves ss of resource rs, whose spans all belong to the chunk's
// trace, into the chunk whole (under a ResourceSpans for rs: newRS).
func (c *chunk) moveScope(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, k *chunker) {
	if c.srcRS != rs {
		c.rs = c.newRS(rs, k)
		c.srcRS = rs
	}
	dst := c.rs.ScopeSpans().AppendEmpty()
	ss.MoveTo(dst)
	c.srcSS = ptrace.ScopeSpans{}
	c.movedScope(dst, k.in)
}

// movedScope counts the spans of ss, moved whole into the
// chunk.
func (c *chunk) movedScope(ss ptrace.ScopeSpans, in *interner) {
	c.ss = ss
	spans := ss.Spans()
	for j := 0; j < spans.Len(); j++ {
		c.added(spans.At(j), true, in)
	}
}

// splitLogs is splitTraces for log records.
func splitLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) (plog.Logs, []*chunk) {
	k := newChunker(dec, rt, newLogChunk)
	defer k.release()
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs) {
		c, held := k.of(lr.TraceID())
		c.addRecord(lr, rl, sl, held, k)
	})
	return k.fwd.ld, k.order
}

// addRecord is add for a log record.
func (c *chunk) addRecord(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs, keepRef bool, k *chunker) {
	dst := c.scopeLogsOf(rl, sl, k).LogRecords().AppendEmpty()
	lr.CopyTo(dst)
	c.addedRecord(dst, keepRef, k.in)
}

// scopeLogsOf is scopeOf for log records.
func (c *chunk) scopeLogsOf(rl plog.ResourceLogs, sl plog.ScopeLogs, k *chunker) plog.ScopeLogs {
	if c.srcRL != rl {
		c.rl, c.srcRL, c.srcSL = c.newRL(rl, k), rl, plog.ScopeLogs{}
	}
	if c.srcSL != sl {
		c.sl, c.srcSL = copyScope(sl, c.rl.ScopeLogs().AppendEmpty()), sl
	}
	return c.sl
}

// addedRecord counts record dst, now in the chunk, and, when it is held,
// interns its repeats with in and keeps it for the adapter if it is a
// GenAI content event.
func (c *chunk) addedRecord(dst plog.LogRecord, keepRef bool, in *interner) {
	c.count++
	if !keepRef {
		return
	}
	in.logRecord(dst)
	if adapter.IsGenAIEvent(dst) {
		c.records = append(c.records, dst)
	}
}

// takeLogs is takeTraces for log records, record by record (a request of
// log records rarely belongs to one trace): each held record moves into
// its trace's chunk, its scope copied once per chunk and its resource
// shared by the chunks.
func takeLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) (plog.Logs, []*chunk) {
	k := newChunker(dec, rt, newLogChunk)
	defer k.release()
	rls := ld.ResourceLogs()
	rls.RemoveIf(func(rl plog.ResourceLogs) bool {
		took := false
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
			n := sl.LogRecords().Len()
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				c, held := k.of(lr.TraceID())
				if held {
					dst := c.scopeLogsOf(rl, sl, k).LogRecords().AppendEmpty()
					lr.MoveTo(dst)
					c.addedRecord(dst, true, k.in)
				}
				return held
			})
			left := sl.LogRecords().Len()
			took = took || left < n
			return left < n && left == 0
		})
		return took && rl.ScopeLogs().Len() == 0
	})
	fwd := plog.NewLogs()
	rls.MoveAndAppendTo(fwd.ResourceLogs())
	return fwd, k.order
}

// copyResource and copyScope copy the resource (scope) and schema URL of
// src, a ResourceSpans or ResourceLogs (ScopeSpans or ScopeLogs), onto dst
// and return dst.
func copyResource[R resourceOf](src, dst R) R {
	src.Resource().CopyTo(dst.Resource())
	dst.SetSchemaUrl(src.SchemaUrl())
	return dst
}

func copyScope[S scopeOf](src, dst S) S {
	src.Scope().CopyTo(dst.Scope())
	dst.SetSchemaUrl(src.SchemaUrl())
	return dst
}

type resourceOf interface {
	Resource() pcommon.Resource
	SchemaUrl() string
	SetSchemaUrl(string)
}

type scopeOf interface {
	Scope() pcommon.InstrumentationScope
	SchemaUrl() string
	SetSchemaUrl(string)
}
