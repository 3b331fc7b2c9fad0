package annotator

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/evalbridge/evalbridge/evaluators"
)

// attrErrorType is set on a result record whose evaluation failed to run.
const attrErrorType = "error.type"

// Target is the evaluated span a result record is parented to.
type Target struct {
	TraceID    pcommon.TraceID
	SpanID     pcommon.SpanID
	ResponseID string // gen_ai.response.id, when the span has one
	// Case is the case's agent name and model, written when set.
	Case CaseInfo
}

// ResultRecordCount is how many records AppendResultRecords writes for
// results: one per result that passed, failed, errored or timed out
// (skipped results have nothing to say to a backend).
func ResultRecordCount(results []evaluators.Result) int {
	n := 0
	for i := range results {
		if results[i].Status != evaluators.StatusSkipped {
			n++
		}
	}
	return n
}

// AppendResultRecords appends one `gen_ai.evaluation.result` log record per
// result (passed, failed, error, timeout) to dst: the GenAI conventions
// define the result as an event parented to the evaluated span, and span
// events are being deprecated in favour of log-based events.
func AppendResultRecords(dst plog.LogRecordSlice, target Target, results []evaluators.Result, ts pcommon.Timestamp) {
	dst.EnsureCapacity(dst.Len() + ResultRecordCount(results))
	for i := range results {
		r := &results[i]
		if r.Status == evaluators.StatusSkipped {
			continue
		}
		lr := dst.AppendEmpty()
		lr.SetEventName(eventName)
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		lr.SetTraceID(target.TraceID)
		lr.SetSpanID(target.SpanID)
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		a := lr.Attributes()
		a.EnsureCapacity(6 + target.Case.n() + provenanceAttrs(r))
		a.PutStr(eventEvalName, r.Name)
		switch {
		case r.Scored():
			a.PutDouble(eventScoreValue, r.Score)
			if r.Status == evaluators.StatusPassed {
				a.PutStr(eventScoreLabel, "pass")
			} else {
				a.PutStr(eventScoreLabel, "fail")
			}
		default: // error, timeout
			lr.SetSeverityNumber(plog.SeverityNumberWarn)
			a.PutStr(attrErrorType, string(r.Status))
		}
		if r.Reason != "" {
			a.PutStr(eventExplanation, truncate(r.Reason, maxReasonBytes))
		}
		if target.ResponseID != "" {
			a.PutStr(attrResponseID, target.ResponseID)
		}
		putProvenance(a, r)
		target.Case.put(a)
	}
}

// ResponseIDOf is the span's gen_ai.response.id, or "".
func ResponseIDOf(attrs pcommon.Map) string {
	if v, ok := attrs.Get(attrResponseID); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}
