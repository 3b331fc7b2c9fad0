package evalprocessor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// heldSet is the held traces, the directory of trace ids held or recently
// released, and the bounds on both (wait, root_grace, max_hold,
// max_traces, max_trace_spans). The loop goroutine owns it; the directory
// alone is shared: ConsumeTraces and ConsumeLogs read it (and mark new
// GenAI traces held) under dirMu to route what arrives (ingest.go).
type heldSet struct {
	wait, rootGrace, maxHold time.Duration
	maxTraces, maxTraceSpans int

	tel    *telemetry
	logger *zap.Logger
	// boundLogged: each bound (max_hold, max_trace_spans) is logged once.
	boundLogged [2]atomic.Bool

	// dirMu guards dir: the state of every trace id held or recently
	// released. The consume calls read it to route and mark new GenAI
	// traces held; the loop marks released traces done and forgets them by
	// time (mem).
	dirMu sync.RWMutex
	dir   map[pcommon.TraceID]traceState
	mem   *decisions

	// loop-owned
	traces map[pcommon.TraceID]*heldTrace
	lists  [3]traceList // 0: every held trace by last span; 1: those whose root arrived; 2: every held trace by first span
}

func newHeldSet(cfg *Config, tel *telemetry, logger *zap.Logger) *heldSet {
	h := &heldSet{
		wait: cfg.Wait, rootGrace: cfg.RootGrace, maxHold: cfg.MaxHold,
		maxTraces: cfg.MaxTraces, maxTraceSpans: cfg.MaxTraceSpans,
		tel: tel, logger: logger,
		dir:    make(map[pcommon.TraceID]traceState),
		mem:    newDecisions(cfg.Wait, cfg.Timeout, maxRememberedIDs),
		traces: make(map[pcommon.TraceID]*heldTrace),
	}
	h.lists[0].idx, h.lists[1].idx, h.lists[2].idx = 0, 1, 2
	return h
}

// state is what the directory knows of id (any goroutine).
func (h *heldSet) state(id pcommon.TraceID) traceState {
	h.dirMu.RLock()
	defer h.dirMu.RUnlock()
	return h.dir[id]
}

// adopt holds t as it is (a trace restored from storage, before the loop
// runs).
func (h *heldSet) adopt(t *heldTrace) {
	h.traces[t.id] = t
	h.dirMu.Lock()
	h.dir[t.id] = stateHeld
	h.dirMu.Unlock()
	h.lists[0].pushBack(t)
	h.lists[2].pushBack(t)
	if t.root && h.rootGrace > 0 {
		h.lists[1].pushBack(t)
	}
}

// add holds chunk c with its trace at now. It returns false when the trace
// was released between the consume call's routing and now: c is late, and
// the caller forwards it. full is set when the trace reached
// max_trace_spans (checked unless unbounded): it is no longer held, and
// the caller releases it. restored says c was read back from storage: its
// spans and records are remembered so that redelivered copies are dropped.
func (h *heldSet) add(c *chunk, now time.Time, restored, unbounded bool) (ok bool, full *heldTrace) {
	t := h.traces[c.id]
	if t == nil {
		st := h.state(c.id)
		if st.done() {
			return false, nil
		}
		if st == stateUnknown {
			// Another call took its mark back after this chunk was
			// routed (takeBack): the trace is held after all.
			h.dirMu.Lock()
			if h.dir[c.id] == stateUnknown {
				h.dir[c.id] = stateHeld
			}
			h.dirMu.Unlock()
		}
		t = &heldTrace{id: c.id, first: now}
		if restored {
			t.startRestore()
		}
		h.traces[c.id] = t
		h.lists[0].pushBack(t)
		h.lists[2].pushBack(t)
		h.tel.tracesHeld.Add(context.Background(), 1)
	} else {
		h.lists[0].moveToBack(t)
	}
	t.lastSeen = now
	if c.kept != nil {
		t.keep(c) // stream mode
	} else if c.isLogs {
		if n := t.dropRestoredLogs(c, restored); n > 0 {
			h.tel.recordsRedelivered.Add(context.Background(), int64(n))
		}
		t.ingestLogs(c)
	} else {
		if t.restored != nil {
			if n := t.dropRestored(c, restored); n > 0 {
				h.tel.spansRedelivered.Add(context.Background(), int64(n))
			}
		}
		t.addChunk(c)
		if t.root && h.rootGrace > 0 {
			h.lists[1].moveToBack(t)
		}
	}
	if !unbounded && t.size() >= h.maxTraceSpans {
		return true, h.unhold(t)
	}
	return true, nil
}

// overflow stops holding the oldest traces beyond max_traces and returns
// them.
func (h *heldSet) overflow() []*heldTrace {
	var over []*heldTrace
	for len(h.traces) > h.maxTraces {
		over = append(over, h.unhold(h.lists[0].head))
	}
	return over
}

// forgetUnheld forgets the held mark of trace ids a failed call took back,
// unless chunks of the trace are held (another call's).
func (h *heldSet) forgetUnheld(ids []pcommon.TraceID) {
	h.dirMu.Lock()
	defer h.dirMu.Unlock()
	for _, id := range ids {
		if h.traces[id] == nil && h.dir[id] == stateHeld {
			delete(h.dir, id)
		}
	}
}

// due stops holding, and returns, every trace whose wait (or root grace)
// has passed at now, or that has been held for max_hold; the last are
// counted and logged as released early.
func (h *heldSet) due(now time.Time) []*heldTrace {
	var due []*heldTrace
	for t := h.lists[0].head; t != nil && !now.Before(t.lastSeen.Add(h.wait)); t = h.lists[0].head {
		due = append(due, h.unhold(t))
	}
	if h.rootGrace > 0 {
		for t := h.lists[1].head; t != nil && !now.Before(t.lastSeen.Add(h.rootGrace)); t = h.lists[1].head {
			due = append(due, h.unhold(t))
		}
	}
	n := len(due)
	for t := h.lists[2].head; t != nil && !now.Before(t.first.Add(h.maxHold)); t = h.lists[2].head {
		due = append(due, h.unhold(t))
	}
	if len(due) > n {
		h.bounded(boundMaxHold, due[n:])
	}
	return due
}

// all stops holding every trace and returns them (the shutdown flush).
func (h *heldSet) all() []*heldTrace {
	var all []*heldTrace
	for t := h.lists[0].head; t != nil; t = h.lists[0].head {
		all = append(all, h.unhold(t))
	}
	return all
}

// unhold stops holding t (it still counts in traces_held until forwarded).
func (h *heldSet) unhold(t *heldTrace) *heldTrace {
	h.lists[0].remove(t)
	h.lists[1].remove(t)
	h.lists[2].remove(t)
	delete(h.traces, t.id)
	return t
}

// released remembers the ids of ts as released at now: their later spans
// are late.
func (h *heldSet) released(ts []*heldTrace, now time.Time) {
	forgotten := 0
	h.dirMu.Lock()
	for _, t := range ts {
		forgotten += h.mem.markDone(h.dir, t.id, now)
	}
	h.dirMu.Unlock()
	if forgotten > 0 {
		h.tel.decisionsForgotten.Add(context.Background(), int64(forgotten))
	}
}

// refresh remembers the released ids among ids as released at now: they
// got late items, and a trace is forgotten only once it has had none for
// the retention (memory.go), however long it goes on after its release.
func (h *heldSet) refresh(ids []pcommon.TraceID, now time.Time) {
	forgotten := 0
	h.dirMu.Lock()
	for _, id := range ids {
		if st := h.dir[id]; st.done() && !h.mem.current(st, now) {
			forgotten += h.mem.markDone(h.dir, id, now)
		}
	}
	h.dirMu.Unlock()
	if forgotten > 0 {
		h.tel.decisionsForgotten.Add(context.Background(), int64(forgotten))
	}
}

// expire forgets released ids whose retention has passed at now.
func (h *heldSet) expire(now time.Time) {
	if h.mem.needsExpiry(now) {
		h.dirMu.Lock()
		h.mem.expire(h.dir, now)
		h.dirMu.Unlock()
	}
}

// Bounds on one trace (docs/contract.md §17): max_hold and max_trace_spans
// release a trace early; each is counted in
// otelcol_processor_eval_traces_released_early{reason} and logged once.
const (
	boundMaxHold = iota
	boundMaxTraceSpans
)

var boundNames = [...]string{boundMaxHold: reasonMaxHold, boundMaxTraceSpans: reasonMaxTraceSpans}

const (
	reasonMaxHold       = "max_hold"
	reasonMaxTraceSpans = "max_trace_spans"
)

// bounded counts the traces bound b released, and logs the first time.
func (h *heldSet) bounded(b int, ts []*heldTrace) {
	h.tel.releasedEarly.Add(context.Background(), int64(len(ts)), h.tel.reasonOpts[boundNames[b]])
	if !h.boundLogged[b].CompareAndSwap(false, true) {
		return
	}
	t := ts[0]
	switch b {
	case boundMaxHold:
		h.logger.Warn("a trace kept getting spans for max_hold; it is scored and released now, and its later spans go on as late spans (logged once; counted in otelcol_processor_eval_traces_released_early{reason=\"max_hold\"})",
			zap.Stringer("trace_id", t.id), zap.Duration("max_hold", h.maxHold), zap.Int("spans", t.spans),
			zap.Duration("held", t.lastSeen.Sub(t.first).Round(time.Millisecond)))
	case boundMaxTraceSpans:
		h.logger.Warn("a trace reached max_trace_spans; it is scored and released now, and its later spans go on as late spans (logged once; counted in otelcol_processor_eval_traces_released_early{reason=\"max_trace_spans\"})",
			zap.Stringer("trace_id", t.id), zap.Int("max_trace_spans", h.maxTraceSpans), zap.Int("spans", t.spans),
			zap.Int("genai_log_records", len(t.records)))
	}
}

// heldTrace is one GenAI trace being held. Only the loop touches it until it
// is handed to a worker.
type heldTrace struct {
	id pcommon.TraceID
	// parts are the span chunks held, each with its route and storage key.
	// Its spans are read from parts when it is scored (spanRefs): holding
	// no reference per span saves ~100 bytes a span.
	parts    []tracePart
	spans    int
	root     bool
	first    time.Time // its first span's arrival (max_hold)
	lastSeen time.Time

	// The logs side: the trace's log records held with it (logParts), the
	// GenAI content events among them for the adapter (records), and the
	// results as log records once scored (results, resultN).
	logParts []logPartHeld
	records  []plog.LogRecord
	logCount int
	results  plog.Logs
	resultN  int

	// Durable holding (durable.go): for a trace restored from storage, the
	// span ids it holds (a redelivered copy is dropped).
	restored     map[pcommon.SpanID]struct{}
	restoredLogs map[recordKey]struct{}

	// outcome is what its results say, for sampling (sampling.go).
	outcome sampleOutcome

	// Stream mode (stream.go): what is kept instead of parts and logParts
	// until it is scored, the GenAI records among it, and the result spans.
	kept        []keptPart
	keptRecords int
	resultSpans []routedTraces
	// keptKeys are the storage keys of the kept parts (durable_kept.go).
	keptKeys []string

	prev, next [3]*heldTrace
	in         [3]bool
}

// size is what max_trace_spans bounds: spans plus GenAI log records held.
func (t *heldTrace) size() int { return t.spans + len(t.records) + t.keptRecords }

// ingestLogs adds a log chunk to its held trace.
func (t *heldTrace) ingestLogs(c *chunk) {
	t.logParts = append(t.logParts, logPartHeld{ld: c.ld, shared: c.logsShared, route: c.route, count: c.count, key: c.key})
	t.records = append(t.records, c.records...)
	t.logCount += c.count
}

// origin returns, for the engine (engine.ScoreOptions.Origin), the route of
// the chunk a span of t came in: the trace's only route nearly always, else
// looked up by the span's resource. It is built before scoring starts, so
// it reads nothing of t afterwards.
func (t *heldTrace) origin() func(adapter.SpanRef) any {
	var first route
	if len(t.parts) > 0 {
		first = t.parts[0].route
	}
	var byRS map[ptrace.ResourceSpans]route
	for _, pt := range t.parts {
		if pt.route == first || pt.spans == 0 {
			continue
		}
		byRS = map[ptrace.ResourceSpans]route{}
		break
	}
	if byRS == nil {
		return func(adapter.SpanRef) any { return first }
	}
	for _, pt := range t.parts {
		if pt.spans == 0 {
			continue
		}
		rss := pt.td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			byRS[resourceSpansAt(rss, pt.shared, i)] = pt.route // what spanRefs gives
		}
	}
	return func(ref adapter.SpanRef) any {
		if r, ok := byRS[ref.ResourceSpans]; ok {
			return r
		}
		return first
	}
}

// spanRefs lists the spans of t's chunks, in the order they came. A span
// under a shared resource has it as its ResourceSpans (what the adapter and
// OTTL read the resource from).
func (t *heldTrace) spanRefs(buf []adapter.SpanRef) []adapter.SpanRef {
	refs := buf[:0]
	if cap(refs) < t.spans {
		refs = make([]adapter.SpanRef, 0, t.spans)
	}
	for _, pt := range t.parts {
		if pt.spans == 0 {
			continue
		}
		if pt.shared == nil {
			adapter.ForEachSpan(pt.td, func(r adapter.SpanRef) { refs = append(refs, r) })
			continue
		}
		rss := pt.td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			res := resourceSpansAt(rss, pt.shared, i)
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j)
				for k, spans := 0, ss.Spans(); k < spans.Len(); k++ {
					refs = append(refs, adapter.SpanRef{Span: spans.At(k), ResourceSpans: res, ScopeSpans: ss})
				}
			}
		}
	}
	return refs
}

// traceList is an intrusive doubly linked list of held traces. Lists 0
// and 1 are ordered by their last span's arrival (the front is the next to
// be released): list 0 holds every trace, list 1 those whose root span has
// arrived (root_grace). List 2 holds every trace by its first span's
// arrival, for max_hold.
type traceList struct {
	idx        int
	head, tail *heldTrace
}

func (l *traceList) pushBack(t *heldTrace) {
	i := l.idx
	t.prev[i], t.next[i], t.in[i] = l.tail, nil, true
	if l.tail != nil {
		l.tail.next[i] = t
	} else {
		l.head = t
	}
	l.tail = t
}

func (l *traceList) remove(t *heldTrace) {
	i := l.idx
	if !t.in[i] {
		return
	}
	if t.prev[i] != nil {
		t.prev[i].next[i] = t.next[i]
	} else {
		l.head = t.next[i]
	}
	if t.next[i] != nil {
		t.next[i].prev[i] = t.prev[i]
	} else {
		l.tail = t.prev[i]
	}
	t.prev[i], t.next[i], t.in[i] = nil, nil, false
}

func (l *traceList) moveToBack(t *heldTrace) {
	if l.tail == t {
		return
	}
	l.remove(t)
	l.pushBack(t)
}

// copyForTakeOver returns a copy of the trace's spans and log records with
// the partial results written on the copies of the evaluated spans (and,
// with resultLogs, as result log records), and on the copies of the
// duplicates of those spans that came in through another pipeline (dups).
// t itself is only read.
func (t *heldTrace) copyForTakeOver(partial []engine.Partial, dups spanDups, resultLogs bool, caseInfo func(annotator.CaseInfo) annotator.CaseInfo) *heldTrace {
	cp := &heldTrace{id: t.id, spans: t.spans, logCount: t.logCount, keptKeys: t.keptKeys}
	var spanMap map[ptrace.Span]adapter.SpanRef
	if len(partial) > 0 {
		spanMap = make(map[ptrace.Span]adapter.SpanRef, t.spans)
	}
	for _, pt := range t.parts {
		c := tracePart{route: pt.route, spans: pt.spans, key: pt.key, shared: pt.shared}
		if pt.spans > 0 {
			c.td = ptrace.NewTraces()
			pt.td.CopyTo(c.td)
			if spanMap != nil {
				var orig []ptrace.Span
				adapter.ForEachSpan(pt.td, func(r adapter.SpanRef) { orig = append(orig, r.Span) })
				i := 0
				adapter.ForEachSpan(c.td, func(r adapter.SpanRef) {
					spanMap[orig[i]] = r
					i++
				})
			}
		}
		cp.parts = append(cp.parts, c)
	}
	for _, lp := range t.logParts {
		c := logPartHeld{ld: plog.NewLogs(), route: lp.route, count: lp.count, key: lp.key, shared: lp.shared}
		lp.ld.CopyTo(c.ld)
		cp.logParts = append(cp.logParts, c)
	}
	if len(partial) == 0 {
		return cp
	}
	now := pcommon.NewTimestampFromTime(time.Now())
	rep := engine.Report{}
	var refs []adapter.SpanRef
	for _, pa := range partial {
		ref, ok := spanMap[pa.Ref.Span]
		if !ok {
			continue
		}
		annotator.Annotate(ref.Span, pa.Results, now)
		rep.Evaluations = append(rep.Evaluations, engine.Evaluation{Case: pa.Case, Results: pa.Results})
		refs = append(refs, ref)
	}
	if resultLogs {
		cp.results, cp.resultN = resultRecords(rep, refs, now, caseInfo)
	}
	copyResults(dups, func(s ptrace.Span) (ptrace.Span, bool) {
		r, ok := spanMap[s]
		return r.Span, ok
	})
	return cp
}
