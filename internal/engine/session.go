package engine

import (
	"context"
	"hash/fnv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// TurnSink receives the turns of each trace as it is scored: every agent
// case with a conversation id, and the span it came from (owned by the
// engine only during the call: copy what is kept). The processor and
// evalctl record them in a sessions.Store.
type TurnSink func(c *adapter.Case, ref adapter.SpanRef)

// TurnOriginSink is a TurnSink that also gets what the scoring call's
// ScoreOptions.Origin said of the turn's span (nil without one).
type TurnOriginSink func(c *adapter.Case, ref adapter.SpanRef, origin any)

// SetTurnSink sets where turns go. Without one, or without `case: session`
// evaluators, turns are not reported.
func (e *Engine) SetTurnSink(sink TurnSink) {
	if sink == nil {
		e.SetTurnOriginSink(nil)
		return
	}
	e.SetTurnOriginSink(func(c *adapter.Case, ref adapter.SpanRef, _ any) { sink(c, ref) })
}

// SetTurnOriginSink is SetTurnSink with the turn span's origin.
func (e *Engine) SetTurnOriginSink(sink TurnOriginSink) {
	e.turnMu.Lock()
	e.turnSink = sink
	e.turnMu.Unlock()
}

// HasSessions reports whether some evaluator has `case: session`.
func (e *Engine) HasSessions() bool { return e.hasSessions }

// MaxFieldBytes is the largest max_field_bytes of the configured judges, 0
// without judges: the bound a session store puts on each field of a turn.
func (e *Engine) MaxFieldBytes() int { return e.maxFieldBytes }

// recordTurns hands the trace's turns to the sink, before any evaluator
// runs: a turn is recorded however its trace's own scoring ends.
func (e *Engine) recordTurns(cases []adapter.Case, spans []adapter.SpanRef, originOf func(adapter.SpanRef) any) {
	if !e.hasSessions {
		return
	}
	e.turnMu.RLock()
	sink := e.turnSink
	e.turnMu.RUnlock()
	if sink == nil {
		return
	}
	for i := range cases {
		c := &cases[i]
		if c.Level != adapter.LevelAgent || c.ConversationID == "" {
			continue
		}
		for k := len(spans) - 1; k >= 0; k-- {
			if spans[k].Span.SpanID() == c.SpanID {
				var origin any
				if originOf != nil {
					origin = originOf(spans[k])
				}
				sink(c, spans[k], origin)
				break
			}
		}
	}
}

// SessionReport is what scoring one session produced.
type SessionReport struct {
	Report
	// Traces holds the evaluate_session span with the results written on
	// it, Ref points at it; both are zero when no session evaluator
	// selected the session (`when`, sample_rate).
	Traces ptrace.Traces
	Ref    adapter.SpanRef
}

// Scored reports whether the session got an evaluate_session span.
func (r *SessionReport) Scored() bool { return len(r.Evaluations) > 0 }

// ScoreSessionAsync runs the `case: session` evaluators on a session, the
// way ScoreTraceAsync runs the others on a trace's cases: `when` is checked
// against the evaluate_session span (its resource is the last turn's, its
// attributes gen_ai.conversation.id, gen_ai.agent.name,
// eval.session.turns), sample_rate decides by conversation id (the same
// choice on every collector), deterministic evaluators run before it
// returns, judge and remote evaluators in the background. done is called exactly once,
// with the span annotated. origin is what the late-result sink gets with a
// late result of the session (nil: none).
func (e *Engine) ScoreSessionAsync(ctx context.Context, sn *sessions.Snapshot, origin any, done func(SessionReport)) {
	start := time.Now()
	td, ref := sn.NewSpan(start)
	c := sn.Case(ref.Span.TraceID(), ref.Span.SpanID())
	var selected []*instance
	for j := range e.instances {
		in := &e.instances[j]
		if in.Level == adapter.LevelSession && in.sampledKey(sn.Key.Conversation) && e.matches(ctx, in, ref) {
			selected = append(selected, in)
		}
	}
	if len(selected) == 0 {
		done(SessionReport{})
		return
	}
	results := make([]evaluators.Result, len(selected))
	var originOf func(adapter.SpanRef) any
	if origin != nil {
		originOf = func(adapter.SpanRef) any { return origin }
	}
	tasks, _ := e.planCase(ctx, selected, &scoredCase{c: c, ref: ref, results: results}, nil, originOf)
	finish := func() {
		now := pcommon.NewTimestampFromTime(time.Now())
		ref.Span.SetEndTimestamp(now)
		e.redactResults(results)
		e.redactCopied(ref.Span.Attributes(), sessions.AttrConversationID, sessions.AttrAgentName)
		annotator.AnnotateCase(ref.Span, results, now, e.redactInfo(annotator.CaseInfo{AgentName: c.AgentName, Model: c.Model}))
		done(SessionReport{Report: Report{Evaluations: []Evaluation{{Case: c, Results: results}}}, Traces: td, Ref: ref})
	}
	if len(tasks) == 0 {
		finish()
		return
	}
	e.runJudgeTasks(ctx, tasks, finish)
}

// sampledKey is sampled for sessions: by conversation id, which every
// collector sees the same, where a trace id would be the new span's own.
func (in *instance) sampledKey(key string) bool {
	if in.sampleAll {
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64() < in.sampleBelow
}
