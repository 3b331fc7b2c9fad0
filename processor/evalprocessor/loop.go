package evalprocessor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// heldTrace is one GenAI trace being held. Only the loop touches it until it
// is handed to a worker.
type heldTrace struct {
	id pcommon.TraceID
	// parts are the span chunks held, each with its route and storage key.
	parts    []tracePart
	refs     []adapter.SpanRef
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

	prev, next [3]*heldTrace
	in         [3]bool
}

// size is what max_trace_spans bounds: spans plus GenAI log records held.
func (t *heldTrace) size() int { return t.spans + len(t.records) }

// origin returns, for the engine (engine.WithSpanOrigin), the route of
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
			byRS[rss.At(i)] = pt.route
		}
	}
	return func(ref adapter.SpanRef) any {
		if r, ok := byRS[ref.ResourceSpans]; ok {
			return r
		}
		return first
	}
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

// job is one released trace for a worker.
type job struct {
	t *heldTrace
	// g collects the traces released together, to forward them in one
	// request.
	g *group
	// score is false for traces forwarded unscored (reason says why).
	score  bool
	reason string
}

// group is the traces released together (one tick, one overflow, the
// shutdown flush). Each trace joins it once forwarded; once all have (or
// have left it to wait for a judge), they go on as one request per route,
// cut at maxRequestSpans.
type group struct {
	mu      sync.Mutex
	pending int
	out     []routedTraces
}

// add gives the group one trace's spans, by route (none: the trace leaves
// the group and goes on by itself later).
func (g *group) add(f *forwarder, rts []routedTraces) {
	var flush []routedTraces
	g.mu.Lock()
	for _, rt := range rts {
		if rt.spans == 0 {
			flush = append(flush, rt) // storage keys only
			continue
		}
		i := 0
		for i < len(g.out) && g.out[i].route != rt.route {
			i++
		}
		if i == len(g.out) {
			g.out = append(g.out, routedTraces{route: rt.route})
		}
		o := &g.out[i]
		if o.spans > 0 && o.spans+rt.spans > maxRequestSpans {
			flush = append(flush, *o)
			*o = routedTraces{route: rt.route}
		}
		if o.spans == 0 {
			o.td = rt.td
		} else {
			rt.td.ResourceSpans().MoveAndAppendTo(o.td.ResourceSpans())
		}
		o.spans += rt.spans
		o.keys = append(o.keys, rt.keys...)
	}
	g.pending--
	if g.pending == 0 {
		for _, o := range g.out {
			if o.spans > 0 {
				flush = append(flush, o)
			}
		}
		g.out = nil
	}
	g.mu.Unlock()
	for _, o := range flush {
		f.pushTraces(o)
	}
}

// loop owns the held traces: it takes chunks from ConsumeTraces, releases
// traces on ticks, and flushes everything on Shutdown.
func (p *evalProcessor) loop(tick ticker) {
	defer p.wg.Done()
	defer close(p.jobs)
	defer tick.Stop()
	for {
		select {
		case m := <-p.in:
			p.ingest(m)
		case now := <-tick.C():
			p.release(now)
		case <-p.stop:
			// No ConsumeTraces sends any more (Shutdown saw to it); take
			// what may still be pending, then hand every held trace on.
			for {
				select {
				case m := <-p.in:
					p.ingest(m)
					continue
				default:
				}
				break
			}
			var all []*heldTrace
			for t := p.lists[0].head; t != nil; t = p.lists[0].head {
				all = append(all, p.unhold(t))
			}
			p.dispatch(all, p.clk.now(), true, "")
			return
		}
	}
}

func (p *evalProcessor) ingest(m ingestMsg) {
	if len(m.undo) > 0 {
		p.forgetUnheld(m.undo)
	}
	now := p.clk.now()
	var full []*heldTrace
	for _, c := range m.chunks {
		t := p.traces[c.id]
		if t == nil {
			p.dirMu.RLock()
			st := p.dir[c.id]
			p.dirMu.RUnlock()
			if st.done() {
				// Released between ConsumeTraces' routing and now: late.
				if c.isLogs {
					p.tel.logRecordsLate.Add(context.Background(), int64(c.count))
					p.fwd.pushLogs(c.route, c.ld, c.count, keysOf(c))
					continue
				}
				p.tel.spansLate.Add(context.Background(), int64(c.spans))
				p.fwd.pushTraces(routedTraces{route: c.route, td: c.td, spans: c.spans, keys: keysOf(c)})
				continue
			}
			if st == stateUnknown {
				// Another call took its mark back after this chunk was
				// routed (takeBack): the trace is held after all.
				p.dirMu.Lock()
				if p.dir[c.id] == stateUnknown {
					p.dir[c.id] = stateHeld
				}
				p.dirMu.Unlock()
			}
			t = &heldTrace{id: c.id, first: now}
			if m.restored {
				t.startRestore()
			}
			p.traces[c.id] = t
			p.lists[0].pushBack(t)
			p.lists[2].pushBack(t)
			p.tel.tracesHeld.Add(context.Background(), 1)
		} else {
			p.lists[0].moveToBack(t)
		}
		t.lastSeen = now
		if c.isLogs {
			if n := t.dropRestoredLogs(c, m.restored); n > 0 {
				p.tel.recordsRedelivered.Add(context.Background(), int64(n))
			}
			t.ingestLogs(c)
		} else {
			if t.restored != nil {
				if n := t.dropRestored(c, m.restored); n > 0 {
					p.tel.spansRedelivered.Add(context.Background(), int64(n))
				}
			}
			t.addChunk(c)
			if t.root && p.cfg.RootGrace > 0 {
				p.lists[1].moveToBack(t)
			}
		}
		if t.size() >= p.cfg.MaxTraceSpans && m.unscored == "" {
			// max_trace_spans: scored and released at once.
			full = append(full, p.unhold(t))
		}
	}
	if len(full) > 0 {
		p.bounded(boundMaxTraceSpans, full)
		p.dispatch(full, now, true, "")
	}
	if m.unscored != "" {
		// Restored traces not to hold again (durable_restore.go).
		var ts []*heldTrace
		for _, c := range m.chunks {
			if t := p.traces[c.id]; t != nil {
				ts = append(ts, p.unhold(t))
			}
		}
		p.dispatch(ts, now, false, m.unscored)
	}
	if len(p.traces) > p.cfg.MaxTraces {
		var over []*heldTrace
		for len(p.traces) > p.cfg.MaxTraces {
			over = append(over, p.unhold(p.lists[0].head))
		}
		p.dispatch(over, now, false, reasonOverflow)
	}
}

// forgetUnheld forgets the held mark of trace ids a failed call took back,
// unless chunks of the trace are held (another call's).
func (p *evalProcessor) forgetUnheld(ids []pcommon.TraceID) {
	p.dirMu.Lock()
	defer p.dirMu.Unlock()
	for _, id := range ids {
		if p.traces[id] == nil && p.dir[id] == stateHeld {
			delete(p.dir, id)
		}
	}
}

// release hands on every trace whose wait (or root grace) has passed, or
// that has been held for max_hold, and forgets released ids whose
// retention has passed.
func (p *evalProcessor) release(now time.Time) {
	var due []*heldTrace
	for t := p.lists[0].head; t != nil && !now.Before(t.lastSeen.Add(p.cfg.Wait)); t = p.lists[0].head {
		due = append(due, p.unhold(t))
	}
	if p.cfg.RootGrace > 0 {
		for t := p.lists[1].head; t != nil && !now.Before(t.lastSeen.Add(p.cfg.RootGrace)); t = p.lists[1].head {
			due = append(due, p.unhold(t))
		}
	}
	n := len(due)
	for t := p.lists[2].head; t != nil && !now.Before(t.first.Add(p.cfg.MaxHold)); t = p.lists[2].head {
		due = append(due, p.unhold(t))
	}
	if len(due) > n {
		p.bounded(boundMaxHold, due[n:])
	}
	p.dispatch(due, now, true, "")
	if p.mem.needsExpiry(now) {
		p.dirMu.Lock()
		p.mem.expire(p.dir, now)
		p.dirMu.Unlock()
	}
}

// unhold stops holding t (it still counts in traces_held until forwarded).
func (p *evalProcessor) unhold(t *heldTrace) *heldTrace {
	p.lists[0].remove(t)
	p.lists[1].remove(t)
	p.lists[2].remove(t)
	delete(p.traces, t.id)
	return t
}

// dispatch remembers the ids of ts as released (later spans are late) and
// gives the traces to the workers as one group.
func (p *evalProcessor) dispatch(ts []*heldTrace, now time.Time, score bool, reason string) {
	if len(ts) == 0 {
		return
	}
	forgotten := 0
	p.dirMu.Lock()
	for _, t := range ts {
		forgotten += p.mem.markDone(p.dir, t.id, now)
	}
	p.dirMu.Unlock()
	if forgotten > 0 {
		p.tel.decisionsForgotten.Add(context.Background(), int64(forgotten))
	}
	g := &group{pending: len(ts)}
	for _, t := range ts {
		p.jobs <- job{t: t, g: g, score: score, reason: reason}
	}
}

// worker scores released traces. A worker whose scorer outruns the
// trace's deadline is taken over by the watchdog (see watch): it ends when
// the scorer finally returns, and a new worker has taken its place.
func (p *evalProcessor) worker() {
	w := &workerSlot{}
	p.slotsMu.Lock()
	p.slots[w] = struct{}{}
	p.slotsMu.Unlock()
	for j := range p.jobs {
		if !p.process(w, j) {
			return // the watchdog took over and counted this worker out
		}
	}
	p.slotsMu.Lock()
	delete(p.slots, w)
	p.slotsMu.Unlock()
	p.wg.Done()
}

func (p *evalProcessor) process(w *workerSlot, j job) bool {
	if j.t.spans == 0 {
		// Only GenAI log records came: their trace never showed up.
		p.forwardReleased(j.t, j.g, "")
		return true
	}
	if j.score && p.runCtx.Err() == nil {
		return p.score(w, j)
	}
	reason := j.reason
	if reason == "" {
		reason = reasonShutdown // Shutdown's time is up: forward unscored.
	}
	p.forwardReleased(j.t, j.g, reason)
	return true
}

// forwardReleased merges a released trace's chunks by route and hands them
// on, in its group when g is set, counting them as unscored when reason is
// set. It is the one place a released trace leaves the processor.
func (p *evalProcessor) forwardReleased(t *heldTrace, g *group, reason string) {
	if reason != "" {
		p.tel.unscored(context.Background(), reason, t.spans)
	}
	p.tel.tracesHeld.Add(context.Background(), -1)
	if p.sampledOut(t, g) {
		return
	}
	p.forwardLogs(t, t.results, t.resultN)
	rts := byRoute(t.parts)
	t.parts, t.refs = nil, nil
	if g != nil {
		g.add(p.fwd, rts)
		return
	}
	for _, rt := range rts {
		p.fwd.pushTraces(rt)
	}
}

// Who owns a trace's spans while it is scored.
const (
	ownerNone      uint8 = iota
	ownerScorer          // the engine is writing results (or has)
	ownerForwarder       // the watchdog forwarded the spans at the deadline
)

// scoring is the hand-over of one trace between the worker that scores it
// (and the engine's background, for judges) and the watchdog.
type scoring struct {
	mu       sync.Mutex
	owner    uint8
	finished bool // the engine called done
	async    bool // scoring goes on in the engine's background (judges)
}

// claimScorer is the engine's annotate guard.
func (s *scoring) claimScorer() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == ownerForwarder {
		return false
	}
	s.owner = ownerScorer
	return true
}

// workerSlot is what the watchdog knows of one worker: the trace it is
// scoring synchronously, and until when.
type workerSlot struct {
	mu        sync.Mutex
	s         *scoring
	prog      *engine.Progress
	j         job
	deadline  time.Time
	abandoned bool
}

// score runs the engine on t's spans (the processor's own copies, so the
// engine may write onto them) and forwards the trace once scored. The
// evaluators run on the worker itself (no hand-over per trace); the
// watchdog forwards the trace unscored when they outrun the deadline. It
// returns false when the watchdog took the worker over.
func (p *evalProcessor) score(w *workerSlot, j job) bool {
	t := j.t
	ctx, cancel := context.WithTimeout(p.runCtx, p.cfg.Timeout)
	s := &scoring{}
	prog := engine.NewProgress()
	ctx = engine.WithAnnotateGuard(ctx, s.claimScorer)
	ctx = engine.WithProgress(ctx, prog)
	ctx = engine.WithSpanOrigin(ctx, t.origin())
	start := time.Now()
	// refs is set on this goroutine before scoreFn runs; finish reads it
	// after (on this goroutine or the engine's background).
	var refs []adapter.SpanRef
	finish := func(rep engine.Report) {
		s.mu.Lock()
		if s.finished || s.owner == ownerForwarder {
			s.mu.Unlock()
			return
		}
		s.finished, s.owner = true, ownerScorer
		async := s.async
		s.mu.Unlock()
		defer cancel()
		p.tel.evalDuration.Record(ctx, time.Since(start).Seconds())
		if len(rep.Problems) > 0 {
			p.badInput(ctx, t.id, rep.Problems)
		}
		for i := range rep.Evaluations {
			for k := range rep.Evaluations[i].Results {
				p.tel.evaluation(ctx, &rep.Evaluations[i].Results[k])
			}
		}
		p.tel.tracesScored.Add(ctx, 1)
		reason := ""
		if len(rep.Problems) > 0 && len(rep.Evaluations) == 0 {
			reason = reasonBadInput
		}
		if p.resultLogsOn() {
			t.results, t.resultN = resultRecords(rep, refs, pcommon.NewTimestampFromTime(time.Now()))
		}
		g := j.g
		if async {
			g = nil // it left its group: it goes on by itself
		}
		t.outcome = outcomeOf(rep)
		p.forwardReleased(t, g, reason)
	}
	w.mu.Lock()
	w.s, w.prog, w.j, w.deadline = s, prog, j, start.Add(p.cfg.Timeout+p.deadlineGrace)
	w.mu.Unlock()
	func() {
		defer func() {
			// A panic on strange input must not take the collector down,
			// nor lose the trace.
			if r := recover(); r != nil {
				p.logger.Error("scoring a trace panicked", zap.Stringer("trace_id", t.id),
					zap.Any("panic", r), zap.Stack("stack"))
				finish(engine.Report{Problems: []string{fmt.Sprintf("scoring panicked: %v", r)}})
			}
		}()
		// Everything that reads the trace runs under the deadline and the
		// watchdog: the duplicate check, the join of its log records
		// (linear), adapting and evaluating.
		var dups int
		refs, dups = uniqueSpans(t.refs)
		if dups > 0 {
			p.tel.spansDuplicate.Add(context.Background(), int64(dups))
		}
		if len(t.records) > 0 {
			// Content from the trace's GenAI log records fills what its
			// spans lack.
			if n := adapter.JoinEvents(refs, t.records); n > 0 {
				p.tel.logRecordsUnjoined.Add(context.Background(), int64(n))
			}
		}
		p.scoreFn(ctx, refs, finish)
	}()
	w.mu.Lock()
	abandoned := w.abandoned
	w.s, w.prog, w.j = nil, nil, job{}
	w.mu.Unlock()
	if abandoned {
		cancel()
		return false
	}
	s.mu.Lock()
	if !s.finished {
		s.async = true // judge work goes on in the engine's background
	}
	async := s.async
	s.mu.Unlock()
	if async {
		j.g.add(p.fwd, nil)
	}
	return true
}

// watch is the watchdog: it forwards, unscored, the trace of every worker
// whose evaluators have run past the trace's deadline plus deadlineGrace
// (at once when Shutdown's context has ended), and starts a worker in its
// place, so neither the spans nor the workers wait for an evaluator that
// ignores its context. The engine's annotate guard keeps the late scorer
// from writing onto the forwarded spans.
func (p *evalProcessor) watch(stop <-chan struct{}) {
	defer p.watchWG.Done()
	every := min(max(p.cfg.Timeout/10, 5*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	done := p.runCtx.Done()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-done:
			done = nil // once; from now on every running scorer is overdue
		}
		p.takeOverOverdue(time.Now())
	}
}

func (p *evalProcessor) takeOverOverdue(now time.Time) {
	shutdown := p.runCtx.Err() != nil
	p.slotsMu.Lock()
	var overdue []*workerSlot
	for w := range p.slots {
		w.mu.Lock()
		if w.s != nil && !w.abandoned && (shutdown || !now.Before(w.deadline)) {
			overdue = append(overdue, w)
		}
		w.mu.Unlock()
	}
	p.slotsMu.Unlock()
	for _, w := range overdue {
		w.mu.Lock()
		s, j, prog := w.s, w.j, w.prog
		var partial []engine.Partial
		claimed := false
		if s != nil && !w.abandoned {
			s.mu.Lock()
			if s.owner == ownerNone {
				// Too late when the deterministic part is over: the
				// engine's judges finish the trace at the deadline.
				if partial, claimed = prog.TakeOver(); claimed {
					s.owner = ownerForwarder
				}
			}
			s.mu.Unlock()
		}
		if claimed {
			w.abandoned = true
		}
		w.mu.Unlock()
		if !claimed {
			continue // the engine is writing the results: that is quick
		}
		reason := reasonTimeout
		if shutdown {
			reason = reasonShutdown
		}
		p.logger.Warn("an evaluator outran the trace's deadline; the trace is forwarded with the results that finished (the rest `timeout`), and the evaluator's result will be discarded",
			zap.Stringer("trace_id", j.t.id), zap.String("reason", reason), zap.Duration("timeout", p.cfg.Timeout),
			zap.Int("cases_with_results", len(partial)))
		// The stuck evaluator may still read the trace's spans and log
		// records: what goes on is a copy, and the originals stay with it.
		cp := j.t.copyForTakeOver(partial, p.resultLogsOn())
		for i := range partial {
			for k := range partial[i].Results {
				p.tel.evaluation(context.Background(), &partial[i].Results[k])
			}
		}
		p.forwardReleased(cp, j.g, reason)
		p.slotsMu.Lock()
		delete(p.slots, w)
		p.slotsMu.Unlock()
		p.wg.Add(1)
		go p.worker()
		p.wg.Done() // the stuck worker's
	}
}

// copyForTakeOver returns a copy of the trace's spans and log records with
// the partial results written on the copies of the evaluated spans (and,
// with resultLogs, as result log records). t itself is only read.
func (t *heldTrace) copyForTakeOver(partial []engine.Partial, resultLogs bool) *heldTrace {
	cp := &heldTrace{id: t.id, spans: t.spans, logCount: t.logCount}
	var spanMap map[ptrace.Span]adapter.SpanRef
	if len(partial) > 0 {
		spanMap = make(map[ptrace.Span]adapter.SpanRef, t.spans)
	}
	for _, pt := range t.parts {
		c := tracePart{route: pt.route, spans: pt.spans, key: pt.key}
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
		c := logPartHeld{ld: plog.NewLogs(), route: lp.route, count: lp.count, key: lp.key}
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
		cp.results, cp.resultN = resultRecords(rep, refs, now)
	}
	return cp
}

// uniqueSpans returns refs without the copies of a span that came before
// (a resent request): each span is scored once. Every span is still
// forwarded. It returns how many it left out.
func uniqueSpans(refs []adapter.SpanRef) ([]adapter.SpanRef, int) {
	first := -1 // the first duplicate
	if len(refs) <= 32 {
		// Small traces (nearly all): compare, without a map.
		var ids [32]pcommon.SpanID
		for i := range refs {
			ids[i] = refs[i].Span.SpanID()
			for k := 0; k < i && first < 0; k++ {
				if ids[k] == ids[i] {
					first = i
				}
			}
			if first >= 0 {
				break
			}
		}
	} else {
		seen := make(map[pcommon.SpanID]struct{}, len(refs))
		for i := range refs {
			id := refs[i].Span.SpanID()
			if _, ok := seen[id]; ok {
				first = i
				break
			}
			seen[id] = struct{}{}
		}
	}
	if first < 0 {
		return refs, 0
	}
	// Rare: build the list without the copies. A span is a copy of an
	// earlier one (a resent request) when its id, name and times match;
	// two different spans that share an id are both kept: the adapter
	// decides which one the id's children hang under, and results go on
	// the span each case came from (Case.SpanIndex).
	type spanKey struct {
		id         pcommon.SpanID
		name       string
		start, end pcommon.Timestamp
	}
	seen := make(map[spanKey]struct{}, len(refs))
	out := make([]adapter.SpanRef, 0, len(refs)-1)
	for i := range refs {
		s := refs[i].Span
		k := spanKey{s.SpanID(), s.Name(), s.StartTimestamp(), s.EndTimestamp()}
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, refs[i])
	}
	if len(out) == len(refs) {
		return refs, 0
	}
	return out, len(refs) - len(out)
}

// badInput counts adapter problems always; the first is logged as a
// warning, the rest at debug level.
func (p *evalProcessor) badInput(ctx context.Context, id pcommon.TraceID, problems []string) {
	p.tel.badInput.Add(ctx, int64(len(problems)))
	if p.badInputLogged.CompareAndSwap(false, true) {
		p.logger.Warn("bad GenAI input: spans are forwarded with what could be read (further problems are logged at debug level)",
			zap.Stringer("trace_id", id), zap.Strings("problems", problems))
		return
	}
	if ce := p.logger.Check(zap.DebugLevel, "bad GenAI input"); ce != nil {
		ce.Write(zap.Stringer("trace_id", id), zap.Strings("problems", problems))
	}
}
