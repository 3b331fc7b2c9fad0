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

// forwardLogs hands on a released trace's held log records, each through
// the logs pipeline it came in through, with the results as log records
// appended to the first (the trace's first held records' pipeline, else
// the first logs pipeline). results may be empty.
func (p *evalProcessor) forwardLogs(t *heldTrace, results plog.Logs, n int) {
	if len(t.logParts) == 0 && n == 0 {
		return
	}
	rls := byRoute[plog.Logs](t.logParts)
	if n > 0 {
		if len(rls) == 0 {
			rls = append(rls, routed[plog.Logs]{})
		}
		rls[0].merge(routed[plog.Logs]{data: results, n: n})
		p.tel.resultRecords.Add(context.Background(), int64(n))
	}
	if t.logCount > 0 {
		p.tel.logRecordsReleased.Add(context.Background(), int64(t.logCount))
	}
	for _, rl := range rls {
		p.fwd.pushLogs(rl)
	}
	t.logParts, t.records, t.logCount = nil, nil, 0
}

// resultLogsOn says whether results are also emitted as log records (the
// routes are fixed at Start).
func (p *evalProcessor) resultLogsOn() bool {
	return len(p.routes.logs) > 0 && p.cfg.ResultLogRecords
}

// resultRecords builds the gen_ai.evaluation.result log records of a
// scored trace's results, under the evaluated spans' resources. info, when
// set, masks the agent and model names the records copy from the case, as
// the engine does for the result events (§20; Engine.RedactInfo).
func resultRecords(rep engine.Report, refs []adapter.SpanRef, ts pcommon.Timestamp, info func(annotator.CaseInfo) annotator.CaseInfo) (plog.Logs, int) {
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
		ci := annotator.CaseInfo{AgentName: ev.Case.AgentName, Model: ev.Case.Model}
		if info != nil {
			ci = info(ci)
		}
		annotator.AppendResultRecords(sl.LogRecords(), annotator.Target{
			TraceID: ev.Case.TraceID, SpanID: ev.Case.SpanID,
			ResponseID: annotator.ResponseIDOf(ref.Span.Attributes()),
			Case:       ci,
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
// parented to the evaluated span. insts give each result its provenance
// (the span carries it only on the events of scored results).
func lateResultRecords(td ptrace.Traces, insts []*evaluators.Instance, ts pcommon.Timestamp) (plog.Logs, int) {
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
			for _, in := range insts {
				if in.Name == name {
					r = in.Stamp(r)
				}
			}
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
