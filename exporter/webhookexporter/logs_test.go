package webhookexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// resultLogs is one record per attrs map, all in one resource.
func resultLogs(records ...map[string]any) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "travel-svc")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i, attrs := range records {
		lr := lrs.AppendEmpty()
		if _, ok := attrs["event.name"]; !ok {
			lr.SetEventName("gen_ai.evaluation.result")
		}
		lr.SetTraceID(pcommon.TraceID{0xab, byte(i)})
		lr.SetSpanID(testSpanID)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(testEnd))
		require.NoError(nil, lr.Attributes().FromRaw(attrs))
	}
	return ld
}

func feedback(agent, label string) map[string]any {
	return map[string]any{"gen_ai.evaluation.name": "user_feedback", "gen_ai.evaluation.score.label": label,
		"gen_ai.evaluation.evaluator.type": "human", "gen_ai.agent.name": agent}
}

// TestLogRecordOutcomes: score.label through the labels mapping, else
// error.type (an error: no alert), else no case; records that are not
// results, or have no evaluation name, are not read.
func TestLogRecordOutcomes(t *testing.T) {
	labels := NewDefaultLabels()
	labels.Fail = append(labels.Fail, "Wrong")
	ld := resultLogs(
		feedback("a", "thumbs_down"),
		feedback("a", " WRONG "),
		feedback("a", "thumbs_up"),
		feedback("a", "meh"), // no case
		map[string]any{"gen_ai.evaluation.name": "task_done", "error.type": "timeout"},
		map[string]any{"gen_ai.evaluation.name": "task_done", "gen_ai.evaluation.score.label": "fail",
			"gen_ai.evaluation.score.value": 0.25, "gen_ai.evaluation.explanation": "missed a step",
			"gen_ai.evaluation.evaluator.version": "sha256:0123456789ab"},
		map[string]any{"event.name": "gen_ai.evaluation.result", "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.label": "bad"},
		map[string]any{"gen_ai.evaluation.score.label": "fail"}, // no name
	)
	other := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	other.Body().SetStr("user clicked")
	other.Attributes().PutStr("gen_ai.evaluation.score.label", "fail")

	results, n := resultRecords(ld)
	assert.Equal(t, 8, n, "the record that is not a result is not kept")
	td := newOutcomes(labels).resultSpans(results)
	alerts := extractAlerts(td, nil, "")
	var got []string
	for _, a := range alerts {
		got = append(got, a.Evaluator)
		assert.Equal(t, "travel-svc", a.ServiceName)
		assert.Equal(t, testSpanID.String(), a.SpanID)
		assert.Equal(t, testEnd.Format(time.RFC3339Nano), a.Time)
	}
	assert.Equal(t, []string{"user_feedback", "user_feedback", "task_done", "relevance"}, got)
	assert.Equal(t, "a", alerts[0].AgentName)
	td2 := alerts[2]
	require.NotNil(t, td2.Score)
	assert.Equal(t, 0.25, *td2.Score)
	assert.Equal(t, "missed a step", td2.Reason)
	assert.Equal(t, "sha256:0123456789ab", td2.EvaluatorVersion)
	assert.Nil(t, td2.Threshold, "a record has no threshold")

	require.Error(t, (&LabelsConfig{Pass: []string{"ok"}, Fail: []string{" OK"}}).Validate())
}

// TestMonitorOverLogRecords: a thumbs-down rate per agent, grouped by the
// record's attribute, then the resource's.
func TestMonitorOverLogRecords(t *testing.T) {
	mc := MonitorConfig{Name: "thumbs", Evaluator: "user_feedback", GroupBy: []string{"gen_ai.agent.name", "service.name"},
		Window: 10 * time.Minute, MinCases: 4, PassRateBelow: ptr(0.5)}
	r := newMonitorRig(t, DefaultMaxGroups, "", mc)
	out := newOutcomes(NewDefaultLabels())
	results, _ := resultRecords(resultLogs(feedback("a", "thumbs_down"), feedback("a", "bad"), feedback("a", "thumbs_up"),
		feedback("b", "thumbs_down"), feedback("a", "thumbs_down")))
	notes := r.observe(out.resultSpans(results))
	require.Len(t, notes, 1)
	assert.Equal(t, map[string]string{"gen_ai.agent.name": "a", "service.name": "travel-svc"}, notes[0].Group)
	assert.Equal(t, 4, notes[0].Cases)
	assert.Equal(t, 3, notes[0].Failed)
}
