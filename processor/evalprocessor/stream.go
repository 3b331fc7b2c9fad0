package evalprocessor

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// Stream mode (docs/contract.md §26): every span and log record goes on in
// the call that brought it, unchanged. Of the GenAI traces the processor
// keeps only what their cases read (streamkept.go), holds that by the same
// rules and in the same held set as hold mode (wait, max_hold,
// max_trace_spans, max_traces), and scores it with the same workers and
// engine. What differs is where the results go: one result span per
// evaluated span, its child in the same trace, and the result log records.

// keepFunc extracts what stream mode keeps of a request (keepSpans,
// keepLogs).
type keepFunc[B pdata] func(B, map[pcommon.TraceID]decision, route) []*chunk

// consumeStream is stream mode's consume call: b goes on through route rt
// as it came, and what the cases of its GenAI traces read is kept. When
// the next consumer refuses b, nothing of it is kept (the sender retries
// it; a span kept twice would be scored once anyway).
func consumeStream[B pdata, I any](ctx context.Context, p *evalProcessor, in *ingestPath[B, I], keep keepFunc[B], b B, rt route) error {
	p.lifeMu.RLock()
	if !p.running {
		p.lifeMu.RUnlock()
		return p.forwardSync(ctx, in.send(ctx, rt, b))
	}
	r := routeItems(p.held, in, b)
	add(ctx, in.invalid, r.invalid)
	p.refreshLate(r.lateIDs)
	var chunks []*chunk
	if r.held > 0 {
		// Before b goes on: the next consumer may change it.
		chunks = keep(b, r.dec, rt)
		// With storage, persisted before anything goes on (durable_kept.go).
		if err := p.persistKept(ctx, chunks); err != nil {
			p.takeBack(r.dec, nil)
			p.lifeMu.RUnlock()
			add(ctx, in.refused, in.count(b))
			return err
		}
	}
	if err := p.forwardSync(ctx, in.send(ctx, rt, b)); err != nil {
		if r.held > 0 {
			p.takeBack(r.dec, chunks)
		}
		p.lifeMu.RUnlock()
		return err
	}
	if len(chunks) > 0 {
		at := p.clk.now()
		packAll(chunks)
		p.in <- ingestMsg{chunks: chunks, at: at}
	}
	p.lifeMu.RUnlock()
	add(ctx, in.late, r.late)
	if in.newPartition != nil && r.started > 0 && p.partitions.recent(ctx, p.clk.now(), p.cfg.Wait) {
		in.newPartition.Add(ctx, int64(r.started))
	}
	return nil
}

// Result spans: what a result span is called and what it carries besides
// the evaluated span's results.
const (
	resultSpanName = "evaluation"
	attrAgentName  = "gen_ai.agent.name"
)

// resultSpans builds, for a scored trace, one result span per evaluated
// span: in its trace, its child, under its resource, named by
// eval.target.span_name, with gen_ai.agent.name and the eval.* attributes
// and gen_ai.evaluation.result events the engine wrote onto it, and
// eval.generated (never a case itself). They go through the route the
// evaluated span came in (origin).
func (p *evalProcessor) resultSpans(rep engine.Report, refs []adapter.SpanRef, origin func(adapter.SpanRef) any, start time.Time) []routedTraces {
	if len(rep.Evaluations) == 0 {
		return nil
	}
	startTS, endTS := pcommon.NewTimestampFromTime(start), pcommon.NewTimestampFromTime(time.Now())
	var out []routedTraces
	// per entry of out, the resource its last result span went under
	type resultScope struct {
		src ptrace.ResourceSpans
		ss  ptrace.ScopeSpans
	}
	var scopes []resultScope
	type target struct {
		id    pcommon.SpanID
		names []string
	}
	// One result span per evaluated span: a span may anchor an llm and an
	// agent case.
	var targets []target
	for i := range rep.Evaluations {
		ev := &rep.Evaluations[i]
		k := 0
		for k < len(targets) && targets[k].id != ev.Case.SpanID {
			k++
		}
		if k == len(targets) {
			targets = append(targets, target{id: ev.Case.SpanID})
		}
		for j := range ev.Results {
			targets[k].names = append(targets[k].names, ev.Results[j].Name)
		}
	}
	for _, tg := range targets {
		ref, ok := refOf(refs, tg.id)
		if !ok {
			continue
		}
		rt := route(0)
		if origin != nil {
			rt, _ = origin(ref).(route)
		}
		k := 0
		for k < len(out) && out[k].route != rt {
			k++
		}
		if k == len(out) {
			out = append(out, routedTraces{route: rt, data: ptrace.NewTraces()})
		}
		o := &out[k]
		if k >= len(scopes) {
			scopes = append(scopes, resultScope{})
		}
		sc := &scopes[k]
		if sc.src != ref.ResourceSpans {
			// evaluated spans under one resource share one copy of it
			rs := o.data.ResourceSpans().AppendEmpty()
			ref.Resource().CopyTo(rs.Resource())
			sc.ss = rs.ScopeSpans().AppendEmpty()
			sc.ss.Scope().SetName(scopeName)
			sc.src = ref.ResourceSpans
		}
		// The evaluated span is the processor's own (unpacked from what
		// was kept, or the watchdog's copy) and nothing reads it after
		// this: it becomes its result span in place, and moves. Copying
		// the results onto a new span cost a fifth of stream mode's CPU.
		agent := agentNameOf(rep, tg.id, ref)
		name := ref.Span.Name()
		sp := ref.Span
		toResultSpan(sp, tg.names)
		sp.SetSpanID(engine.NewSpanID())
		sp.SetParentSpanID(tg.id)
		sp.SetName(resultSpanName)
		sp.SetStartTimestamp(startTS)
		sp.SetEndTimestamp(endTS)
		attrs := sp.Attributes()
		attrs.PutStr(engine.AttrTargetSpanName, name)
		attrs.PutBool(adapter.AttrGenerated, true)
		if agent != "" {
			attrs.PutStr(attrAgentName, agent)
		}
		p.eng.RedactCopied(attrs, copiedKeys(attrs)...)
		sp.MoveTo(sc.ss.Spans().AppendEmpty())
		o.n++
	}
	return out
}

// agentNameOf is the agent name of the evaluated span: its case's, else
// the span's own attribute.
func agentNameOf(rep engine.Report, id pcommon.SpanID, ref adapter.SpanRef) string {
	for i := range rep.Evaluations {
		if c := rep.Evaluations[i].Case; c.SpanID == id && c.AgentName != "" {
			return c.AgentName
		}
	}
	if v, ok := ref.Span.Attributes().Get(attrAgentName); ok {
		return v.AsString()
	}
	return ""
}

// toResultSpan strips span down to what the engine wrote onto it for the
// evaluator instances names: their eval.<name>.* attributes, eval.failed
// and their gen_ai.evaluation.result events, so the result span carries
// exactly what hold mode leaves on the evaluated span; and the span's
// describing attributes (annotator.Describing, at most maxDescribing), so
// monitors group result spans by the evaluated span's attributes as in
// hold mode (docs/contract.md §26). Its ids, name and times are the
// caller's to set.
func toResultSpan(span ptrace.Span, names []string) {
	describing := 0
	span.Attributes().RemoveIf(func(k string, v pcommon.Value) bool {
		if k == annotator.AttrFailed || resultKeyOf(k, names) {
			return false
		}
		if describing < maxDescribing && annotator.Describing(k, v) {
			describing++
			return false
		}
		return true
	})
	span.Events().RemoveIf(func(ev ptrace.SpanEvent) bool {
		if ev.Name() != annotator.EventName {
			return true
		}
		n, ok := ev.Attributes().Get(annotator.EventEvalName)
		return !ok || !slices.Contains(names, n.Str())
	})
	span.Links().RemoveIf(func(ptrace.SpanLink) bool { return true })
	span.TraceState().FromRaw("")
	span.SetKind(ptrace.SpanKindInternal)
	span.Status().SetCode(ptrace.StatusCodeUnset)
	span.Status().SetMessage("")
	span.SetDroppedAttributesCount(0)
	span.SetDroppedEventsCount(0)
	span.SetDroppedLinksCount(0)
	span.SetFlags(0)
}

// copiedKeys is the string attributes of a result span that come from its
// evaluated span (its name, its describing attributes): redacted as §20
// says for text evalbridge writes.
func copiedKeys(attrs pcommon.Map) []string {
	keys := []string{engine.AttrTargetSpanName}
	for k, v := range attrs.All() {
		if v.Type() == pcommon.ValueTypeStr && !strings.HasPrefix(k, annotator.AttrPrefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// resultKeyOf says whether k is an eval.<name>.* key of one of names.
func resultKeyOf(k string, names []string) bool {
	const prefix = annotator.AttrPrefix
	if len(k) <= len(prefix) || k[:len(prefix)] != prefix {
		return false
	}
	rest := k[len(prefix):]
	for _, n := range names {
		if len(rest) > len(n) && rest[:len(n)] == n && rest[len(n)] == '.' {
			return true
		}
	}
	return false
}

// forwardStreamed ends a released stream-mode trace: its spans went on
// when they came; what goes now is its result spans (in its group, when g
// is set) and result records.
func (p *evalProcessor) forwardStreamed(t *heldTrace, g *group, reason string) {
	if reason != "" {
		p.tel.unscored(context.Background(), reason, t.spans)
	}
	p.tel.tracesHeld.Add(context.Background(), -1)
	p.keysWithResults(t, reason)
	p.forwardLogs(t, t.results, t.resultN)
	rts := t.resultSpans
	t.parts, t.kept, t.resultSpans = nil, nil, nil
	if g != nil {
		g.add(rts)
		return
	}
	for _, rt := range rts {
		p.fwd.pushTraces(rt)
	}
}
