// Package annotator writes evaluation results back onto spans as `eval.*`
// attributes and `gen_ai.evaluation.result` span events (docs/contract.md §4).
package annotator

import (
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

// Attribute and event names.
const (
	AttrPrefix       = "eval."
	AttrFailed       = "eval.failed"
	eventName        = "gen_ai.evaluation.result"
	eventEvalName    = "gen_ai.evaluation.name"
	eventScoreValue  = "gen_ai.evaluation.score.value"
	eventScoreLabel  = "gen_ai.evaluation.score.label"
	eventExplanation = "gen_ai.evaluation.explanation"
	attrResponseID   = "gen_ai.response.id"
	// AttrEvaluatorVersion and AttrEvaluatorType are every result's
	// provenance (docs/contract.md §24), on its events and records.
	AttrEvaluatorVersion = "gen_ai.evaluation.evaluator.version"
	AttrEvaluatorType    = "gen_ai.evaluation.evaluator.type"
	// attrAgentName and attrRequestModel are copied from the case onto its
	// result events and records, so metrics can be cut by agent and model
	// (docs/contract.md §18).
	attrAgentName    = "gen_ai.agent.name"
	attrRequestModel = "gen_ai.request.model"

	// maxReasonBytes bounds `eval.<name>.reason`.
	maxReasonBytes = 1024
)

// EventName and EventEvalName are the result event's name and its
// evaluator attribute, for code that reads results back (stream mode's
// result spans copy them from the evaluated span).
const (
	EventName     = eventName
	EventEvalName = eventEvalName
)

// AttrTargetSpanName names, on a span evalbridge made to carry results
// (a late result, a stream-mode result span), the span they are about: its
// parent.
const AttrTargetSpanName = "eval.target.span_name"

// Attribute keys of one evaluator instance.
func ScoreKey(name string) string     { return AttrPrefix + name + ".score" }
func passedKey(name string) string    { return AttrPrefix + name + ".passed" }
func StatusKey(name string) string    { return AttrPrefix + name + ".status" }
func ReasonKey(name string) string    { return AttrPrefix + name + ".reason" }
func ThresholdKey(name string) string { return AttrPrefix + name + ".threshold" }

// instanceKeys are the attribute keys of one evaluator instance.
type instanceKeys struct{ status, reason, score, passed, threshold string }

// keyCache holds the keys of the instance names seen (bounded: names
// beyond maxCachedNames get their keys built on every call).
var (
	keyCache     sync.Map // name -> *instanceKeys
	keyCacheSize atomic.Int32
)

const maxCachedNames = 1024

func keysOf(name string) *instanceKeys {
	if k, ok := keyCache.Load(name); ok {
		return k.(*instanceKeys)
	}
	k := &instanceKeys{status: StatusKey(name), reason: ReasonKey(name), score: ScoreKey(name),
		passed: passedKey(name), threshold: ThresholdKey(name)}
	if keyCacheSize.Load() < maxCachedNames {
		if prev, loaded := keyCache.LoadOrStore(strings.Clone(name), k); loaded {
			return prev.(*instanceKeys)
		}
		keyCacheSize.Add(1)
	}
	return k
}

// CaseInfo is what a result event or record carries of its case besides the
// result: the agent's name and the requested model, when the case has them.
type CaseInfo struct {
	AgentName string
	Model     string
}

func (c CaseInfo) n() int {
	n := 0
	if c.AgentName != "" {
		n++
	}
	if c.Model != "" {
		n++
	}
	return n
}

func (c CaseInfo) put(m pcommon.Map) {
	if c.AgentName != "" {
		m.PutStr(attrAgentName, c.AgentName)
	}
	if c.Model != "" {
		m.PutStr(attrRequestModel, c.Model)
	}
}

// CaseInfoOf reads back the case info that AnnotateCase wrote on span's
// gen_ai.evaluation.result events (a late result's span has no case).
func CaseInfoOf(span ptrace.Span) CaseInfo {
	var c CaseInfo
	evs := span.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if ev.Name() != eventName {
			continue
		}
		if v, ok := ev.Attributes().Get(attrAgentName); ok {
			c.AgentName = v.AsString()
		}
		if v, ok := ev.Attributes().Get(attrRequestModel); ok {
			c.Model = v.AsString()
		}
		break
	}
	return c
}

// Annotate writes results onto span. ts stamps the events. The span must be
// owned by the caller (a copy), never the pipeline's read-only input.
func Annotate(span ptrace.Span, results []evaluators.Result, ts pcommon.Timestamp) {
	AnnotateCase(span, results, ts, CaseInfo{})
}

// AnnotateCase is Annotate with the case's agent name and model on each
// gen_ai.evaluation.result event.
func AnnotateCase(span ptrace.Span, results []evaluators.Result, ts pcommon.Timestamp, info CaseInfo) {
	if len(results) == 0 {
		return
	}
	attrs := span.Attributes()
	responseID := ""
	if v, ok := attrs.Get(attrResponseID); ok {
		responseID = v.Str()
	}
	hasResponseID := responseID != ""
	// Room for what is written, reserved once (keys already there take
	// none, so this may reserve a little more than needed).
	added, events := 0, 0
	for i := range results {
		r := &results[i]
		added++
		if r.Reason != "" {
			added++
		}
		if r.Scored() {
			added += 3
			events++
			if r.Status == evaluators.StatusFailed {
				added++ // eval.failed, at most once
			}
		}
	}
	attrs.EnsureCapacity(attrs.Len() + added)
	evs := span.Events()
	evs.EnsureCapacity(evs.Len() + events)
	var failed []string
	for i := range results {
		r := &results[i]
		k := keysOf(r.Name)
		attrs.PutStr(k.status, string(r.Status))
		if r.Reason != "" {
			attrs.PutStr(k.reason, truncate(r.Reason, maxReasonBytes))
		}
		if !r.Scored() {
			continue
		}
		attrs.PutDouble(k.score, r.Score)
		attrs.PutBool(k.passed, r.Status == evaluators.StatusPassed)
		// Not in the contract's table, but an alert must say what the score fell
		// below, and the span is the only thing the webhook exporter sees.
		attrs.PutDouble(k.threshold, r.Threshold)
		if r.Status == evaluators.StatusFailed {
			failed = append(failed, r.Name)
		}

		ev := evs.AppendEmpty()
		ev.SetName(eventName)
		ev.SetTimestamp(ts)
		ea := ev.Attributes()
		n := 3 + info.n() + provenanceAttrs(r)
		if r.Reason != "" {
			n++
		}
		if hasResponseID {
			n++
		}
		ea.EnsureCapacity(n)
		ea.PutStr(eventEvalName, r.Name)
		ea.PutDouble(eventScoreValue, r.Score)
		if r.Status == evaluators.StatusPassed {
			ea.PutStr(eventScoreLabel, "pass")
		} else {
			ea.PutStr(eventScoreLabel, "fail")
		}
		if r.Reason != "" {
			ea.PutStr(eventExplanation, truncate(r.Reason, maxReasonBytes))
		}
		if hasResponseID {
			ea.PutStr(attrResponseID, responseID)
		}
		putProvenance(ea, r)
		info.put(ea)
	}
	if len(failed) > 0 {
		addFailed(attrs, failed)
	}
}

// provenanceAttrs is how many provenance attributes putProvenance writes.
func provenanceAttrs(r *evaluators.Result) int {
	n := 0
	if r.Version != "" {
		n++
	}
	if r.EvaluatorType != "" {
		n++
	}
	return n
}

// putProvenance writes the result's version and type (a result built
// outside an instance may have neither).
func putProvenance(m pcommon.Map, r *evaluators.Result) {
	if r.Version != "" {
		m.PutStr(AttrEvaluatorVersion, r.Version)
	}
	if r.EvaluatorType != "" {
		m.PutStr(AttrEvaluatorType, r.EvaluatorType)
	}
}

// addFailed merges names into `eval.failed`, keeping any names already there
// (a span can anchor both an llm and an agent case).
func addFailed(attrs pcommon.Map, names []string) {
	var s pcommon.Slice
	if v, ok := attrs.Get(AttrFailed); ok && v.Type() == pcommon.ValueTypeSlice {
		s = v.Slice()
	} else {
		s = attrs.PutEmptySlice(AttrFailed)
	}
	for _, n := range names {
		if !holds(s, n) {
			s.AppendEmpty().SetStr(n)
		}
	}
}

// holds says whether s has the name n (a linear search: a span has a few
// names, and no set is allocated for them).
func holds(s pcommon.Slice, n string) bool {
	for i := 0; i < s.Len(); i++ {
		if v := s.At(i); v.Type() == pcommon.ValueTypeStr && v.Str() == n || v.Type() != pcommon.ValueTypeStr && v.AsString() == n {
			return true
		}
	}
	return false
}

// truncate cuts s to at most max bytes without splitting a UTF-8 sequence.
// It is kept for callers of this package; the rule is textutil.Truncate.
func truncate(s string, max int) string { return textutil.Truncate(s, max) }
