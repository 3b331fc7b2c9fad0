package evalprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/connector/evalmetricsconnector"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// sampledTraceID is the id of test trace i (not limited to 255 like tid).
func sampledTraceID(i int) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], uint64(i+1)*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(id[8:], uint64(i+1))
	return id
}

// samplingBatch is n agent traces of 5 spans; the first failing of them
// fail tool_error.
func samplingBatch(n, failing int) ptrace.Traces {
	return perTrace(n, func(b *batch, i int) { agentTrace(b, 1, i < failing) })
}

// perTrace is what build puts in a batch for trace 1, for each of the n
// traces (trace 1 becoming sampledTraceID(i)).
func perTrace(n int, build func(b *batch, i int)) ptrace.Traces {
	out := ptrace.NewTraces()
	for i := 0; i < n; i++ {
		b := newBatch()
		build(b, i)
		id := sampledTraceID(i)
		adapter.ForEachSpan(b.td, func(r adapter.SpanRef) { r.Span.SetTraceID(id) })
		b.td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

// userMessages is one gen_ai.user.message record for each of the n traces
// (held with its trace).
func userMessages(n int) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := 0; i < n; i++ {
		lr := lrs.AppendEmpty()
		lr.SetEventName("gen_ai.user.message")
		lr.SetTraceID(sampledTraceID(i))
		lr.SetSpanID(sid(2))
		lr.Body().SetEmptyMap().PutStr("content", "book me a flight")
	}
	return ld
}

// recordsByTrace counts the log records the sink got, by event name and
// trace id.
func recordsByTrace(sink *consumertest.LogsSink, event string) map[pcommon.TraceID]int {
	out := map[pcommon.TraceID]int{}
	for _, ld := range sink.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			if lr.EventName() == event {
				out[lr.TraceID()]++
			}
		})
	}
	return out
}

// lateSpans is one more (non-GenAI) span for each of the n traces.
func lateSpans(n int) ptrace.Traces {
	return perTrace(n, func(b *batch, _ int) { b.plain(1, 9, 0).SetName("late") })
}

// spansByTrace counts the spans the sink got, by trace id.
func spansByTrace(sink *consumertest.TracesSink) map[pcommon.TraceID]int {
	out := map[pcommon.TraceID]int{}
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) { out[r.Span.TraceID()]++ })
	}
	return out
}

type samplingRun struct {
	h        *harness
	forward  map[pcommon.TraceID]int
	metrics  *consumertest.MetricsSink
	logsSink *consumertest.LogsSink
}

// runSampling scores n traces (failing of them failing) on one processor
// with sampling passed: 0.1, its result records going to a real evalmetrics
// connector, then sends a late span for every trace.
func runSampling(t *testing.T, n, failing int) *samplingRun {
	r := &samplingRun{metrics: new(consumertest.MetricsSink), logsSink: new(consumertest.LogsSink)}
	conn, err := evalmetricsconnector.NewFactory().CreateLogsToMetrics(context.Background(),
		connectortest.NewNopSettings(evalmetricsconnector.Type), evalmetricsconnector.NewFactory().CreateDefaultConfig(), r.metrics)
	require.NoError(t, err)
	require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))
	next, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		require.NoError(t, r.logsSink.ConsumeLogs(ctx, ld))
		return conn.ConsumeLogs(ctx, ld)
	})
	require.NoError(t, err)
	r.h = startHarness(t, func(c *Config) {
		c.Sampling = engine.SamplingConfig{Failed: 1, Passed: 0.1, Unscored: 1}
	}, nil, nil, next)
	r.h.consume(samplingBatch(n, failing))
	require.NoError(t, r.h.p.ConsumeLogs(context.Background(), userMessages(n)))
	r.h.clk.advance(2 * time.Second)
	require.Eventually(t, func() bool { return len(recordsByTrace(r.logsSink, "gen_ai.evaluation.result")) == n }, 60*time.Second, time.Millisecond,
		"want one result record per trace (%d)", n)
	require.Eventually(t, func() bool {
		return r.h.counter(metricTracesSampled) == int64(n)
	}, 60*time.Second, time.Millisecond)
	// Late spans: those of forwarded traces go on, those of dropped ones
	// are dropped with their trace.
	r.h.consume(lateSpans(n))
	r.h.shutdown(context.Background())
	require.NoError(t, conn.Shutdown(context.Background())) // flushes the metrics
	r.forward = spansByTrace(r.h.sink)
	return r
}

// With passed: 0.1, every failing trace is forwarded whole, about a tenth
// of the passing ones are (the same tenth on two processors: the decision
// hashes the trace id), each with its late span; the rest are dropped
// whole, late spans included; and the result records of every trace still
// go on, so evalmetrics counts all of them.
func TestSamplingForwardsFailingAndATenthOfPassing(t *testing.T) {
	const n, failing = 1000, 100
	a := runSampling(t, n, failing)
	b := runSampling(t, n, failing)

	for i := 0; i < failing; i++ {
		require.Equal(t, 6, a.forward[sampledTraceID(i)], "failing trace %d: 5 spans and the late one", i)
	}
	passing := 0
	for i := failing; i < n; i++ {
		got := a.forward[sampledTraceID(i)]
		require.Contains(t, []int{0, 6}, got, "passing trace %d: whole or nothing", i)
		if got == 6 {
			passing++
		}
		require.Equal(t, got, b.forward[sampledTraceID(i)], "trace %d: the two processors decided differently", i)
	}
	t.Logf("forwarded: %d/%d failing, %d/%d passing traces", failing, failing, passing, n-failing)

	// The records held with a trace go with it; its result records go on
	// whatever sampling decided.
	results, messages := recordsByTrace(a.logsSink, "gen_ai.evaluation.result"), recordsByTrace(a.logsSink, "gen_ai.user.message")
	for i := 0; i < n; i++ {
		id := sampledTraceID(i)
		require.Equal(t, 1, results[id], "trace %d: one result record", i)
		require.Equal(t, a.forward[id]/6, messages[id], "trace %d: its user message goes as its spans do", i)
	}
	require.InDelta(t, 0.1*(n-failing), passing, 0.04*(n-failing), "about a tenth of the passing traces")

	require.Equal(t, int64(failing+passing), a.h.counter(metricTracesSampled, "decision", decisionForwarded))
	require.Equal(t, int64(n-failing-passing), a.h.counter(metricTracesSampled, "decision", decisionDropped))

	// evalmetrics counted every result, forwarded or not.
	got := map[string]int64{}
	md := a.metrics.AllMetrics()
	require.NotEmpty(t, md)
	ms := md[len(md)-1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() != "gen_ai.evaluation.results" {
			continue
		}
		dps := ms.At(i).Sum().DataPoints()
		for j := 0; j < dps.Len(); j++ {
			l, _ := dps.At(j).Attributes().Get("gen_ai.evaluation.score.label")
			got[l.Str()] += dps.At(j).IntValue()
		}
	}
	require.Equal(t, map[string]int64{"pass": n - failing, "fail": failing}, got)
	t.Logf("gen_ai.evaluation.results: %v", got)
}

// The default forwards everything; the shares are checked.
func TestSamplingConfig(t *testing.T) {
	c := createDefaultConfig()
	require.Equal(t, engine.SamplingConfig{Failed: 1, Passed: 1, Unscored: 1}, c.Sampling)
	require.True(t, c.Sampling.All())
	c.Sampling.Passed = 1.5
	require.ErrorContains(t, c.Sampling.Validate(), "passed 1.5 must be within [0, 1]")
	c.Sampling.Passed = -0.1
	require.Error(t, c.Sampling.Validate())
}

// Result records carry the case's agent (and model when the case has one),
// the late judge answer's record too: evalmetrics cuts by them.
func TestResultRecordsCarryAgentLateOnesToo(t *testing.T) {
	srv, release := heldJudge(t, `{"score": 0.2, "reason": "unhelpful"}`)
	logs := new(consumertest.LogsSink)
	h := startHarness(t, func(c *Config) { withJudge(srv)(c); c.Timeout = 50 * time.Millisecond }, nil, nil, logs)
	b := newBatch()
	slowAgentTrace(b, 1)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5)
	close(release)
	h.waitSpans(6) // the late-result span
	require.Eventually(t, func() bool { return logs.LogRecordCount() >= 3 }, 10*time.Second, time.Millisecond)
	got := map[string]map[string]any{}
	for _, ld := range logs.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			a := lr.Attributes().AsRaw()
			key := a["gen_ai.evaluation.name"].(string) + "/" + fmt.Sprint(a["gen_ai.evaluation.score.label"], a["error.type"])
			got[key] = a
		})
	}
	for _, k := range []string{"tool_error/pass<nil>", "helpful/<nil>timeout", "helpful/fail<nil>"} {
		require.Contains(t, got, k)
		require.Equal(t, "slow_agent", got[k]["gen_ai.agent.name"], "%s: %v", k, got[k])
		require.Equal(t, "gpt-4o", got[k]["gen_ai.request.model"], "%s: %v", k, got[k])
	}
}
