package webhookexporter

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

func benchMonitors(b *testing.B, maxGroups int) *monitors {
	b.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.MaxGroups = maxGroups
	cfg.Monitors = []MonitorConfig{{Name: "flow_rate", Evaluator: "booking_flow",
		GroupBy: []string{"service.name", "gen_ai.agent.name"}, Window: 15 * time.Minute, MinCases: 20,
		PassRateBelow: ptr(0.5), Renotify: time.Hour}} // 3 in 4 pass: no notification, the steady state
	set := exportertest.NewNopSettings(Type)
	set.Logger = zap.NewNop()
	ms, err := newMonitors(cfg, set, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	return ms
}

// spreadTraces is n annotated agent spans over groups agents, one in four
// failed.
func spreadTraces(n, groups int) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := range n {
		r := pass
		if i%4 == 0 {
			r = fail
		}
		caseTraces(fmt.Sprintf("agent_%d", i%groups), r).ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	return td
}

// BenchmarkMonitorBytesPerGroup reports the heap held per tracked group
// (window buckets, samples, key and map entry), with 1000 groups.
func BenchmarkMonitorBytesPerGroup(b *testing.B) {
	const groups = 1000
	var perGroup float64
	for range b.N {
		b.StopTimer()
		ms := benchMonitors(b, groups)
		td := spreadTraces(groups, groups)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		ms.observe(td)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n := len(ms.list[0].groups); n != groups {
			b.Fatalf("%d groups tracked, want %d", n, groups)
		}
		perGroup = float64(after.HeapAlloc-before.HeapAlloc) / groups
		runtime.KeepAlive(td)
		runtime.KeepAlive(ms)
	}
	b.ReportMetric(perGroup, "bytes/group")
}

// BenchmarkMonitorUpdateVsScoring measures, in the same run, the cost of
// scoring one typical case (the baseline: a tool_correctness and a
// tool_error instance on a four-call agent run, as the engine calls them)
// and the cost per scored case of updating one monitor (100 groups,
// batches of 100 cases, evaluation of the touched groups included).
func BenchmarkMonitorUpdateVsScoring(b *testing.B) {
	insts, err := evaluators.Build([]evaluators.Config{
		{Type: "tool_correctness", Options: map[string]any{"mode": "names_and_args"}},
		{Type: "tool_error"},
	}, evaluators.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"origin": "JFK", "destination": "CDG"}
	c := &adapter.Case{
		Level: adapter.LevelAgent,
		ToolCalls: []adapter.ToolCall{
			{Name: "search_flights", Arguments: args, HasResult: true, Result: `{"flights": ["AF006"]}`},
			{Name: "book_flight", Arguments: map[string]any{"flight": "AF006"}, HasResult: true, Result: `{"booking": "F1"}`},
			{Name: "book_hotel", Arguments: map[string]any{"city": "Paris", "nights": 5.0}, HasResult: true, Result: `{"error": "sold out"}`},
			{Name: "book_hotel", Arguments: map[string]any{"city": "Paris", "nights": 5.0}, HasResult: true, Result: `{"booking": "H1"}`},
		},
		Expected: adapter.Expectations{HasToolCalls: true, ToolCalls: []adapter.ExpectedCall{
			{Name: "search_flights", Arguments: args, HasArguments: true},
			{Name: "book_flight"}, {Name: "book_hotel"},
		}},
	}
	ctx := context.Background()
	for _, in := range insts {
		if r := in.Evaluate(ctx, c); r.Status == evaluators.StatusError || r.Status == evaluators.StatusSkipped {
			b.Fatalf("%s: %s %s", in.Name, r.Status, r.Reason)
		}
	}
	const batch = 100
	ms := benchMonitors(b, DefaultMaxGroups)
	td := spreadTraces(batch, 100)
	ms.observe(td) // groups exist: the steady state

	allocs := testing.AllocsPerRun(100, func() { ms.observe(td) }) / batch

	// The two are interleaved so that both see the same load on a shared
	// machine; the ratio is what this benchmark is for.
	var scoring, monitoring time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		for _, in := range insts {
			in.Evaluate(ctx, c)
		}
		t1 := time.Now()
		ms.observe(td)
		monitoring += time.Since(t1)
		scoring += t1.Sub(t0)
	}
	b.StopTimer()
	perScore := float64(scoring.Nanoseconds()) / float64(b.N)
	perCase := float64(monitoring.Nanoseconds()) / float64(b.N*batch)
	b.ReportMetric(perScore, "ns/scored_case")
	b.ReportMetric(perCase, "ns/monitor_update")
	b.ReportMetric(perCase/perScore, "monitor/scoring")
	b.ReportMetric(allocs, "allocs/monitor_update")
}
