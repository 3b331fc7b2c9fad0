package evalprocessor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// loop owns the held set: it takes chunks from the consume calls, releases
// traces on ticks, and hands every held trace on at Shutdown. Released
// traces go to the worker pool.
func (p *evalProcessor) loop(tick ticker) {
	defer close(p.loopDone)
	defer tick.Stop()
	for {
		select {
		case m := <-p.in:
			p.ingest(m)
		case now := <-tick.C():
			// What the consume calls handed over before this tick is held
			// before anything is released (p.in is buffered).
			p.drainIngest()
			p.release(p.held.due(now), now, true, "")
			p.held.expire(now)
		case <-p.stop:
			// No consume call sends any more (Shutdown saw to it); take
			// what may still be pending, then hand every held trace on.
			p.drainIngest()
			p.release(p.held.all(), p.clk.now(), true, "")
			return
		}
	}
}

// drainIngest takes in every message waiting in p.in.
func (p *evalProcessor) drainIngest() {
	for {
		select {
		case m := <-p.in:
			p.ingest(m)
		default:
			return
		}
	}
}

// ingest holds the chunks of one consume call (or of a restore from
// storage); a chunk whose trace was released since the call routed it goes
// on as late.
func (p *evalProcessor) ingest(m ingestMsg) {
	if len(m.undo) > 0 {
		p.held.forgetUnheld(m.undo)
	}
	now := m.at
	if now.IsZero() {
		now = p.clk.now()
	}
	if len(m.refresh) > 0 {
		p.held.refresh(m.refresh, now)
	}
	var full []*heldTrace
	for _, c := range m.chunks {
		ok, t := p.held.add(c, now, m.restored, m.unscored != "")
		switch {
		case !ok && c.kept != nil:
			// Stream mode: it went on when it came; the trace was scored.
			p.tel.spansLate.Add(context.Background(), int64(c.spans))
			p.removeKeys(keysOf(c))
		case !ok && c.isLogs:
			p.tel.logRecordsLate.Add(context.Background(), int64(c.count))
			p.fwd.pushLogs(routed[plog.Logs]{route: c.route, data: c.ld, n: c.count, keys: keysOf(c), shared: c.logsShared})
		case !ok:
			p.tel.spansLate.Add(context.Background(), int64(c.spans))
			p.fwd.pushTraces(routedTraces{route: c.route, data: c.td, n: c.spans, keys: keysOf(c), shared: c.shared})
		case t != nil:
			full = append(full, t) // max_trace_spans: scored and released at once
		}
	}
	if len(full) > 0 {
		p.held.bounded(boundMaxTraceSpans, full)
		p.release(full, now, true, "")
	}
	if m.unscored != "" {
		// Restored traces not to hold again (durable_restore.go).
		var ts []*heldTrace
		for _, c := range m.chunks {
			if t := p.held.traces[c.id]; t != nil {
				ts = append(ts, p.held.unhold(t))
			}
		}
		p.release(ts, now, false, m.unscored)
	}
	p.release(p.held.overflow(), now, false, reasonOverflow)
}

// release remembers the ids of ts as released (later spans are late) and
// gives the traces to the workers as one group: to score, or to forward
// unscored for reason.
func (p *evalProcessor) release(ts []*heldTrace, now time.Time, score bool, reason string) {
	if len(ts) == 0 {
		return
	}
	p.held.released(ts, now)
	g := &group{f: p.fwd, pending: len(ts)}
	for _, t := range ts {
		p.pool.submit(job{t: t, g: g, score: score, reason: reason})
	}
}

// forwardReleased merges a released trace's chunks by route and hands them
// on, in its group when g is set, counting them as unscored when reason is
// set. It is the one place a released trace leaves the processor.
func (p *evalProcessor) forwardReleased(t *heldTrace, g *group, reason string) {
	if p.streaming {
		p.forwardStreamed(t, g, reason)
		return
	}
	if reason != "" {
		p.tel.unscored(context.Background(), reason, t.spans)
	}
	p.tel.tracesHeld.Add(context.Background(), -1)
	if p.sampledOut(t, g) {
		return
	}
	p.forwardLogs(t, t.results, t.resultN)
	rts := byRoute[ptrace.Traces](t.parts)
	t.parts = nil
	if g != nil {
		g.add(rts)
		return
	}
	for _, rt := range rts {
		p.fwd.pushTraces(rt)
	}
}
