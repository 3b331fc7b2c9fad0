package webhookexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func versioned(r evaluatorsResult, v string) evaluatorsResult {
	r.Version, r.EvaluatorType = v, "deterministic"
	return r
}

// TestMonitorWindowHoldsOneVersion: the first result of a new version
// starts a new window for its group, so old failures do not count against
// the new evaluator, and the notification names the version.
func TestMonitorWindowHoldsOneVersion(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	notes := r.observe(caseTraces("travel_agent", repeat(4, versioned(fail, "v1"))...))
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, "v1", notes[0].EvaluatorVersion)

	// v2's first results: a new window. 3 passes and 1 failure of v2 =
	// 0.75, resolved; counted with v1's four failures it would be 3/8.
	r.clock.Advance(time.Second)
	assert.Empty(t, r.observe(caseTraces("travel_agent", repeat(3, versioned(pass, "v2"))...)), "below min_cases in the new window")
	notes = r.observe(caseTraces("travel_agent", versioned(fail, "v2")))
	require.Len(t, notes, 1)
	assert.Equal(t, StateResolved, notes[0].State)
	assert.Equal(t, 4, notes[0].Cases)
	assert.Equal(t, 1, notes[0].Failed)
	assert.Equal(t, "v2", notes[0].EvaluatorVersion)
	assert.Len(t, notes[0].SampleTraceIDs, 1, "only v2's failure is a sample")

	// Another group keeps its own version and window.
	notes = r.observe(caseTraces("hotel_agent", repeat(4, versioned(fail, "v1"))...))
	require.Len(t, notes, 1)
	assert.Equal(t, "v1", notes[0].EvaluatorVersion)
	assert.Equal(t, 4, notes[0].Cases)
}

// TestMonitorWindowKeepsVersionlessResults: a result that names no version
// (a feedback record from a producer that sets none) is not of a new
// version: it joins the window instead of starting one, so producers that
// mix versioned and unversioned results of one evaluation do not keep the
// window below min_cases.
func TestMonitorWindowKeepsVersionlessResults(t *testing.T) {
	r := newMonitorRig(t, DefaultMaxGroups, "", passRateMonitor())
	assert.Empty(t, r.observe(caseTraces("travel_agent", versioned(fail, "v1"), versioned(fail, ""), versioned(fail, "v1"))))
	notes := r.observe(caseTraces("travel_agent", versioned(fail, "")))
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, 4, notes[0].Cases)
	assert.Equal(t, "v1", notes[0].EvaluatorVersion)
}

// TestAlertCarriesVersion: a §9 alert names the version of the result.
func TestAlertCarriesVersion(t *testing.T) {
	alerts := extractAlerts(agentTraces(versioned(failed("booking_flow", 0.2, 1, "wrong"), "sha256:0123456789ab"),
		versioned(passed("tool_error", 1, 1), "v9")), nil, "")
	require.Len(t, alerts, 1)
	assert.Equal(t, "sha256:0123456789ab", alerts[0].EvaluatorVersion)
}

// TestSlackAlertShowsVersion: the Slack message names the version too.
func TestSlackAlertShowsVersion(t *testing.T) {
	body, err := slackEncoder{}.encode(Payload{Alerts: []Alert{{Evaluator: "booking_flow", EvaluatorVersion: "v3", TraceID: "t"}}})
	require.NoError(t, err)
	assert.Contains(t, string(body), `*Version*\nv3`)
}
