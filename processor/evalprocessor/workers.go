package evalprocessor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// defaultDeadlineGrace: a well-behaved engine reports `timeout` for the
// evaluators that did not finish by the deadline, which beats no score; the
// watchdog gives it this long before it forwards the trace unscored.
const defaultDeadlineGrace = time.Second

// scoreFunc scores one trace: the engine's ScoreTraceAsync.
type scoreFunc func(context.Context, []adapter.SpanRef, engine.ScoreOptions, func(engine.Report))

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

// workerPool is the workers that score released traces, and the watchdog
// that takes a trace back from a worker whose evaluators outrun its
// deadline. Every trace it is given leaves it through release, once.
type workerPool struct {
	workers int
	timeout time.Duration
	// grace is how long past a trace's deadline the watchdog waits for a
	// scorer to return before it forwards the spans unscored.
	grace time.Duration
	// score scores one trace (the engine's; tests replace it with
	// evaluators that ignore their context).
	score scoreFunc
	// resultLogs: results are also emitted as log records.
	resultLogs bool
	// resultSpans, in stream mode, builds the result spans of a scored
	// trace (stream.go).
	resultSpans func(engine.Report, []adapter.SpanRef, func(adapter.SpanRef) any, time.Time) []routedTraces
	// caseInfo masks what result records copy from a case (resultRecords).
	caseInfo func(annotator.CaseInfo) annotator.CaseInfo
	// release hands a trace on, in its group when g is set, counted as
	// unscored when reason is set.
	release func(t *heldTrace, g *group, reason string)
	tel     *telemetry
	logger  *zap.Logger

	// ctx ends when Shutdown's time is up: traces not yet scored are
	// forwarded unscored, and every running scorer is overdue.
	ctx  context.Context
	jobs chan job
	wg   sync.WaitGroup // the workers
	// slots are the workers, for the watchdog.
	slotsMu   sync.Mutex
	slots     map[*workerSlot]struct{}
	watchStop chan struct{}
	watchWG   sync.WaitGroup

	badInputLogged atomic.Bool
}

func newWorkerPool(cfg *Config, tel *telemetry, logger *zap.Logger) *workerPool {
	return &workerPool{workers: cfg.Workers, timeout: cfg.Timeout, grace: defaultDeadlineGrace, tel: tel, logger: logger}
}

// start starts the workers and the watchdog; ctx is the processor's run
// context.
func (wp *workerPool) start(ctx context.Context) {
	wp.ctx = ctx
	wp.jobs = make(chan job, jobsPerWorker*wp.workers)
	wp.slots = make(map[*workerSlot]struct{}, wp.workers)
	wp.watchStop = make(chan struct{})
	wp.wg.Add(wp.workers)
	wp.watchWG.Add(1)
	go wp.watch()
	for i := 0; i < wp.workers; i++ {
		go wp.worker()
	}
}

// jobsPerWorker sizes the queue of released traces waiting for a worker.
// A queue as short as the workers left the loop blocked in submit for
// each trace of a release: woken by every worker that took one, it then
// waited for a core the workers held, while the consume calls waited for
// it and the workers, their queue empty, for both (bench/procbench: 1.57
// cores of 2 busy; 1.75 with this queue, a quarter more spans/s, 10 %
// less CPU a span). The traces in it are already released: it adds at
// most this many per worker to what max_traces holds.
const jobsPerWorker = 64

// submit gives the workers one trace (blocking while all are busy and
// the queue is full: the loop waits, and the consume calls behind it).
func (wp *workerPool) submit(j job) { wp.jobs <- j }

// stop, once nothing is submitted any more, waits for the workers to finish
// what they were given, then stops the watchdog.
func (wp *workerPool) stop() {
	close(wp.jobs)
	wp.wg.Wait()
	close(wp.watchStop)
	wp.watchWG.Wait()
}

// worker scores released traces. A worker whose scorer outruns the
// trace's deadline is taken over by the watchdog (see watch): it ends when
// the scorer finally returns, and a new worker has taken its place.
func (wp *workerPool) worker() {
	w := &workerSlot{}
	wp.slotsMu.Lock()
	wp.slots[w] = struct{}{}
	wp.slotsMu.Unlock()
	for j := range wp.jobs {
		if !wp.process(w, j) {
			return // the watchdog took over and counted this worker out
		}
	}
	wp.slotsMu.Lock()
	delete(wp.slots, w)
	wp.slotsMu.Unlock()
	wp.wg.Done()
}

func (wp *workerPool) process(w *workerSlot, j job) bool {
	if j.t.spans == 0 {
		// Only GenAI log records came: their trace never showed up.
		wp.release(j.t, j.g, "")
		return true
	}
	if j.score && wp.ctx.Err() == nil {
		if err := j.t.unpack(); err != nil { // stream mode's kept form; hold mode has none
			wp.badInput(wp.ctx, j.t.id, []string{err.Error()})
		}
		return wp.scoreTrace(w, j)
	}
	reason := j.reason
	if reason == "" {
		reason = reasonShutdown // Shutdown's time is up: forward unscored.
	}
	wp.release(j.t, j.g, reason)
	return true
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
	// refsFree: finish is past its last read of the run's span references,
	// so the worker may take the list back for its next trace. finished
	// alone is not enough: the engine's background may be inside finish.
	refsFree bool
}

// claimScorer is the engine's annotate guard (ScoreOptions.Claim).
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
	// refs is the list of span references the worker's last trace was
	// read through, reused for the next (worker goroutine only).
	refs []adapter.SpanRef

	mu        sync.Mutex
	s         *scoring
	dups      spanDups
	prog      *engine.Progress
	j         job
	deadline  time.Time
	abandoned bool
}

// maxKeptRefs bounds the span reference list a worker keeps between
// traces (48 bytes a span): a huge trace's is let go.
const maxKeptRefs = 4096

// scoreTrace runs the engine on t's spans (the processor's own copies, so
// the engine may write onto them) and forwards the trace once scored. The
// evaluators run on the worker itself (no hand-over per trace); the
// watchdog forwards the trace unscored when they outrun the deadline. It
// returns false when the watchdog took the worker over.
func (wp *workerPool) scoreTrace(w *workerSlot, j job) bool {
	t := j.t
	r := &scoreRun{wp: wp, j: j, start: time.Now()}
	r.ctx, r.cancel = withDeadline(wp.ctx, r.start.Add(wp.timeout))
	r.opts = engine.ScoreOptions{Progress: engine.NewProgress(), Claim: r.s.claimScorer, Origin: t.origin()}
	w.mu.Lock()
	w.s, w.prog, w.j, w.deadline = &r.s, r.opts.Progress, j, r.start.Add(wp.timeout+wp.grace)
	w.mu.Unlock()
	func() {
		defer func() {
			// A panic on strange input must not take the collector down,
			// nor lose the trace.
			if rec := recover(); rec != nil {
				wp.logger.Error("scoring a trace panicked", zap.Stringer("trace_id", t.id),
					zap.Any("panic", rec), zap.Stack("stack"))
				r.finish(engine.Report{Problems: []string{fmt.Sprintf("scoring panicked: %v", rec)}})
			}
		}()
		// Everything that reads the trace runs under the deadline and the
		// watchdog: the duplicate check, the join of its log records
		// (linear), adapting and evaluating.
		r.refs, r.copies = uniqueSpanCopies(t.spanRefs(w.refs))
		// The run owns the list from here: a trace that goes on waiting
		// for its judge reads it when the judge answers, long after this
		// worker has moved on (issue 34: the next trace refilled and
		// cleared it under a judged trace's result records). It comes
		// back below only once finish is done with it.
		w.refs = nil
		if len(r.copies) > 0 {
			// The watchdog's copy must carry the results onto these too.
			w.mu.Lock()
			w.dups = spanDups{scored: r.refs, copies: r.copies, origin: r.opts.Origin}
			w.mu.Unlock()
		}
		if len(r.copies) > 0 {
			wp.tel.spansDuplicate.Add(context.Background(), int64(len(r.copies)))
		}
		if len(t.records) > 0 {
			// Content from the trace's GenAI log records fills what its
			// spans lack.
			if n := adapter.JoinEvents(r.refs, t.records); n > 0 {
				wp.tel.logRecordsUnjoined.Add(context.Background(), int64(n))
			}
		}
		wp.score(r.ctx, r.refs, r.opts, r.finish)
	}()
	w.mu.Lock()
	abandoned := w.abandoned
	w.s, w.prog, w.j, w.dups = nil, nil, job{}, spanDups{}
	w.mu.Unlock()
	if abandoned {
		r.cancel()
		return false
	}
	r.s.mu.Lock()
	if !r.s.finished {
		r.s.async = true // judge work goes on in the engine's background
	}
	async, refsFree := r.s.async, r.s.refsFree
	r.s.mu.Unlock()
	if async {
		j.g.leave()
	} else if refsFree && cap(r.refs) <= maxKeptRefs {
		// Finished, and nothing reads refs any more. The next trace
		// reuses the list (cleared, so it keeps no spans alive).
		clear(r.refs)
		w.refs = r.refs[:0]
	}
	return true
}

// scoreRun is the scoring of one trace, in one allocation: the hand-over
// with the watchdog, the deadline, and what finish needs. refs and copies
// are set on the worker before the engine runs; finish reads them after
// (on the worker or in the engine's background).
type scoreRun struct {
	wp     *workerPool
	j      job
	s      scoring
	opts   engine.ScoreOptions
	ctx    context.Context
	cancel context.CancelFunc
	start  time.Time
	refs   []adapter.SpanRef
	copies []spanCopy
}

// finish is the engine's done callback: it records the results and
// forwards the trace, once, unless the watchdog took it over.
func (r *scoreRun) finish(rep engine.Report) {
	s, wp, t := &r.s, r.wp, r.j.t
	s.mu.Lock()
	if s.finished || s.owner == ownerForwarder {
		s.mu.Unlock()
		return
	}
	s.finished, s.owner = true, ownerScorer
	async := s.async
	s.mu.Unlock()
	defer r.cancel()
	ctx := r.ctx
	wp.tel.evalDuration.Record(ctx, time.Since(r.start).Seconds())
	if len(rep.Problems) > 0 {
		wp.badInput(ctx, t.id, rep.Problems)
	}
	for i := range rep.Evaluations {
		for k := range rep.Evaluations[i].Results {
			wp.tel.evaluation(ctx, &rep.Evaluations[i].Results[k])
		}
	}
	wp.tel.tracesScored.Add(ctx, 1)
	reason := ""
	if len(rep.Problems) > 0 && len(rep.Evaluations) == 0 {
		reason = reasonBadInput
	}
	if wp.resultLogs {
		t.results, t.resultN = resultRecords(rep, r.refs, pcommon.NewTimestampFromTime(time.Now()), wp.caseInfo)
	}
	g := r.j.g
	if async {
		g = nil // it left its group: it goes on by itself
	}
	t.outcome = outcomeOf(rep)
	if wp.resultSpans != nil {
		t.resultSpans = wp.resultSpans(rep, r.refs, r.opts.Origin, r.start)
	}
	copyResults(spanDups{scored: r.refs, copies: r.copies, origin: r.opts.Origin}, nil)
	s.mu.Lock()
	s.refsFree = true
	s.mu.Unlock()
	wp.release(t, g, reason)
}

// watch is the watchdog: it forwards, unscored, the trace of every worker
// whose evaluators have run past the trace's deadline plus grace (at once
// when Shutdown's context has ended), and starts a worker in its place, so
// neither the spans nor the workers wait for an evaluator that ignores its
// context. The engine's annotate guard keeps the late scorer from writing
// onto the forwarded spans.
func (wp *workerPool) watch() {
	defer wp.watchWG.Done()
	every := min(max(wp.timeout/10, 5*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	done := wp.ctx.Done()
	for {
		select {
		case <-wp.watchStop:
			return
		case <-t.C:
		case <-done:
			done = nil // once; from now on every running scorer is overdue
		}
		wp.takeOverOverdue(time.Now())
	}
}

func (wp *workerPool) takeOverOverdue(now time.Time) {
	shutdown := wp.ctx.Err() != nil
	wp.slotsMu.Lock()
	var overdue []*workerSlot
	for w := range wp.slots {
		w.mu.Lock()
		if w.s != nil && !w.abandoned && (shutdown || !now.Before(w.deadline)) {
			overdue = append(overdue, w)
		}
		w.mu.Unlock()
	}
	wp.slotsMu.Unlock()
	for _, w := range overdue {
		w.mu.Lock()
		s, j, prog, dups := w.s, w.j, w.prog, w.dups
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
		wp.logger.Warn("an evaluator outran the trace's deadline; the trace is forwarded with the results that finished (the rest `timeout`), and the evaluator's result will be discarded",
			zap.Stringer("trace_id", j.t.id), zap.String("reason", reason), zap.Duration("timeout", wp.timeout),
			zap.Int("cases_with_results", len(partial)))
		// The stuck evaluator may still read the trace's spans and log
		// records: what goes on is a copy, and the originals stay with it.
		cp := j.t.copyForTakeOver(partial, dups, wp.resultLogs, wp.caseInfo)
		if wp.resultSpans != nil && len(partial) > 0 {
			// Stream mode: the partial results as result spans, from the
			// copies they were written onto.
			rep := engine.Report{Evaluations: make([]engine.Evaluation, len(partial))}
			for i := range partial {
				rep.Evaluations[i] = engine.Evaluation{Case: partial[i].Case, Results: partial[i].Results}
			}
			cp.resultSpans = wp.resultSpans(rep, cp.spanRefs(nil), cp.origin(), time.Now())
		}
		for i := range partial {
			for k := range partial[i].Results {
				wp.tel.evaluation(context.Background(), &partial[i].Results[k])
			}
		}
		wp.release(cp, j.g, reason)
		wp.slotsMu.Lock()
		delete(wp.slots, w)
		wp.slotsMu.Unlock()
		wp.wg.Add(1)
		go wp.worker()
		wp.wg.Done() // the stuck worker's
	}
}

// uniqueSpans returns refs without the copies of a span that came before
// (a resent request, or one receiver's fan-out to two pipelines listing
// the same eval): each span is scored once. Every span is still
// forwarded. It returns how many it left out.
func uniqueSpans(refs []adapter.SpanRef) ([]adapter.SpanRef, int) {
	out, copies := uniqueSpanCopies(refs)
	return out, len(copies)
}

// spanCopy is a span left out of scoring as a copy of the scored span
// out[of].
type spanCopy struct {
	ref adapter.SpanRef
	of  int
}

// uniqueSpanCopies is uniqueSpans, also returning the copies it left out
// and which scored span each copies, so the results can follow them.
func uniqueSpanCopies(refs []adapter.SpanRef) ([]adapter.SpanRef, []spanCopy) {
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
		return refs, nil
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
	seen := make(map[spanKey]int, len(refs))
	out := make([]adapter.SpanRef, 0, len(refs)-1)
	var copies []spanCopy
	for i := range refs {
		s := refs[i].Span
		k := spanKey{s.SpanID(), s.Name(), s.StartTimestamp(), s.EndTimestamp()}
		if at, ok := seen[k]; ok {
			copies = append(copies, spanCopy{ref: refs[i], of: at})
			continue
		}
		seen[k] = len(out)
		out = append(out, refs[i])
	}
	if len(copies) == 0 {
		return refs, nil
	}
	return out, copies
}

// spanDups is what copyResults needs: the spans scored, the copies left
// out of scoring, and which pipeline each span came through.
type spanDups struct {
	scored []adapter.SpanRef
	copies []spanCopy
	origin func(adapter.SpanRef) any
}

// copyResults writes onto each copy that came in through another pipeline
// than the span it copies (one receiver fanning out to two pipelines that
// list the same eval) the results scoring wrote onto that span: its eval.*
// attributes and the events appended after the copy's own (the
// gen_ai.evaluation.result events), so each pipeline's backend gets its
// span scored. A copy resent through the same pipeline goes on as received:
// that backend has the scored one, and counting its results twice (evalmetrics,
// webhook) would be wrong. onto, when set, maps each span to the one to
// read and write instead (the watchdog's copy of the trace).
func copyResults(d spanDups, onto func(ptrace.Span) (ptrace.Span, bool)) {
	for _, c := range d.copies {
		if d.origin == nil || d.origin(c.ref) == d.origin(d.scored[c.of]) {
			continue
		}
		src, dst := d.scored[c.of].Span, c.ref.Span
		if onto != nil {
			var ok1, ok2 bool
			if src, ok1 = onto(src); !ok1 {
				continue
			}
			if dst, ok2 = onto(dst); !ok2 {
				continue
			}
		}
		src.Attributes().Range(func(k string, v pcommon.Value) bool {
			if strings.HasPrefix(k, annotator.AttrPrefix) {
				v.CopyTo(dst.Attributes().PutEmpty(k))
			}
			return true
		})
		for i := dst.Events().Len(); i < src.Events().Len(); i++ {
			src.Events().At(i).CopyTo(dst.Events().AppendEmpty())
		}
	}
}

// badInput counts adapter problems always; the first is logged as a
// warning, the rest at debug level.
func (wp *workerPool) badInput(ctx context.Context, id pcommon.TraceID, problems []string) {
	wp.tel.badInput.Add(ctx, int64(len(problems)))
	if wp.badInputLogged.CompareAndSwap(false, true) {
		wp.logger.Warn("bad GenAI input: spans are forwarded with what could be read (further problems are logged at debug level)",
			zap.Stringer("trace_id", id), zap.Strings("problems", problems))
		return
	}
	if ce := wp.logger.Check(zap.DebugLevel, "bad GenAI input"); ce != nil {
		ce.Write(zap.Stringer("trace_id", id), zap.Strings("problems", problems))
	}
}
