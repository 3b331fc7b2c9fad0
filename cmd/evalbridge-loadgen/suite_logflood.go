package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The log flood (issue 19, finding 4): a few traces whose LLM span gets
// thousands of GenAI content log records, beside the normal load. Joining
// records to spans was quadratic and ran outside the trace's deadline: 16k
// records held a worker for 2.56 s under `timeout: 200ms`. The promise: the
// flooded traces go on within wait + timeout (+ a margin), scored or not,
// and the normal load is not held back (the usual delay and loss checks).

// logFlood is a scenario's flood: traces × records per LLM span.
type logFlood struct {
	traces, records int
	sent            time.Time
	err             error
	// arrived: how long after the first span was sent every flooded span
	// was at the backend (0: not all arrived within 30 s); spans: how many.
	arrived time.Duration
	spans   int
}

// flood sends the traces (an agent span and an LLM span each) and then
// their records over OTLP/gRPC to endpoint; it returns when all are
// acknowledged.
func (f *logFlood) flood(ctx context.Context, endpoint string, s *sink) {
	conn, err := dial(endpoint)
	if err != nil {
		f.err = err
		return
	}
	defer conn.Close()
	tc, lc := ptraceotlp.NewGRPCClient(conn), plogotlp.NewGRPCClient(conn)
	f.sent = time.Now()
	for i := 0; i < f.traces; i++ {
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("logflood-%07d", i))
		agentID, llmID := pcommon.SpanID{1, byte(i)}, pcommon.SpanID{2, byte(i)}
		now := time.Now()
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "log-flood")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		agent := spans.AppendEmpty()
		agent.SetTraceID(tid)
		agent.SetSpanID(agentID)
		agent.SetName("invoke_agent flood_agent")
		agent.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
		agent.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		agent.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		agent.Attributes().PutStr("gen_ai.agent.name", "flood_agent")
		llm := spans.AppendEmpty()
		llm.SetTraceID(tid)
		llm.SetSpanID(llmID)
		llm.SetParentSpanID(agentID)
		llm.SetName("chat flood-model")
		llm.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-900 * time.Millisecond)))
		llm.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(-100 * time.Millisecond)))
		llm.Attributes().PutStr("gen_ai.operation.name", "chat")
		llm.Attributes().PutStr("gen_ai.request.model", "flood-model")
		if _, err := tc.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
			f.err = err
			return
		}
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "log-flood")
		recs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for k := 0; k < f.records; k++ {
			lr := recs.AppendEmpty()
			lr.SetTraceID(tid)
			lr.SetSpanID(llmID)
			lr.SetEventName("gen_ai.user.message")
			lr.SetTimestamp(pcommon.NewTimestampFromTime(now))
			lr.Body().SetEmptyMap().PutStr("content", fmt.Sprintf("message %d of a long conversation kept in one span", k))
		}
		if _, err := lc.Export(ctx, plogotlp.NewExportRequestFromLogs(ld)); err != nil {
			f.err = err
			return
		}
	}
	// The flooded traces' spans are the only ones without a loadgen.seq
	// attribute: wait for them at the backend.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		_, _, foreign, _, _ := s.snapshot()
		f.spans = foreign
		if foreign >= 2*f.traces {
			f.arrived = time.Since(f.sent)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// floodNote records the flood's figures on r and says them.
func floodNote(f *logFlood, s *sink, r *report) string {
	r.FloodSpans, r.FloodWant, r.FloodWait = f.spans, 2*f.traces, f.arrived
	if f.err != nil {
		r.FloodErr = f.err.Error()
		return "log flood: " + f.err.Error()
	}
	return fmt.Sprintf("log flood: %d traces × %d records; their %d of %d spans at the backend %s after they were sent (bound %s)",
		f.traces, f.records, f.spans, 2*f.traces, f.arrived.Round(time.Millisecond), r.FloodBound)
}

// logFloodConfig adds the logs pipeline the flood's records come in by
// (its records go to the debug exporter, which logs nothing at warn level).
func logFloodConfig(cfg string) string {
	cfg = strings.Replace(cfg, "\nexporters:\n", "\nexporters:\n  debug: {verbosity: basic}\n", 1)
	return cfg + "    logs:\n      receivers: [otlp]\n      processors: [eval]\n      exporters: [debug]\n"
}
