package webhookexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

func ptr(f float64) *float64 { return &f }

// passRateMonitor is a monitor per agent: 10 minutes (10 s buckets), 4
// cases at least, firing below a pass rate of 0.5.
func passRateMonitor() MonitorConfig {
	return MonitorConfig{Name: "flow_rate", Evaluator: "booking_flow", GroupBy: []string{"gen_ai.agent.name"},
		Window: 10 * time.Minute, MinCases: 4, PassRateBelow: ptr(0.5), Renotify: 5 * time.Minute}
}

// caseTraces is one span per result, each its own trace, for agent; results
// are annotated by the real annotator.
func caseTraces(agent string, results ...evaluatorsResult) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-svc")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i, r := range results {
		span := spans.AppendEmpty()
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("%-12s%04d", agent, i))
		span.SetTraceID(tid)
		span.SetSpanID(testSpanID)
		span.SetName("invoke_agent " + agent)
		span.Attributes().PutStr("gen_ai.agent.name", agent)
		annotate(span, []evaluatorsResult{r}, pcommon.NewTimestampFromTime(testEnd))
	}
	return td
}

func repeat(n int, r evaluatorsResult) []evaluatorsResult {
	out := make([]evaluatorsResult, n)
	for i := range out {
		out[i] = r
	}
	return out
}

var (
	fail = failed("booking_flow", 0.2, 1, "wrong tool")
	pass = passed("booking_flow", 1, 1)
)

type monitorRig struct {
	clock *fakeClock
	ms    *monitors
	tel   *componenttest.Telemetry
}

func newMonitorRig(t *testing.T, maxGroups int, traceURL string, mcs ...MonitorConfig) *monitorRig {
	t.Helper()
	clock := newFakeClock()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(Type)
	set.TelemetrySettings.MeterProvider = tel.NewTelemetrySettings().MeterProvider
	set.Logger = zap.NewNop()
	cfg := createDefaultConfig().(*Config)
	cfg.Monitors, cfg.MaxGroups, cfg.TraceURL = mcs, maxGroups, traceURL
	ms, err := newMonitors(cfg, set, clock.Now)
	require.NoError(t, err)
	return &monitorRig{clock: clock, ms: ms, tel: tel}
}

func notesOf(ps []pending) []MonitorNotification {
	out := make([]MonitorNotification, len(ps))
	for i, p := range ps {
		out[i] = p.note
	}
	return out
}

func (r *monitorRig) observe(td ptrace.Traces) []MonitorNotification {
	return notesOf(r.ms.observe(td))
}
func (r *monitorRig) tick() []MonitorNotification { return notesOf(r.ms.evaluateAll()) }

// metric sums an int64 sum's points whose attributes include the pairs kv.
func (r *monitorRig) metric(t *testing.T, name string, kv ...string) int64 {
	t.Helper()
	return testkit.IntSumOrZero(t, r.tel, name, kv...)
}

func TestSlidingWindowMaths(t *testing.T) {
	width := time.Second // a 60 s window
	t0 := time.Date(2026, 3, 14, 16, 0, 0, 0, time.UTC)
	var w slidingWindow
	w.add(t0, width, false, 1, true)
	w.add(t0.Add(500*time.Millisecond), width, true, 0.25, true)
	w.add(t0.Add(30*time.Second), width, true, 0, false) // no score
	got := w.totals(t0.Add(30*time.Second), width)
	assert.Equal(t, windowTotals{cases: 3, failed: 2, scored: 2, scoreSum: 1.25, scoreSq: 1.0625}, got)
	assert.InDelta(t, 1.0/3, got.passRate(), 1e-9)
	require.NotNil(t, got.meanScore())
	assert.InDelta(t, 0.625, *got.meanScore(), 1e-9)

	// The first bucket (t0's second) is in the window until 59 s later.
	assert.Equal(t, 3, w.totals(t0.Add(59*time.Second+999*time.Millisecond), width).cases)
	assert.Equal(t, 1, w.totals(t0.Add(60*time.Second), width).cases, "t0's bucket slid out")
	assert.Equal(t, 0, w.totals(t0.Add(90*time.Second), width).cases, "all slid out")

	// A bucket reused after the ring wrapped starts from zero.
	w.add(t0.Add(60*time.Second), width, false, 1, true) // same slot as t0
	got = w.totals(t0.Add(60*time.Second), width)
	assert.Equal(t, windowTotals{cases: 2, failed: 1, scored: 1, scoreSum: 1, scoreSq: 1}, got)

	var empty windowTotals
	assert.Zero(t, empty.passRate())
	assert.Nil(t, empty.meanScore())
}

func TestMonitorStateMachine(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "https://traces.example.com/{trace_id}?span={span_id}", passRateMonitor())

	// Below min_cases: no verdict, whatever the rate.
	assert.Empty(t, r.observe(caseTraces("travel_agent", repeat(3, fail)...)))
	assert.EqualValues(t, 1, r.metric(t, "otelcol_exporter_webhook_monitor_evaluations", "verdict", "no_verdict"))

	// The fourth case gives a verdict: 0/4 passed < 0.5 -> firing.
	r.clock.Advance(time.Second)
	notes := r.observe(caseTraces("travel_agent", fail))
	require.Len(t, notes, 1)
	n := notes[0]
	firedAt := r.clock.Now()
	assert.Equal(t, MonitorNotification{
		Monitor: "flow_rate", State: StateFiring, Evaluator: "booking_flow",
		Group: map[string]string{"gen_ai.agent.name": "travel_agent"}, Window: "10m",
		Cases: 4, Failed: 4, PassRate: 0, MeanScore: ptr(0.2), Threshold: 0.5, Figure: "pass_rate",
		Since: firedAt.Format(time.RFC3339Nano), Time: firedAt.Format(time.RFC3339Nano),
		SampleTraceIDs:  n.SampleTraceIDs,
		SampleTraceURLs: n.SampleTraceURLs,
	}, n)
	// Samples: the latest failures first, at most maxSamples, with links.
	require.Len(t, n.SampleTraceIDs, 4)
	require.Len(t, n.SampleTraceURLs, 4)
	assert.Equal(t, "https://traces.example.com/"+n.SampleTraceIDs[0]+"?span="+testSpanID.String(), n.SampleTraceURLs[0])
	assert.EqualValues(t, 1, r.metric(t, "otelcol_exporter_webhook_monitor_state_changes", "state", StateFiring))

	// Still below: no repeat before renotify (5m)...
	r.clock.Advance(4 * time.Minute)
	assert.Empty(t, r.observe(caseTraces("travel_agent", fail)))
	assert.Empty(t, r.tick())
	// ...and one at renotify, keeping `since`.
	r.clock.Advance(time.Minute)
	notes = r.tick()
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, firedAt.Format(time.RFC3339Nano), notes[0].Since)
	assert.Equal(t, 5, notes[0].Cases)
	assert.Empty(t, r.tick(), "renotify at most every 5m")
	assert.EqualValues(t, 1, r.metric(t, "otelcol_exporter_webhook_monitor_renotifications"))

	// Passing cases bring the rate to 5/10 = 0.5, at the threshold: resolved.
	notes = r.observe(caseTraces("travel_agent", repeat(5, pass)...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateResolved, notes[0].State)
	assert.Equal(t, 10, notes[0].Cases)
	assert.Equal(t, 5, notes[0].Failed)
	assert.InDelta(t, 0.5, notes[0].PassRate, 1e-9)
	assert.Equal(t, firedAt.Format(time.RFC3339Nano), notes[0].Since, "since: when the incident began")
	assert.Equal(t, r.clock.Now().Format(time.RFC3339Nano), notes[0].Time)

	// Resolved behaves like ok: nothing more while passing, fires again on
	// a new slide below the threshold.
	assert.Empty(t, r.observe(caseTraces("travel_agent", pass)))
	assert.Empty(t, r.tick())
	notes = r.observe(caseTraces("travel_agent", repeat(8, fail)...)) // 6 of 19 pass
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, r.clock.Now().Format(time.RFC3339Nano), notes[0].Since)
	assert.Len(t, notes[0].SampleTraceIDs, maxSamples)
}

// With no data the state is kept: a firing group neither resolves nor
// renotifies while its window is below min_cases, and is not forgotten.
func TestMonitorNoDataKeepsState(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	require.Len(t, r.observe(caseTraces("travel_agent", repeat(4, fail)...)), 1)
	r.clock.Advance(11 * time.Minute) // the window is empty now
	assert.Empty(t, r.tick())
	r.clock.Advance(time.Hour)
	assert.Empty(t, r.tick(), "no renotify without a verdict")
	r.ms.list[0].mu.Lock()
	assert.Len(t, r.ms.list[0].groups, 1, "a firing group is kept")
	r.ms.list[0].mu.Unlock()
	// Traffic that passes resolves it.
	notes := r.observe(caseTraces("travel_agent", repeat(4, pass)...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateResolved, notes[0].State)
	assert.Empty(t, notes[0].SampleTraceIDs, "old failures are out of the window")
	// An ok group whose window empties is forgotten (its slot is free).
	r.clock.Advance(11 * time.Minute)
	assert.Empty(t, r.tick())
	r.ms.list[0].mu.Lock()
	assert.Empty(t, r.ms.list[0].groups)
	r.ms.list[0].mu.Unlock()
	assert.EqualValues(t, 0, r.metric(t, "otelcol_exporter_webhook_monitor_groups"))
}

// Failures that stay in the window fire once the passes before them have
// slid out: the tick evaluates without new traffic.
func TestMonitorFiresAsWindowSlides(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	assert.Empty(t, r.observe(caseTraces("a", repeat(10, pass)...)))
	r.clock.Advance(5 * time.Minute)
	assert.Empty(t, r.observe(caseTraces("a", repeat(5, fail)...)), "10 of 15 pass")
	r.clock.Advance(5 * time.Minute)
	notes := r.tick()
	require.Len(t, notes, 1, "the passes slid out: 0 of 5 pass")
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, 5, notes[0].Cases)
}

func TestMonitorMeanScoreAndGroups(t *testing.T) {
	mc := MonitorConfig{Name: "flow_mean", Evaluator: "booking_flow", GroupBy: []string{"service.name", "gen_ai.agent.name", "absent"},
		Window: time.Minute, MinCases: 2, MeanScoreBelow: ptr(0.7)}
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	// Failing by status, but the mean score decides: (1 + 0.5) / 2 >= 0.7.
	notes := r.observe(caseTraces("a", passed("booking_flow", 1, 1), failed("booking_flow", 0.5, 1, "")))
	assert.Empty(t, notes)
	// Group b: (0.2 + 0.2) / 2 < 0.7. Resource and span attributes both
	// group; a missing one is "".
	notes = r.observe(caseTraces("b", repeat(2, fail)...))
	require.Len(t, notes, 1)
	assert.Equal(t, map[string]string{"service.name": "travel-svc", "gen_ai.agent.name": "b", "absent": ""}, notes[0].Group)
	assert.Equal(t, "mean_score", notes[0].Figure)
	require.NotNil(t, notes[0].MeanScore)
	assert.InDelta(t, 0.2, *notes[0].MeanScore, 1e-9)
	assert.Equal(t, "1m", notes[0].Window)
}

// Skipped, error and timeout results, and spans without the evaluator, are
// no cases.
func TestMonitorCountsOnlyVerdicts(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	skipped := evaluatorsResult{Name: "booking_flow", Status: "skipped", Reason: "no expectation"}
	errored := evaluatorsResult{Name: "booking_flow", Status: "error", Reason: "boom"}
	other := failed("tool_error", 0, 1, "")
	assert.Empty(t, r.observe(caseTraces("a", skipped, errored, other, fail, fail, fail)))
	assert.EqualValues(t, 1, r.metric(t, "otelcol_exporter_webhook_monitor_evaluations", "verdict", "no_verdict"))
}

func TestMonitorMaxGroups(t *testing.T) {
	mc := passRateMonitor()
	mc.MaxGroups = 2 // overrides the exporter's
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	for _, agent := range []string{"a", "b", "c", "d"} {
		r.observe(caseTraces(agent, repeat(3, fail)...))
	}
	assert.EqualValues(t, 6, r.metric(t, "otelcol_exporter_webhook_monitor_cases_untracked"))
	assert.EqualValues(t, 2, r.metric(t, "otelcol_exporter_webhook_monitor_groups"))
	// Tracked groups go on; untracked ones never fire.
	notes := r.observe(caseTraces("a", fail))
	require.Len(t, notes, 1)
	assert.Empty(t, r.observe(caseTraces("c", repeat(5, fail)...)))
}

// A notification the queue refused is produced again by the next evaluation.
func TestMonitorUndo(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	ps := r.ms.observe(caseTraces("a", repeat(4, fail)...))
	require.Len(t, ps, 1)
	ps[0].undo()
	notes := r.tick()
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute: "15m", time.Hour: "1h", 90 * time.Minute: "1h30m", 2 * time.Second: "2s",
		90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s",
	} {
		assert.Equal(t, want, shortDuration(d))
	}
}

// min_cases omitted means 1: one case gives a verdict.
func TestMonitorMinCasesDefault(t *testing.T) {
	mc := passRateMonitor()
	mc.MinCases = 0
	require.NoError(t, mc.Validate())
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	notes := r.observe(caseTraces("a", fail))
	require.Len(t, notes, 1)
	assert.Equal(t, 1, notes[0].Cases)
}

// A huge group_by value is kept cut to maxGroupValue bytes: max_groups then
// bounds memory too.
func TestMonitorLongGroupValue(t *testing.T) {
	mc := passRateMonitor()
	mc.MinCases = 1
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	long := strings.Repeat("x", 10_000)
	notes := r.observe(caseTraces(long, fail))
	require.Len(t, notes, 1)
	assert.Len(t, notes[0].Group["gen_ai.agent.name"], maxGroupValue)
}
