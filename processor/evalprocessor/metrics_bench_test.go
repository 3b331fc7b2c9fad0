package evalprocessor

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/connector/evalmetricsconnector"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// BenchmarkEvalMetricsCostVsScoring measures, in the same run and loop,
// what scoring a trace costs (the engine with the quickstart's four
// deterministic evaluators on the semconv example trace, plus building its
// gen_ai.evaluation.result log records) and what the evalmetrics connector
// costs to count those records; both per result record, and their ratio
// (connector/scoring).
func BenchmarkEvalMetricsCostVsScoring(b *testing.B) {
	raw, err := os.ReadFile("../../examples/traces/travel-agent-semconv.json")
	require.NoError(b, err)
	tmpl, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(b, err)

	cfg := engine.NewDefaultConfig()
	cfg.Evaluators = []evaluators.Config{
		{Type: "tool_call_validity"}, {Type: "tool_error"}, {Type: "tool_efficiency"}, {Type: "tool_trajectory"},
	}
	eng, err := engine.New(&cfg, componenttest.NewNopTelemetrySettings())
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, eng.Shutdown(context.Background())) })

	conn, err := evalmetricsconnector.NewFactory().CreateLogsToMetrics(context.Background(),
		connectortest.NewNopSettings(evalmetricsconnector.Type), evalmetricsconnector.NewFactory().CreateDefaultConfig(),
		new(consumertest.MetricsSink))
	require.NoError(b, err)
	require.NoError(b, conn.Start(context.Background(), componenttest.NewNopHost()))
	b.Cleanup(func() { require.NoError(b, conn.Shutdown(context.Background())) })

	ctx := context.Background()
	var scoring, counting time.Duration
	records := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		td := ptrace.NewTraces()
		tmpl.CopyTo(td) // the processor scores its own copy
		start := time.Now()
		var refs []adapter.SpanRef
		adapter.ForEachSpan(td, func(r adapter.SpanRef) { refs = append(refs, r) })
		rep := eng.ScoreTrace(ctx, refs)
		ld, n := resultRecords(rep, refs, pcommon.NewTimestampFromTime(start), nil)
		mid := time.Now()
		if err := conn.ConsumeLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		scoring += mid.Sub(start)
		counting += end.Sub(mid)
		records += n
	}
	b.StopTimer()
	if records == 0 {
		b.Fatal("no result records")
	}
	b.ReportMetric(float64(records)/float64(b.N), "records/trace")
	b.ReportMetric(float64(scoring.Nanoseconds())/float64(records), "scoring-ns/record")
	b.ReportMetric(float64(counting.Nanoseconds())/float64(records), "evalmetrics-ns/record")
	b.ReportMetric(float64(counting)/float64(scoring), "evalmetrics/scoring")
}
