package main

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// startScoring starts eng (judge clients need starting; a nil host has no
// extensions to offer, which is all evalctl can give) and reads the inputs
// (files, stdin or Jaeger): their documents and traces in order. `run` and
// `estimate` share it. On failure it says why on stderr (noTrace:
// the inputs hold no trace), leaves eng shut down and returns ok false; on
// success the caller shuts eng down.
func startScoring(ctx context.Context, eng *engine.Engine, sc *scoring, stdin io.Reader, stderr io.Writer, noTrace string) (docs []document, traces [][]adapter.SpanRef, ok bool) {
	if err := eng.Start(ctx, nil); err != nil {
		fmt.Fprintf(stderr, "%s: config %s: %v\n", sc.cmd, sc.configPath, err)
		return nil, nil, false
	}
	docs, err := readSource(ctx, sc.jaeger, sc.inputs, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", sc.cmd, err)
	} else if traces = tracesInOrder(docs); len(traces) == 0 {
		fmt.Fprintf(stderr, "%s: %s\n", sc.cmd, noTrace)
	} else {
		return docs, traces, true
	}
	_ = eng.Shutdown(ctx)
	return nil, nil, false
}

// scoreInputs scores the traces of the inputs (with their GenAI content
// log records joined), then the sessions found in them, counting every
// result in sum; it returns docs with the evaluate_session spans appended.
// `run` and `estimate` share it, so an estimate walks the inputs exactly
// as a run does.
func scoreInputs(ctx context.Context, eng *engine.Engine, cfg *engine.Config, docs []document, traces [][]adapter.SpanRef, sum *summary, stderr io.Writer) []document {
	withCase := map[pcommon.TraceID]bool{} // traces that gave a case (or a session turn)
	store := recordSessions(eng, cfg, func(id pcommon.TraceID) { withCase[id] = true })
	records := logsByTrace(docs)
	for _, spans := range traces {
		id := spans[0].Span.TraceID()
		if n := adapter.JoinEvents(spans, records[id]); n > 0 {
			fmt.Fprintf(stderr, "evalctl: warning: trace %s: %d GenAI content log records name no span of the trace; not read\n", id, n)
		}
		delete(records, id)
		tctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		rep := eng.ScoreTrace(tctx, spans)
		cancel()
		for _, p := range rep.Problems {
			fmt.Fprintf(stderr, "evalctl: warning: trace %s: %s\n", spans[0].Span.TraceID(), p)
		}
		sum.add(rep)
		if sum.observe != nil {
			sum.observe(spans, rep)
		}
		if len(rep.Evaluations) > 0 {
			withCase[id] = true
		}
	}
	sum.noCase = inputsWithoutCase(docs, withCase)

	// Sessions are scored once every input has been read: their
	// evaluate_session spans go to --out after the input traces.
	docs = append(docs, scoreSessions(ctx, eng, cfg, store, sum)...)

	for id, recs := range records {
		for _, lr := range recs {
			if adapter.IsGenAIEvent(lr) {
				fmt.Fprintf(stderr, "evalctl: warning: trace %s: GenAI content log records without any span of their trace; not read\n", id)
				break
			}
		}
	}
	return docs
}
