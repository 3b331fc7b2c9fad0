package webhookexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/internal/stats"
)

// A firing group that went quiet held its slot forever: with max_groups
// full, a new failing agent was untracked and never notified (issue 19,
// finding 9). A group with no case for a whole window now gives its slot
// to the new group, and a firing one says so.
func TestMonitorIdleGroupGivesItsSlot(t *testing.T) {
	mc := passRateMonitor() // 10 m window, min_cases 4, below 0.5
	mc.MaxGroups = 2
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	require.Len(t, r.observe(caseTraces("a", repeat(4, fail)...)), 1)
	r.clock.Advance(time.Minute)
	require.Len(t, r.observe(caseTraces("b", repeat(4, fail)...)), 1)

	// Within a's window, a new group is not tracked.
	r.clock.Advance(5 * time.Minute)
	assert.Empty(t, r.observe(caseTraces("c", repeat(4, fail)...)))
	assert.EqualValues(t, 4, r.metric(t, "otelcol_exporter_webhook_monitor_cases_untracked", "", ""))

	// A whole window after a's last case (b's is more recent): c takes a's
	// slot; a, firing, is forgotten in a notification of its own.
	r.clock.Advance(4 * time.Minute)
	notes := r.observe(caseTraces("c", repeat(4, fail)...))
	require.Len(t, notes, 2, "%+v", notes)
	assert.Equal(t, "a", notes[0].Group["gen_ai.agent.name"])
	assert.Equal(t, StateResolved, notes[0].State)
	assert.True(t, notes[0].Forgotten)
	assert.Equal(t, "c", notes[1].Group["gen_ai.agent.name"])
	assert.Equal(t, StateFiring, notes[1].State)
	assert.EqualValues(t, 1, r.metric(t, "otelcol_exporter_webhook_monitor_groups_evicted", "monitor", "flow_rate"))
	assert.EqualValues(t, 2, r.metric(t, "otelcol_exporter_webhook_monitor_groups", "", ""))
	assert.Contains(t, monitorSentence(notes[0]), "forgotten")

	// 24 h of silence: the oldest (b), then c, give their slots.
	r.clock.Advance(24 * time.Hour)
	notes = r.observe(caseTraces("d", repeat(4, fail)...))
	require.Len(t, notes, 2)
	assert.Equal(t, []string{"b", "d"}, []string{notes[0].Group["gen_ai.agent.name"], notes[1].Group["gen_ai.agent.name"]})
	notes = r.observe(caseTraces("e", repeat(4, fail)...))
	require.Len(t, notes, 2)
	assert.Equal(t, "c", notes[0].Group["gen_ai.agent.name"])
	assert.True(t, notes[0].Forgotten)
	assert.EqualValues(t, 3, r.metric(t, "otelcol_exporter_webhook_monitor_groups_evicted", "monitor", "flow_rate"))
	assert.Empty(t, r.observe(caseTraces("f", repeat(4, fail)...)), "d and e are active: f is untracked")
}

func wilsonMonitor() MonitorConfig {
	return MonitorConfig{Name: "flow_rate", Evaluator: "booking_flow", Window: 10 * time.Minute,
		MinCases: 1, PassRateBelow: ptr(0.8), Confidence: ptr(0.95)}
}

// Confidence 0.95: the group fires only when the Wilson interval's upper
// bound is below pass_rate_below, and resolves only when its lower bound is
// at or above it (docs/contract.md §13). The bounds are the textbook ones
// (z = 1.959963984540054).
func TestMonitorConfidenceWilson(t *testing.T) {
	assert.InDelta(t, 1.959963984540054, zScore(0.95), 1e-12)
	lo, hi := stats.Wilson(15, 20, zScore(0.95))
	assert.InDelta(t, 0.531299122381256, lo, 1e-12)
	assert.InDelta(t, 0.8881382985923343, hi, 1e-12)

	// Without confidence 15 of 20 (0.75) fires; with it, 0.75 on 20 cases
	// is no proof (upper bound 0.888).
	plain := wilsonMonitor()
	plain.Confidence = nil
	rp := newMonitorRig(t, DefaultMaxGroups, "", plain)
	require.Len(t, rp.observe(caseTraces("a", append(repeat(15, pass), repeat(5, fail)...)...)), 1)

	r := newMonitorRig(t, DefaultMaxGroups, "", wilsonMonitor())
	assert.Empty(t, r.observe(caseTraces("a", append(repeat(15, pass), repeat(5, fail)...)...)))
	assert.Positive(t, r.metric(t, "otelcol_exporter_webhook_monitor_evaluations", "verdict", "uncertain"))

	// 23 of 40 (0.575): upper bound 0.7149 < 0.8: fires.
	notes := r.observe(caseTraces("a", append(repeat(8, pass), repeat(12, fail)...)...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	require.NotNil(t, notes[0].Interval)
	assert.InDelta(t, 0.42195068541991076, notes[0].Interval.Low, 1e-12)
	assert.InDelta(t, 0.7149060744004961, notes[0].Interval.High, 1e-12)
	assert.Equal(t, 0.95, notes[0].Interval.Confidence)

	// A new window: 18 of 20 (0.9) is above 0.8, but its lower bound 0.699
	// is not: still firing.
	r.clock.Advance(11 * time.Minute)
	assert.Empty(t, r.observe(caseTraces("a", append(repeat(18, pass), repeat(2, fail)...)...)))
	// 38 of 40: lower bound 0.8350 >= 0.8: resolved.
	notes = r.observe(caseTraces("a", repeat(20, pass)...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateResolved, notes[0].State)
	assert.InDelta(t, 0.8349612263085903, notes[0].Interval.Low, 1e-12)
}

// For mean_score_below the interval is the normal one of the mean:
// mean ± z·s/√n, s the sample standard deviation.
func TestMonitorConfidenceMeanScore(t *testing.T) {
	lo, hi, ok := meanInterval(0.8, 0.2*0.2+0.6*0.6, 2, zScore(0.95))
	require.True(t, ok)
	assert.InDelta(t, 0.4-1.959963984540054*0.2, lo, 1e-12) // s = 0.2828, s/√2 = 0.2
	assert.InDelta(t, 0.4+1.959963984540054*0.2, hi, 1e-12)
	_, _, ok = meanInterval(0.5, 0.25, 1, 2)
	assert.False(t, ok, "one score has no spread")

	mc := MonitorConfig{Name: "mean", Evaluator: "booking_flow", Window: 10 * time.Minute,
		MeanScoreBelow: ptr(0.6), Confidence: ptr(0.95)}
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	low := failed("booking_flow", 0.2, 1, "")
	mid := passed("booking_flow", 0.6, 0.5)
	// Mean 0.4 on two scores: upper bound 0.792 >= 0.6, no verdict.
	assert.Empty(t, r.observe(caseTraces("a", low, mid)))
	// Mean 0.4 on ten: s = 0.2108, upper bound 0.4 + 1.96·0.0667 = 0.5307 < 0.6.
	notes := r.observe(caseTraces("a", append(repeat(4, low), repeat(4, mid)...)...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	assert.InDelta(t, 0.4+1.959963984540054*0.06666666666666667, notes[0].Interval.High, 1e-9)
}

func TestMonitorConfidenceValidation(t *testing.T) {
	for _, c := range []float64{0, 1, -0.5, 95} {
		mc := wilsonMonitor()
		mc.Confidence = ptr(c)
		err := mc.Validate()
		require.Error(t, err, "%g", c)
		assert.Contains(t, err.Error(), "confidence must be between 0 and 1")
	}
	mc := wilsonMonitor()
	require.NoError(t, mc.Validate())
}
