package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Human labels (contract §25) meet their trace's results on one tier-2
// collector: tier 1's kafka exporter (examples/fleet/tier1.yaml's settings)
// keys a trace's spans, and every log record carrying its trace id (a
// user's thumbs-down sent by the application, with or without a span id),
// by the trace id, so both land in the same partition number of the two
// topics; copartition_balancer gives the two partitions of a number to one
// collector (extension/copartitionbalancer's tests), whose eval writes the
// trace's results and whose evalmetrics joins them with the labels. This
// checks the first half with the real exporter and an in-memory Kafka; it
// runs without EVALBRIDGE_FLEET_TEST.
func TestLabelsLandInTheirTracesPartition(t *testing.T) {
	ctx := context.Background()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, tracesTopic, logsTopic))
	require.NoError(t, err)
	defer cluster.Close()

	fac := kafkaexporter.NewFactory()
	cfg := fac.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"brokers":                    cluster.ListenAddrs(),
		"traces":                     map[string]any{"topic": tracesTopic, "encoding": "otlp_proto"},
		"logs":                       map[string]any{"topic": logsTopic, "encoding": "otlp_proto"},
		"partition_traces_by_id":     true,
		"partition_logs_by_trace_id": true,
		"sending_queue":              map[string]any{"enabled": false},
	}).Unmarshal(cfg))
	set := exportertest.NewNopSettings(fac.Type())
	te, err := fac.CreateTraces(ctx, set, cfg)
	require.NoError(t, err)
	le, err := fac.CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, te.Shutdown(ctx)) }()
	require.NoError(t, le.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, le.Shutdown(ctx)) }()

	// One batch of each, as tier 1 batches: the spans of 40 traces, and a
	// label for each (every other one without a span id: the agent case).
	const n = 40
	td, ld := ptrace.NewTraces(), plog.NewLogs()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	records := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := 0; i < n; i++ {
		tid := newTraceID(7, i)
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(spanID(tid, 1))
		s.SetName("invoke_agent travel")
		lr := records.AppendEmpty()
		lr.SetEventName("gen_ai.evaluation.result")
		lr.SetTraceID(tid)
		if i%2 == 0 {
			lr.SetSpanID(spanID(tid, 1))
		}
		lr.Attributes().PutStr("gen_ai.evaluation.name", "task_done")
		lr.Attributes().PutStr("gen_ai.evaluation.evaluator.type", "human")
		lr.Attributes().PutStr("gen_ai.evaluation.score.label", "thumbs_down")
	}
	require.NoError(t, te.ConsumeTraces(ctx, td))
	require.NoError(t, le.ConsumeLogs(ctx, ld))

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(tracesTopic, logsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	spanPart, labelPart := map[pcommon.TraceID]int32{}, map[pcommon.TraceID]int32{}
	deadline := time.Now().Add(30 * time.Second)
	for (len(spanPart) < n || len(labelPart) < n) && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case tracesTopic:
				got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(r.Value)
				require.NoError(t, err)
				for _, rs := range got.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						for _, s := range ss.Spans().All() {
							spanPart[s.TraceID()] = r.Partition
						}
					}
				}
			case logsTopic:
				got, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(r.Value)
				require.NoError(t, err)
				for _, rl := range got.ResourceLogs().All() {
					for _, sl := range rl.ScopeLogs().All() {
						for _, lr := range sl.LogRecords().All() {
							labelPart[lr.TraceID()] = r.Partition
						}
					}
				}
			}
		})
	}
	require.Len(t, spanPart, n)
	require.Len(t, labelPart, n)
	used := map[int32]bool{}
	for tid, p := range spanPart {
		require.Equal(t, p, labelPart[tid], "trace %s: spans in partition %d, its label in %d", tid, p, labelPart[tid])
		used[p] = true
	}
	require.Greater(t, len(used), 1, "the traces spread over the partitions")
	t.Logf("%d traces over %d of %d partitions; every label in its trace's partition", n, len(used), partitions)
}
