package evalprocessor

import (
	"context"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// The logs side (docs/logs.md). The official GenAI instrumentations put the
// chat content in log records linked to the LLM span; with `eval` in a logs
// pipeline as well, such records are held with their trace, their content
// is read with the spans', and they go on unchanged when the trace is
// released. Every other record passes straight through.

// ConsumeLogs routes log records that come in through route 0.
func (p *evalProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return p.consumeLogs(ctx, ld, 0)
}

// consumeLogs routes log records that came in through route rt: a record
// of a held trace (held from any traces pipeline), or a GenAI content event
// (whose trace may not have arrived yet: it starts holding it), is copied
// and held; everything else goes on at once, as it is. All or nothing, as
// consumeTraces.
func (p *evalProcessor) consumeLogs(ctx context.Context, ld plog.Logs, rt route) error {
	p.lifeMu.RLock()
	if !p.running {
		p.lifeMu.RUnlock()
		return p.forwardLogsSync(ctx, rt, ld)
	}
	if p.fwd.full() && p.wouldHoldLogs(ld) {
		p.lifeMu.RUnlock()
		p.tel.logRecordsRefused.Add(ctx, int64(ld.LogRecordCount()))
		return errBackPressure
	}
	dec, held, late := p.routeLogs(ld)
	if held == 0 {
		p.lifeMu.RUnlock()
		if late > 0 {
			p.tel.logRecordsLate.Add(ctx, int64(late))
		}
		return p.forwardLogsSync(ctx, rt, ld) // nothing held: as-is, zero copy
	}
	fwd, chunks := splitLogs(ld, dec, rt)
	if err := p.persistChunks(ctx, chunks); err != nil {
		// Nothing of ld is held or forwarded: the sender retries it all.
		p.takeBack(dec, nil)
		p.lifeMu.RUnlock()
		p.tel.logRecordsRefused.Add(ctx, int64(ld.LogRecordCount()))
		return err
	}
	if fwd.ResourceLogs().Len() > 0 {
		if err := p.forwardLogsSync(ctx, rt, fwd); err != nil {
			p.takeBack(dec, chunks)
			p.lifeMu.RUnlock()
			return err
		}
	}
	p.in <- ingestMsg{chunks: chunks}
	p.lifeMu.RUnlock()
	p.tel.logRecordsHeld.Add(ctx, int64(held))
	if late > 0 {
		p.tel.logRecordsLate.Add(ctx, int64(late))
	}
	return nil
}

func (p *evalProcessor) forwardLogsSync(ctx context.Context, rt route, ld plog.Logs) error {
	err := p.sendLogs(ctx, rt, ld)
	if err != nil {
		p.tel.nextConsumerErrors.Add(ctx, 1)
	}
	return err
}

// holdsRecord says whether a record of a trace in state st is held.
func holdsRecord(st traceState, lr plog.LogRecord) bool {
	return st == stateHeld || (st == stateUnknown && adapter.IsGenAIEvent(lr))
}

func (p *evalProcessor) wouldHoldLogs(ld plog.Logs) bool {
	p.dirMu.RLock()
	defer p.dirMu.RUnlock()
	hold := false
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
		if id := lr.TraceID(); !hold && !id.IsEmpty() {
			hold = holdsRecord(p.dir[id], lr)
		}
	})
	return hold
}

// routeLogs decides per trace id where the records of ld go: held (a held
// trace, or a GenAI event of a trace not seen yet, which is then held from
// now on) or forwarded. late counts GenAI events of released traces: they
// go on as they are.
func (p *evalProcessor) routeLogs(ld plog.Logs) (dec map[pcommon.TraceID]decision, held, late int) {
	// Most log traffic has nothing to do with GenAI: without a GenAI event
	// in the batch and with no trace held, nothing is locked for writing.
	genai := false
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
		genai = genai || adapter.IsGenAIEvent(lr)
	})
	if genai {
		p.dirMu.Lock()
		defer p.dirMu.Unlock()
	} else {
		p.dirMu.RLock()
		defer p.dirMu.RUnlock()
		if len(p.dir) == 0 {
			return nil, 0, 0
		}
	}
	adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
		id := lr.TraceID()
		if id.IsEmpty() {
			return
		}
		if d, ok := dec[id]; ok {
			if d.holds() {
				held++
			}
			return
		}
		st := p.dir[id]
		d := decHold
		switch {
		case st == stateHeld:
		case st == stateUnknown && adapter.IsGenAIEvent(lr):
			p.dir[id] = stateHeld
			d = decHoldNew
		default:
			if st.done() && adapter.IsGenAIEvent(lr) {
				late++
			}
			return // forwarded: another record of this trace may still be a GenAI event
		}
		if dec == nil {
			dec = make(map[pcommon.TraceID]decision, 4)
		}
		dec[id] = d
		held++
	})
	return dec, held, late
}

// splitLogs copies the records of ld: held traces' into one chunk per trace,
// the rest into fwd. ld itself is never written.
func splitLogs(ld plog.Logs, dec map[pcommon.TraceID]decision, rt route) (plog.Logs, []*chunk) {
	fwd := newLogChunk(pcommon.TraceID{})
	chunks := make(map[pcommon.TraceID]*chunk, len(dec))
	var order []*chunk
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				c := fwd
				if id := lr.TraceID(); dec[id].holds() {
					if c = chunks[id]; c == nil {
						c = newLogChunk(id)
						c.route = rt
						chunks[id] = c
						order = append(order, c)
					}
				}
				c.addRecord(i, rl, j, sl, lr, c != fwd)
			}
		}
	}
	return fwd.ld, order
}

// logPart is the log records side of a chunk.
type logPart struct {
	ld      plog.Logs
	records []plog.LogRecord // the copies, for the adapter
	count   int

	srcRL, srcSL int
	rl           plog.ResourceLogs
	sl           plog.ScopeLogs
}

func newLogChunk(id pcommon.TraceID) *chunk {
	return &chunk{id: id, isLogs: true, logPart: logPart{ld: plog.NewLogs(), srcRL: -1, srcSL: -1}}
}

// addRecord copies lr (from resource i, scope j of the source) into the
// chunk, copying the resource and scope once per run of records sharing them.
func (c *chunk) addRecord(i int, rl plog.ResourceLogs, j int, sl plog.ScopeLogs, lr plog.LogRecord, keepRef bool) {
	if c.srcRL != i {
		c.rl = c.ld.ResourceLogs().AppendEmpty()
		rl.Resource().CopyTo(c.rl.Resource())
		c.rl.SetSchemaUrl(rl.SchemaUrl())
		c.srcRL, c.srcSL = i, -1
	}
	if c.srcSL != j {
		c.sl = c.rl.ScopeLogs().AppendEmpty()
		sl.Scope().CopyTo(c.sl.Scope())
		c.sl.SetSchemaUrl(sl.SchemaUrl())
		c.srcSL = j
	}
	dst := c.sl.LogRecords().AppendEmpty()
	lr.CopyTo(dst)
	c.count++
	if keepRef && adapter.IsGenAIEvent(dst) {
		c.records = append(c.records, dst)
	}
}

// ingestLogs adds a log chunk to its held trace (the loop's side of
// ConsumeLogs).
func (t *heldTrace) ingestLogs(c *chunk) {
	t.logParts = append(t.logParts, logPartHeld{ld: c.ld, route: c.route, count: c.count, key: c.key})
	t.records = append(t.records, c.records...)
	t.logCount += c.count
}

// forwardLogs hands on a released trace's held log records, each through
// the logs pipeline it came in through, with the results as log records
// appended to the first (the trace's first held records' pipeline, else
// the first logs pipeline). results may be empty.
func (p *evalProcessor) forwardLogs(t *heldTrace, results plog.Logs, n int) {
	if len(t.logParts) == 0 && n == 0 {
		return
	}
	rls := logsByRoute(t.logParts)
	if n > 0 {
		if len(rls) == 0 {
			rls = append(rls, routedLogs{ld: plog.NewLogs()})
		}
		results.ResourceLogs().MoveAndAppendTo(rls[0].ld.ResourceLogs())
		rls[0].count += n
		p.tel.resultRecords.Add(context.Background(), int64(n))
	}
	if t.logCount > 0 {
		p.tel.logRecordsReleased.Add(context.Background(), int64(t.logCount))
	}
	for _, rl := range rls {
		p.fwd.pushLogs(rl.route, rl.ld, rl.count, rl.keys)
	}
	t.logParts, t.records, t.logCount = nil, nil, 0
}

// resultLogsOn says whether results are also emitted as log records.
func (p *evalProcessor) resultLogsOn() bool {
	return len(p.logsOut) > 0 && p.cfg.ResultLogRecords
}

// resultRecords builds the gen_ai.evaluation.result log records of a
// scored trace's results, under the evaluated spans' resources.
func resultRecords(rep engine.Report, refs []adapter.SpanRef, ts pcommon.Timestamp) (plog.Logs, int) {
	ld := plog.NewLogs()
	n := 0
	var lastRS ptrace.ResourceSpans
	var sl plog.ScopeLogs
	for i := range rep.Evaluations {
		ev := &rep.Evaluations[i]
		if annotator.ResultRecordCount(ev.Results) == 0 {
			continue
		}
		ref, ok := refOf(refs, ev.Case.SpanID)
		if !ok {
			continue
		}
		if n == 0 || ref.ResourceSpans != lastRS {
			rl := ld.ResourceLogs().AppendEmpty()
			ref.Resource().CopyTo(rl.Resource())
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(scopeName)
			lastRS = ref.ResourceSpans
		}
		before := sl.LogRecords().Len()
		annotator.AppendResultRecords(sl.LogRecords(), annotator.Target{
			TraceID: ev.Case.TraceID, SpanID: ev.Case.SpanID,
			ResponseID: annotator.ResponseIDOf(ref.Span.Attributes()),
			Case:       annotator.CaseInfo{AgentName: ev.Case.AgentName, Model: ev.Case.Model},
		}, ev.Results, ts)
		n += sl.LogRecords().Len() - before
	}
	return ld, n
}

func refOf(refs []adapter.SpanRef, id pcommon.SpanID) (adapter.SpanRef, bool) {
	for _, r := range refs {
		if r.Span.SpanID() == id {
			return r, true
		}
	}
	return adapter.SpanRef{}, false
}

// lateResultRecords turns a late judge result (a span of its own, child of
// the evaluated span; see engine.deliverLate) into result log records
// parented to the evaluated span.
func lateResultRecords(td ptrace.Traces, ts pcommon.Timestamp) (plog.Logs, int) {
	ld := plog.NewLogs()
	n := 0
	adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
		var results []evaluators.Result
		ref.Span.Attributes().Range(func(k string, v pcommon.Value) bool {
			name, ok := strings.CutSuffix(strings.TrimPrefix(k, annotator.AttrPrefix), ".status")
			if !ok || !strings.HasPrefix(k, annotator.AttrPrefix) {
				return true
			}
			r := evaluators.Result{Name: name, Status: evaluators.Status(v.Str())}
			attrs := ref.Span.Attributes()
			if s, ok := attrs.Get(annotator.ScoreKey(name)); ok {
				r.Score = s.Double()
			}
			if s, ok := attrs.Get(annotator.ReasonKey(name)); ok {
				r.Reason = s.Str()
			}
			results = append(results, r)
			return true
		})
		if annotator.ResultRecordCount(results) == 0 {
			return
		}
		rl := ld.ResourceLogs().AppendEmpty()
		ref.Resource().CopyTo(rl.Resource())
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(scopeName)
		annotator.AppendResultRecords(sl.LogRecords(), annotator.Target{
			TraceID: ref.Span.TraceID(), SpanID: ref.Span.ParentSpanID(),
			Case: annotator.CaseInfoOf(ref.Span),
		}, results, ts)
		n += sl.LogRecords().Len()
	})
	return ld, n
}
