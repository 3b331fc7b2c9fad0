package evalprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// chunk is a copy of the spans (or log records) of one trace from one
// request, or, for the forwarded part of a request, of the items that go
// on at once.
//
// Copying is the one step the traces and logs paths keep apart: pdata's
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

	td    ptrace.Traces
	refs  []adapter.SpanRef
	root  bool
	spans int

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
	ld      plog.Logs
	records []plog.LogRecord // the copies, for the adapter
	count   int

	srcRL, rl plog.ResourceLogs
	srcSL, sl plog.ScopeLogs
}

func newLogChunk(id pcommon.TraceID) *chunk {
	return &chunk{id: id, isLogs: true, logPart: logPart{ld: plog.NewLogs()}}
}

// chunker hands out, per trace id, the chunk a request's items are copied
// into: one per held trace, in order of first appearance, and fwd for the
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
}

func newChunker(dec map[pcommon.TraceID]decision, rt route, newC func(pcommon.TraceID) *chunk) *chunker {
	return &chunker{dec: dec, rt: rt, newChunk: newC, fwd: newC(pcommon.TraceID{}), byID: make(map[pcommon.TraceID]*chunk, len(dec))}
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
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		c, held := k.of(r.Span.TraceID())
		c.add(r, held)
	})
	return k.fwd.td, k.order
}

// add copies the span of r into the chunk, copying its resource and scope
// once per run of spans that share them.
func (c *chunk) add(r adapter.SpanRef, keepRef bool) {
	if c.srcRS != r.ResourceSpans {
		c.rs = copyResource(r.ResourceSpans, c.td.ResourceSpans().AppendEmpty())
		c.srcRS, c.srcSS = r.ResourceSpans, ptrace.ScopeSpans{}
	}
	if c.srcSS != r.ScopeSpans {
		c.ss, c.srcSS = copyScope(r.ScopeSpans, c.rs.ScopeSpans().AppendEmpty()), r.ScopeSpans
	}
	dst := c.ss.Spans().AppendEmpty()
	r.Span.CopyTo(dst)
	c.spans++
	if keepRef {
		c.refs = append(c.refs, adapter.SpanRef{Span: dst, ResourceSpans: c.rs, ScopeSpans: c.ss})
		if dst.ParentSpanID().IsEmpty() {
			c.root = true
		}
	}
}

// splitLogs is splitTraces for log records.
func splitLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) (plog.Logs, []*chunk) {
	k := newChunker(dec, rt, newLogChunk)
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs) {
		c, held := k.of(lr.TraceID())
		c.addRecord(lr, rl, sl, held)
	})
	return k.fwd.ld, k.order
}

// addRecord is add for a log record.
func (c *chunk) addRecord(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs, keepRef bool) {
	if c.srcRL != rl {
		c.rl, c.srcRL, c.srcSL = copyResource(rl, c.ld.ResourceLogs().AppendEmpty()), rl, plog.ScopeLogs{}
	}
	if c.srcSL != sl {
		c.sl, c.srcSL = copyScope(sl, c.rl.ScopeLogs().AppendEmpty()), sl
	}
	dst := c.sl.LogRecords().AppendEmpty()
	lr.CopyTo(dst)
	c.count++
	if keepRef && adapter.IsGenAIEvent(dst) {
		c.records = append(c.records, dst)
	}
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
