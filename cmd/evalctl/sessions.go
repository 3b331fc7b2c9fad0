package main

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// recordSessions makes the engine record each trace's turns in a session
// store, when some evaluator has `case: session` (nil otherwise). Turns are
// ordered by their spans' start times, so the inputs' order does not matter.
// turn is told the trace of each turn recorded.
func recordSessions(eng *engine.Engine, cfg *engine.Config, turn func(pcommon.TraceID)) *sessions.Store {
	if !eng.HasSessions() {
		return nil
	}
	store := sessions.NewStore(cfg.Sessions, eng.MaxFieldBytes())
	eng.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		turn(c.TraceID)
		start := ref.Span.StartTimestamp().AsTime()
		store.Record(start, c, start, ref.Resource())
	})
	return store
}

// scoreSessions scores every session in the store, adds the results to the
// summary like any other case's, and returns the evaluate_session spans as
// documents for --out.
func scoreSessions(ctx context.Context, eng *engine.Engine, cfg *engine.Config, store *sessions.Store, sum *summary) []document {
	if store == nil {
		return nil
	}
	var out []document
	for _, sn := range store.Drain() {
		sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		var wg sync.WaitGroup
		wg.Add(1)
		var rep engine.SessionReport
		eng.ScoreSessionAsync(sctx, &sn, nil, func(r engine.SessionReport) { rep = r; wg.Done() })
		wg.Wait()
		cancel()
		if !rep.Scored() {
			continue
		}
		sum.add(rep.Report)
		out = append(out, document{source: "session " + sn.Key.Conversation, traces: rep.Traces})
	}
	return out
}
