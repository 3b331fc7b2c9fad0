package evalprocessor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/engine"
)

// heldTrace is one GenAI trace being held. Only the loop touches it until it
// is handed to a worker.
type heldTrace struct {
	id       pcommon.TraceID
	chunks   []ptrace.Traces
	refs     []adapter.SpanRef
	spans    int
	root     bool
	lastSeen time.Time

	prev, next [2]*heldTrace
	in         [2]bool
}

// traceList is an intrusive doubly linked list of held traces ordered by
// their last span's arrival: the front is the next to be released. List 0
// holds every trace, list 1 those whose root span has arrived (root_grace).
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
	// score is false for traces forwarded unscored (reason says why) and
	// for late spans.
	score  bool
	reason string
	late   bool
}

// loop owns the held traces: it takes chunks from ConsumeTraces, releases
// traces on ticks, and flushes everything on Shutdown.
func (p *evalProcessor) loop(tick ticker) {
	defer p.wg.Done()
	defer close(p.jobs)
	defer tick.Stop()
	p.lists[0].idx, p.lists[1].idx = 0, 1
	for {
		select {
		case chunks := <-p.in:
			p.ingest(chunks)
		case now := <-tick.C():
			p.release(now)
		case <-p.stop:
			// No ConsumeTraces sends any more (Shutdown saw to it); take
			// what may still be pending, then hand every held trace on.
			for {
				select {
				case chunks := <-p.in:
					p.ingest(chunks)
					continue
				default:
				}
				break
			}
			for t := p.lists[0].head; t != nil; t = p.lists[0].head {
				p.releaseTrace(t, job{t: t, score: true})
			}
			return
		}
	}
}

func (p *evalProcessor) ingest(chunks []*chunk) {
	now := p.clk.now()
	for _, c := range chunks {
		t := p.traces[c.id]
		if t == nil {
			p.dirMu.RLock()
			st := p.dir[c.id]
			p.dirMu.RUnlock()
			if st == stateDone {
				// Released between ConsumeTraces' routing and now: late.
				p.jobs <- job{t: &heldTrace{id: c.id, chunks: []ptrace.Traces{c.td}, spans: c.spans}, late: true}
				continue
			}
			t = &heldTrace{id: c.id}
			p.traces[c.id] = t
			p.lists[0].pushBack(t)
			p.tel.tracesHeld.Add(context.Background(), 1)
		} else {
			p.lists[0].moveToBack(t)
		}
		t.chunks = append(t.chunks, c.td)
		if t.refs == nil {
			t.refs = c.refs // the chunk is done with: no copy
		} else {
			t.refs = append(t.refs, c.refs...)
		}
		t.spans += c.spans
		t.lastSeen = now
		t.root = t.root || c.root
		if t.root && p.cfg.RootGrace > 0 {
			p.lists[1].moveToBack(t)
		}
	}
	for len(p.traces) > p.cfg.MaxTraces {
		t := p.lists[0].head
		p.releaseTrace(t, job{t: t, reason: reasonOverflow})
	}
}

// release hands on every trace whose wait (or root grace) has passed.
func (p *evalProcessor) release(now time.Time) {
	for t := p.lists[0].head; t != nil && !now.Before(t.lastSeen.Add(p.cfg.Wait)); t = p.lists[0].head {
		p.releaseTrace(t, job{t: t, score: true})
	}
	if p.cfg.RootGrace > 0 {
		for t := p.lists[1].head; t != nil && !now.Before(t.lastSeen.Add(p.cfg.RootGrace)); t = p.lists[1].head {
			p.releaseTrace(t, job{t: t, score: true})
		}
	}
}

// releaseTrace stops holding t, remembers its id as done (later spans are
// late) and gives it to a worker.
func (p *evalProcessor) releaseTrace(t *heldTrace, j job) {
	p.lists[0].remove(t)
	p.lists[1].remove(t)
	delete(p.traces, t.id)
	p.tel.tracesHeld.Add(context.Background(), -1)
	p.markDone(t.id)
	p.jobs <- j
}

// markDone records id as released, forgetting the oldest released id once
// the ring of recent ids is full.
func (p *evalProcessor) markDone(id pcommon.TraceID) {
	p.dirMu.Lock()
	defer p.dirMu.Unlock()
	p.dir[id] = stateDone
	if len(p.ring) < cap(p.ring) {
		p.ring = append(p.ring, id)
		return
	}
	old := p.ring[p.ringN]
	if p.dir[old] == stateDone {
		delete(p.dir, old)
	}
	p.ring[p.ringN] = id
	p.ringN = (p.ringN + 1) % len(p.ring)
}

func (p *evalProcessor) worker() {
	defer p.wg.Done()
	for j := range p.jobs {
		p.process(j)
	}
}

func (p *evalProcessor) process(j job) {
	if j.score && !j.late && p.runCtx.Err() == nil {
		// Scoring may wait for a judge; that happens in the engine's
		// background, so this worker is free for the next trace at once and
		// traces without judge work are never queued behind judged ones.
		p.score(j.t, func(ok bool) {
			reason := ""
			if !ok {
				reason = reasonBadInput
			}
			p.forwardReleased(j.t, reason, false)
		})
		return
	}
	reason := j.reason
	if j.score && !j.late {
		reason = reasonShutdown // Shutdown's time is up: forward unscored.
	}
	p.forwardReleased(j.t, reason, j.late)
}

// forwardReleased merges a released trace's chunks and forwards them,
// counting them as unscored (with reason) or late.
func (p *evalProcessor) forwardReleased(t *heldTrace, reason string, late bool) {
	switch {
	case late:
		p.tel.spansLate.Add(context.Background(), int64(t.spans))
	case reason != "":
		p.tel.unscored(context.Background(), reason, t.spans)
	}
	td := t.chunks[0]
	for _, c := range t.chunks[1:] {
		c.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	what := "scored"
	switch {
	case late:
		what = "late"
	case reason != "":
		what = reason
	}
	p.forwardAsync(td, what)
}

// score runs the engine on t's spans (the processor's own copies, so the
// engine may write onto them) and calls done exactly once, with false when
// nothing could be scored because of bad input.
func (p *evalProcessor) score(t *heldTrace, done func(ok bool)) {
	ctx, cancel := context.WithTimeout(p.runCtx, p.cfg.Timeout)
	start := time.Now()
	var once sync.Once
	finish := func(rep engine.Report) {
		once.Do(func() {
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
			done(len(rep.Problems) == 0 || len(rep.Evaluations) > 0)
		})
	}
	defer func() {
		// A panic on strange input must not take the collector down, nor
		// lose the trace.
		if r := recover(); r != nil {
			// Always logged: finish below is a no-op when the panic came
			// from within done (the next consumer), and bad input is
			// logged at debug level after the first warning.
			p.logger.Error("scoring or forwarding a trace panicked", zap.Stringer("trace_id", t.id),
				zap.Any("panic", r), zap.Stack("stack"))
			finish(engine.Report{Problems: []string{fmt.Sprintf("scoring panicked: %v", r)}})
		}
	}()
	p.eng.ScoreTraceAsync(ctx, t.refs, finish)
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
