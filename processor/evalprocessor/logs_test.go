package evalprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

// logsHarness is a harness with the processor in a logs pipeline too.
type logsHarness struct {
	*harness
	logs *consumertest.LogsSink
}

func newLogsHarness(t *testing.T, mut func(*Config)) *logsHarness {
	t.Helper()
	logs := new(consumertest.LogsSink)
	h := startHarness(t, func(c *Config) {
		// The output of each LLM call matched, and the agent's final text.
		c.Evaluators = []evaluators.Config{
			{Type: "regex", Name: "llm_answers", Case: "llm", Options: map[string]any{"pattern": "Lisbon"}},
			{Type: "tool_error"},
		}
		if mut != nil {
			mut(c)
		}
	}, nil, nil, logs)
	return &logsHarness{harness: h, logs: logs}
}

// waitRecords waits until the logs sink has n records.
func (h *logsHarness) waitRecords(n int) {
	h.t.Helper()
	waitCount(h.t, "log records", n, h.logs.LogRecordCount)
}

// contentSpans is an agent run whose chat span carries no content (the
// official instrumentations put it in log records).
func contentSpans(tr byte) ptrace.Traces {
	b := newBatch()
	b.agent(tr)
	b.span(tr, 2, 1, "chat gpt-4o", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
	b.tool(tr, 3, "search_flights", false)
	return b.td
}

// contentLogs are the chat span's content records, JS-instrumentation
// style (name in event.name, structured bodies), plus one application log
// record of the same trace and one of another trace.
func contentLogs(tr byte) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "travel-app")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	add := func(trace byte, span byte, name string, body map[string]any) {
		lr := lrs.AppendEmpty()
		lr.SetTraceID(tid(trace))
		lr.SetSpanID(sid(span))
		if name != "" {
			lr.Attributes().PutStr("event.name", name)
		}
		require.NoError(nil, lr.Body().FromRaw(body))
	}
	add(tr, 2, "gen_ai.user.message", map[string]any{"content": "Find a flight to Lisbon"})
	add(tr, 2, "gen_ai.choice", map[string]any{"index": int64(0), "finish_reason": "stop",
		"message": map[string]any{"role": "assistant", "content": "Booked TP 541 to Lisbon."}})
	add(tr, 3, "", map[string]any{"msg": "tool ran"}) // an application log of the held trace
	add(99, 7, "", map[string]any{"msg": "unrelated"})
	return ld
}

// Spans and their content records in either order, in separate requests:
// the LLM case is scored from the records' content, every record comes out
// unchanged, and each result is also a gen_ai.evaluation.result record
// parented to the evaluated span.
func TestLogsContentJoinedInEitherOrder(t *testing.T) {
	for _, logsFirst := range []bool{false, true} {
		h := newLogsHarness(t, nil)
		in := contentLogs(7)
		want := plog.NewLogs()
		in.CopyTo(want)
		if logsFirst {
			h.consumeLogs(in)
			h.consume(contentSpans(7))
		} else {
			h.consume(contentSpans(7))
			h.consumeLogs(in)
		}
		// The unrelated record went on at once; the others wait.
		assert.Equal(t, 1, h.logs.LogRecordCount(), "logsFirst=%v", logsFirst)
		assert.Equal(t, 0, h.sink.SpanCount())
		h.clk.advance(2 * time.Second)
		h.waitSpans(3)
		// 3 content/app records + 2 results on the chat span (regex, tool_error on the agent) ...
		require.Eventually(t, func() bool { return h.logs.LogRecordCount() >= 6 }, 5*time.Second, time.Millisecond)

		chat := spansOf(h.sink, 7)[2]
		assert.Equal(t, "passed", strAttr(chat, "eval.llm_answers.status"), "logsFirst=%v: the answer came from the gen_ai.choice record", logsFirst)

		var held, results []plog.LogRecord
		for _, ld := range h.logs.AllLogs() {
			adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
				if lr.EventName() == "gen_ai.evaluation.result" {
					results = append(results, lr)
				} else {
					held = append(held, lr)
				}
			})
		}
		// every input record, unchanged
		var orig []plog.LogRecord
		adapter.ForEachLogRecord(want, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) { orig = append(orig, lr) })
		require.Len(t, held, len(orig))
		for _, o := range orig {
			found := false
			for _, g := range held {
				if g.TraceID() == o.TraceID() && g.SpanID() == o.SpanID() && g.Body().AsRaw() != nil &&
					assert.ObjectsAreEqual(g.Body().AsRaw(), o.Body().AsRaw()) && g.Attributes().Equal(o.Attributes()) {
					found = true
				}
			}
			assert.True(t, found, "record %v not forwarded unchanged", o.Body().AsRaw())
		}
		byName := map[string]plog.LogRecord{}
		for _, r := range results {
			v, _ := r.Attributes().Get("gen_ai.evaluation.name")
			byName[v.Str()] = r
		}
		require.Contains(t, byName, "llm_answers")
		r := byName["llm_answers"]
		assert.Equal(t, tid(7), r.TraceID())
		assert.Equal(t, sid(2), r.SpanID())
		label, _ := r.Attributes().Get("gen_ai.evaluation.score.label")
		assert.Equal(t, "pass", label.Str())
		require.Contains(t, byName, "tool_error")
		assert.Equal(t, sid(1), byName["tool_error"].SpanID(), "the agent case's result is parented to the agent span")
		assert.Equal(t, int64(3), h.counter(metricLogRecordsHeld))
		assert.Equal(t, int64(3), h.counter(metricLogRecordsReleased))
	}
}

// A record of a trace that comes before the trace's first GenAI event in
// the same request is held with it, and counted as held (before: held but
// not counted).
func TestLogsRecordBeforeFirstEventHeldAndCounted(t *testing.T) {
	h := newLogsHarness(t, nil)
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	app := lrs.AppendEmpty()
	app.SetTraceID(tid(9))
	app.SetSpanID(sid(3))
	app.Body().SetStr("tool ran")
	contentLogsFor(9, 2, 1).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().MoveAndAppendTo(lrs)
	h.consumeLogs(ld)
	assert.Equal(t, 0, h.logs.LogRecordCount(), "both wait for their trace")
	assert.Equal(t, int64(2), h.counter(metricLogRecordsHeld))
	h.clk.advance(2 * time.Second)
	h.waitRecords(2)
	assert.Equal(t, int64(2), h.counter(metricLogRecordsReleased))
}

// A content record whose trace never shows up is forwarded after wait;
// one arriving after its trace was released is forwarded as late.
func TestLogsWithoutTraceAndLate(t *testing.T) {
	h := newLogsHarness(t, nil)
	h.consumeLogs(contentLogs(8))
	h.clk.advance(2 * time.Second)
	h.waitRecords(4)
	assert.Equal(t, 0, h.sink.SpanCount())

	// Trace 9 is scored and released; its records come late.
	h.consume(contentSpans(9))
	h.clk.advance(2 * time.Second)
	h.waitSpans(3)
	before := h.logs.LogRecordCount()
	h.consumeLogs(contentLogs(9))
	h.waitRecords(before + 4)
	assert.Equal(t, int64(2), h.counter(metricLogRecordsLate), "the two GenAI records of the released trace")
}

// Held records are forwarded at shutdown and on overflow, like spans.
func TestLogsForwardedOnShutdownAndOverflow(t *testing.T) {
	h := newLogsHarness(t, func(c *Config) { c.MaxTraces = 1 })
	h.consume(contentSpans(1))
	h.consumeLogs(contentLogs(1))
	h.consume(contentSpans(2)) // overflows trace 1: forwarded unscored with its records
	h.waitSpans(3)
	require.Eventually(t, func() bool { return h.logs.LogRecordCount() >= 4 }, 5*time.Second, time.Millisecond)
	h.consumeLogs(contentLogs(2))
	h.shutdown(context.Background())
	assert.Equal(t, 6, h.sink.SpanCount())
	records := 0
	for _, ld := range h.logs.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			if lr.EventName() != "gen_ai.evaluation.result" {
				records++
			}
		})
	}
	assert.Equal(t, 8, records, "every record of both traces, none dropped")
}

// result_log_records: false keeps the records but writes no results.
func TestResultLogRecordsOff(t *testing.T) {
	h := newLogsHarness(t, func(c *Config) { c.ResultLogRecords = false })
	h.consume(contentSpans(3))
	h.consumeLogs(contentLogs(3))
	h.clk.advance(2 * time.Second)
	h.waitSpans(3)
	h.waitRecords(4)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 3)[2], "eval.llm_answers.status"))
}

// A batch of application logs with nothing held goes on as it is: the
// same pdata, not a copy.
func TestLogsPassThroughZeroCopy(t *testing.T) {
	h := newLogsHarness(t, nil)
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("GET /health 200")
	lr.SetTraceID(pcommon.TraceID{1})
	ld.MarkReadOnly()
	h.consumeLogs(ld)
	require.Len(t, h.logs.AllLogs(), 1)
	assert.True(t, h.logs.AllLogs()[0].IsReadOnly(), "forwarded as it came")
}

// The traces and logs pipelines of one component id share one processor,
// started and shut down once.
func TestFactorySharesOneInstance(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Evaluators = toolErrorOnly()
	set := processortest.NewNopSettings(Type)
	tp, err := f.CreateTraces(context.Background(), set, cfg, new(consumertest.TracesSink))
	require.NoError(t, err)
	lp, err := f.CreateLogs(context.Background(), set, cfg, new(consumertest.LogsSink))
	require.NoError(t, err)
	require.Same(t, tp.(*tracesPipeline).sharedProcessor, lp.(*logsPipeline).sharedProcessor)
	host := componenttest.NewNopHost()
	require.NoError(t, tp.Start(context.Background(), host))
	require.NoError(t, lp.Start(context.Background(), host))
	require.NoError(t, tp.Shutdown(context.Background()))
	require.NoError(t, lp.Shutdown(context.Background()))

	// another config: another instance
	cfg2 := f.CreateDefaultConfig().(*Config)
	cfg2.Evaluators = toolErrorOnly()
	tp2, err := f.CreateTraces(context.Background(), set, cfg2, new(consumertest.TracesSink))
	require.NoError(t, err)
	require.NotSame(t, tp.(*tracesPipeline).sharedProcessor, tp2.(*tracesPipeline).sharedProcessor)
	require.NoError(t, tp2.Shutdown(context.Background()))
}
