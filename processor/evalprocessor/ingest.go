package evalprocessor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
)

// The ingest path, one for both signals: ConsumeTraces and ConsumeLogs
// route each item (span, log record) of a request by its trace id. Items
// of held traces, and of traces that have a GenAI item in the request
// (which are held from then on), are held: moved out of the request, or
// copied when it is read-only. The rest go on at once, as they are. What
// differs between the signals is in an ingestPath: how to walk a request,
// what is GenAI, how to move or copy, where to send, and what to count.

// ingestPath is one signal's side of the ingest path: B is its request
// (ptrace.Traces, plog.Logs), I an item (ptrace.Span, plog.LogRecord).
type ingestPath[B pdata, I any] struct {
	// each calls f on every item of a request, in order, with its trace id.
	each    func(B, func(pcommon.TraceID, I))
	isGenAI func(I) bool
	// lateAll: every item of a released trace counts as late (spans);
	// otherwise only its GenAI items (log records).
	lateAll bool
	count   func(B) int
	hasData func(B) bool
	split   func(B, map[pcommon.TraceID]decision, route) (B, []*chunk)
	// take, when set, is split for a request the processor owns: the held
	// items are moved out of it, not copied (chunk.go).
	take func(B, map[pcommon.TraceID]decision, route) (B, []*chunk)
	send func(context.Context, route, B) error
	// dropLate, when set, removes late items of traces sampling dropped.
	dropLate func(B) B

	// Counters; nil where the signal has none.
	refused, late, held, invalid, newPartition metric.Int64Counter
}

func newSpansPath(p *evalProcessor) *ingestPath[ptrace.Traces, ptrace.Span] {
	tel := p.tel
	return &ingestPath[ptrace.Traces, ptrace.Span]{
		each: func(td ptrace.Traces, f func(pcommon.TraceID, ptrace.Span)) {
			adapter.ForEachSpan(td, func(r adapter.SpanRef) { f(r.Span.TraceID(), r.Span) })
		},
		isGenAI: adapter.IsGenAI,
		lateAll: true,
		count:   ptrace.Traces.SpanCount,
		hasData: func(td ptrace.Traces) bool { return td.ResourceSpans().Len() > 0 },
		split:   splitTraces,
		take:    takeTraces,
		send:    p.routes.sendTraces,
		dropLate: func(td ptrace.Traces) ptrace.Traces {
			td, _ = p.sampling.dropLate(td)
			return td
		},
		refused: tel.spansRefused, late: tel.spansLate, invalid: tel.spansInvalidID, newPartition: tel.tracesNewPartition,
	}
}

func newLogsPath(p *evalProcessor) *ingestPath[plog.Logs, plog.LogRecord] {
	tel := p.tel
	return &ingestPath[plog.Logs, plog.LogRecord]{
		each: func(ld plog.Logs, f func(pcommon.TraceID, plog.LogRecord)) {
			adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) { f(lr.TraceID(), lr) })
		},
		isGenAI: adapter.IsGenAIEvent,
		count:   plog.Logs.LogRecordCount,
		hasData: func(ld plog.Logs) bool { return ld.ResourceLogs().Len() > 0 },
		split:   splitLogs,
		take:    takeLogs,
		send:    p.routes.sendLogs,
		refused: tel.logRecordsRefused, late: tel.logRecordsLate, held: tel.logRecordsHeld,
	}
}

func add(ctx context.Context, c metric.Int64Counter, n int) {
	if c != nil && n > 0 {
		c.Add(ctx, int64(n))
	}
}

// ingestMsg is what the consume calls hand the loop: chunks to hold, or
// (undo) the trace ids a call marked held and then took back because it
// returned an error.
type ingestMsg struct {
	chunks []*chunk
	undo   []pcommon.TraceID
	// refresh are released trace ids that got late items (refreshLate).
	refresh []pcommon.TraceID
	// restored: the chunks were read back from storage (durable_restore.go);
	// unscored, when set, forwards their traces at once, unscored, for
	// that reason (too_old).
	restored bool
	unscored string
	// at is when the consume call handed the chunks over: their arrival,
	// whenever the loop takes them in (zero: when it does).
	at time.Time
}

// consume routes request b that came in through route rt: items of traces
// without a GenAI item go on at once, those of GenAI traces are held,
// those of traces already released go on as they are (late). The held
// items are moved out of b (the processor mutates its input: the collector
// gives it data of its own), or copied when b is marked read-only. All or
// nothing: when it returns an error, nothing of b is held, persisted or
// marked, and b holds every item again (the sender may retry it).
func consume[B pdata, I any](ctx context.Context, p *evalProcessor, in *ingestPath[B, I], b B, rt route) error {
	p.lifeMu.RLock()
	if !p.running {
		p.lifeMu.RUnlock()
		return p.forwardSync(ctx, in.send(ctx, rt, b))
	}
	if p.fwd.full() && wouldHold(p.held, in, b) {
		p.lifeMu.RUnlock()
		return p.refuse(ctx, in.refused, in.count(b))
	}
	r := routeItems(p.held, in, b)
	add(ctx, in.invalid, r.invalid)
	p.refreshLate(r.lateIDs)
	if r.held == 0 {
		p.lifeMu.RUnlock()
		if r.late > 0 {
			add(ctx, in.late, r.late)
			if in.dropLate != nil {
				if b = in.dropLate(b); in.count(b) == 0 {
					return nil // late items of traces dropped by sampling
				}
			}
		}
		return p.forwardSync(ctx, in.send(ctx, rt, b)) // nothing held: as-is, zero copy
	}
	var fwd B
	var chunks []*chunk
	owned := in.take != nil && !readOnly(b)
	if owned {
		fwd, chunks = in.take(b, r.dec, rt)
	} else {
		fwd, chunks = in.split(b, r.dec, rt)
	}
	if err := p.persistChunks(ctx, chunks); err != nil {
		// Nothing of b is held or forwarded: the sender retries it all.
		p.takeBack(r.dec, nil)
		if owned {
			giveBack(b, fwd, chunks)
		}
		p.lifeMu.RUnlock()
		add(ctx, in.refused, in.count(b))
		return err
	}
	send := fwd
	if r.late > 0 && in.dropLate != nil {
		send = in.dropLate(fwd) // late items of traces dropped by sampling
	}
	if in.hasData(send) {
		// The part that goes on at once goes first: when the next consumer
		// refuses it, the held part is taken back and the error returned.
		if err := p.forwardSync(ctx, in.send(ctx, rt, send)); err != nil {
			p.takeBack(r.dec, chunks)
			if owned {
				giveBack(b, fwd, chunks)
			}
			p.lifeMu.RUnlock()
			return err
		}
	}
	p.in <- ingestMsg{chunks: chunks, at: p.clk.now()}
	p.lifeMu.RUnlock()
	add(ctx, in.held, r.held)
	add(ctx, in.late, r.late)
	if in.newPartition != nil && r.started > 0 && p.partitions.recent(ctx, p.clk.now(), p.cfg.Wait) {
		in.newPartition.Add(ctx, int64(r.started))
	}
	return nil
}

// refreshLate has the loop remember the released traces ids as released
// now, so a trace that goes on after it was scored (a long conversation
// past max_hold) is late for as long as its items keep coming and never
// held and scored again. Best effort: with the loop's queue full it is
// skipped, never waited for. The caller holds lifeMu for reading while
// running.
func (p *evalProcessor) refreshLate(ids []pcommon.TraceID) {
	if len(ids) == 0 {
		return
	}
	select {
	case p.in <- ingestMsg{refresh: ids, at: p.clk.now()}:
	default:
	}
}

// forwardSync counts err, the answer of the next consumer to what a
// consume call handed on, and returns it to the caller.
func (p *evalProcessor) forwardSync(ctx context.Context, err error) error {
	if err != nil {
		p.tel.nextConsumerErrors.Add(ctx, 1)
	}
	return err
}

// takeBack undoes what a call that returns an error did: it deletes the
// chunks it persisted and has the loop forget the trace ids it marked held
// (unless another call's chunks of the same trace are held meanwhile).
// The caller holds lifeMu for reading while running.
func (p *evalProcessor) takeBack(dec map[pcommon.TraceID]decision, persisted []*chunk) {
	var keys []string
	for _, c := range persisted {
		if c.key != "" {
			keys = append(keys, c.key)
			c.key = ""
		}
	}
	p.removeKeys(keys)
	var undo []pcommon.TraceID
	for id, d := range dec {
		if d == decHoldNew {
			undo = append(undo, id)
		}
	}
	if len(undo) > 0 {
		p.in <- ingestMsg{undo: undo}
	}
}

// refuse answers a request with new GenAI items while the release backlog
// is full: a retryable error, so the sender retries later (nothing of it is
// kept or forwarded, so a retry duplicates nothing).
func (p *evalProcessor) refuse(ctx context.Context, refused metric.Int64Counter, n int) error {
	add(ctx, refused, n)
	if p.fwd.firstRefusal() {
		p.logger.Warn("refusing new GenAI spans and log records with a retryable error while released data waits for the next consumer (back-pressure; further refusals are logged at debug level)",
			zap.Int64("backlog_spans", p.fwd.backlog.Load()), zap.Int("limit_spans", maxBacklogSpans))
	} else if ce := p.logger.Check(zap.DebugLevel, "refusing new GenAI data (back-pressure)"); ce != nil {
		ce.Write(zap.Int64("backlog_spans", p.fwd.backlog.Load()))
	}
	return errBackPressure
}

// wouldHold tells whether routeItems would hold any item of b: a GenAI
// item of a trace not yet released, or an item of a held trace.
func wouldHold[B pdata, I any](h *heldSet, in *ingestPath[B, I], b B) bool {
	h.dirMu.RLock()
	defer h.dirMu.RUnlock()
	hold := false
	in.each(b, func(id pcommon.TraceID, it I) {
		if hold || id.IsEmpty() {
			return
		}
		st := h.dir[id]
		hold = st == stateHeld || (st == stateUnknown && in.isGenAI(it))
	})
	return hold
}

type decision uint8

const (
	decForward decision = iota
	decHold
	decLate
	// decHoldNew: held, and this call started holding the trace (taken
	// back if the call fails).
	decHoldNew
)

func (d decision) holds() bool { return d == decHold || d == decHoldNew }

// routing is how the items of one request go.
type routing struct {
	dec     map[pcommon.TraceID]decision
	held    int // items to hold
	late    int // items of released traces (lateAll), or their GenAI items
	invalid int // items with an empty trace id (forwarded, never held)
	started int // traces this request starts holding
	// lateIDs are the released traces this request has items of: they
	// stay released while items keep coming (heldSet.refresh).
	lateIDs []pcommon.TraceID
}

// routeItems decides, per trace id in b, where its items go. A trace is
// held when it has a GenAI item in this request or is already held.
func routeItems[B pdata, I any](h *heldSet, in *ingestPath[B, I], b B) routing {
	// Pass 1, lock-free: which traces have GenAI items here.
	var genai map[pcommon.TraceID]struct{}
	var lastGenAI pcommon.TraceID
	hasGenAI := false
	invalid := 0
	in.each(b, func(id pcommon.TraceID, it I) {
		if hasGenAI && id == lastGenAI {
			return
		}
		if id.IsEmpty() {
			// All-zero: no trace to group by; it must not merge with
			// every other item without an id.
			invalid++
			return
		}
		if in.isGenAI(it) {
			if genai == nil {
				genai = make(map[pcommon.TraceID]struct{}, 4)
			}
			genai[id] = struct{}{}
			lastGenAI, hasGenAI = id, true
		}
	})

	r := routing{invalid: invalid}
	// Most traffic has nothing to do with GenAI: without a GenAI item in
	// the request and with no trace held, nothing is locked for writing.
	if len(genai) == 0 {
		h.dirMu.RLock()
		defer h.dirMu.RUnlock()
		if len(h.dir) == 0 {
			return r
		}
	} else {
		h.dirMu.Lock()
		defer h.dirMu.Unlock()
	}
	// Pass 2: decide per trace id (consecutive items mostly share one).
	// Only decisions other than forward are stored (a missing id forwards),
	// so a request with nothing to hold or count allocates nothing here.
	var lastID pcommon.TraceID
	var last decision
	first := true
	in.each(b, func(id pcommon.TraceID, it I) {
		if first || id != lastID {
			d, ok := r.dec[id]
			if !ok {
				switch st := h.dir[id]; {
				case st == stateHeld:
					d = decHold
				case st.done():
					d = decLate
				default:
					if _, g := genai[id]; g {
						h.dir[id] = stateHeld
						d = decHoldNew
						r.started++
					}
				}
				if d != decForward {
					if r.dec == nil {
						r.dec = make(map[pcommon.TraceID]decision, max(len(genai), 4))
					}
					r.dec[id] = d
					if d == decLate {
						r.lateIDs = append(r.lateIDs, id)
					}
				}
			}
			lastID, last, first = id, d, false
		}
		switch last {
		case decHold, decHoldNew:
			r.held++
		case decLate:
			if in.lateAll || in.isGenAI(it) {
				r.late++
			}
		}
	})
	return r
}
