package annotator

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/evaluators"
)

func TestAppendResultRecords(t *testing.T) {
	results := []evaluators.Result{
		{Name: "flow", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "faith", Status: evaluators.StatusFailed, Score: 0.25, Threshold: 0.5, Reason: "claims X"},
		{Name: "judge", Status: evaluators.StatusTimeout, Reason: "judge timed out"},
		{Name: "rag", Status: evaluators.StatusSkipped, Reason: "no documents"},
	}
	tgt := Target{TraceID: pcommon.TraceID{1}, SpanID: pcommon.SpanID{2}, ResponseID: "chatcmpl-1"}
	ls := plog.NewLogRecordSlice()
	AppendResultRecords(ls, tgt, results, 42)
	if ls.Len() != 3 || ResultRecordCount(results) != 3 {
		t.Fatalf("%d records, want 3 (skipped has none)", ls.Len())
	}
	for i := 0; i < ls.Len(); i++ {
		lr := ls.At(i)
		if lr.EventName() != eventName || lr.TraceID() != tgt.TraceID || lr.SpanID() != tgt.SpanID || lr.Timestamp() != 42 {
			t.Errorf("record %d: event %q trace %v span %v", i, lr.EventName(), lr.TraceID(), lr.SpanID())
		}
		if v, _ := lr.Attributes().Get(attrResponseID); v.Str() != "chatcmpl-1" {
			t.Errorf("record %d: no response id", i)
		}
	}
	want := []map[string]any{
		{eventEvalName: "flow", eventScoreValue: 1.0, eventScoreLabel: "pass", attrResponseID: "chatcmpl-1"},
		{eventEvalName: "faith", eventScoreValue: 0.25, eventScoreLabel: "fail", eventExplanation: "claims X", attrResponseID: "chatcmpl-1"},
		{eventEvalName: "judge", attrErrorType: "timeout", eventExplanation: "judge timed out", attrResponseID: "chatcmpl-1"},
	}
	for i, w := range want {
		got := ls.At(i).Attributes().AsRaw()
		if len(got) != len(w) {
			t.Errorf("record %d: %v, want %v", i, got, w)
			continue
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("record %d: %s = %v, want %v", i, k, got[k], v)
			}
		}
	}
}

// The case's agent name and model go onto every result record and event
// (docs/contract.md §18), and only when the case has them.
func TestResultsCarryAgentAndModel(t *testing.T) {
	results := []evaluators.Result{
		{Name: "flow", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "judge", Status: evaluators.StatusError, Reason: "bad reply"},
	}
	info := CaseInfo{AgentName: "travel_agent", Model: "gpt-4o"}
	ls := plog.NewLogRecordSlice()
	AppendResultRecords(ls, Target{TraceID: pcommon.TraceID{1}, SpanID: pcommon.SpanID{2}, Case: info}, results, 1)
	for i := 0; i < ls.Len(); i++ {
		a := ls.At(i).Attributes().AsRaw()
		if a[attrAgentName] != "travel_agent" || a[attrRequestModel] != "gpt-4o" {
			t.Errorf("record %d: %v", i, a)
		}
	}
	span := ptrace.NewSpan()
	AnnotateCase(span, results, 1, CaseInfo{AgentName: "travel_agent"})
	if span.Events().Len() != 1 {
		t.Fatalf("%d events, want 1 (errors have no event)", span.Events().Len())
	}
	a := span.Events().At(0).Attributes().AsRaw()
	if a[attrAgentName] != "travel_agent" {
		t.Errorf("event: %v", a)
	}
	if _, ok := a[attrRequestModel]; ok {
		t.Errorf("event has a model the case did not have: %v", a)
	}
	// Without case info: neither attribute.
	ls = plog.NewLogRecordSlice()
	AppendResultRecords(ls, Target{}, results[:1], 1)
	if _, ok := ls.At(0).Attributes().Get(attrAgentName); ok {
		t.Error("agent name without a case")
	}
}

// Every result record and event carries its evaluator's version and type
// (docs/contract.md §24), an error's record too.
func TestResultsCarryProvenance(t *testing.T) {
	results := []evaluators.Result{
		{Name: "flow", Status: evaluators.StatusFailed, Score: 0, Threshold: 1, Version: "v3", EvaluatorType: "deterministic"},
		{Name: "judge", Status: evaluators.StatusError, Reason: "bad reply", Version: "sha256:0123456789ab", EvaluatorType: "llm_judge"},
	}
	ls := plog.NewLogRecordSlice()
	AppendResultRecords(ls, Target{}, results, 1)
	span := ptrace.NewSpan()
	Annotate(span, results, 1)
	if ls.Len() != 2 || span.Events().Len() != 1 {
		t.Fatalf("%d records, %d events", ls.Len(), span.Events().Len())
	}
	for i, r := range results {
		a := ls.At(i).Attributes()
		v, _ := a.Get(AttrEvaluatorVersion)
		ty, _ := a.Get(AttrEvaluatorType)
		if v.Str() != r.Version || ty.Str() != r.EvaluatorType {
			t.Errorf("record %d: version %q type %q", i, v.Str(), ty.Str())
		}
	}
	a := span.Events().At(0).Attributes()
	if v, _ := a.Get(AttrEvaluatorVersion); v.Str() != "v3" {
		t.Errorf("event version %q", v.Str())
	}
	if ty, _ := a.Get(AttrEvaluatorType); ty.Str() != "deterministic" {
		t.Errorf("event type %q", ty.Str())
	}
}
