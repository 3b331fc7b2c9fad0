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
	EventName        = "gen_ai.evaluation.result"
	EventEvalName    = "gen_ai.evaluation.name"
	EventScoreValue  = "gen_ai.evaluation.score.value"
	EventScoreLabel  = "gen_ai.evaluation.score.label"
	EventExplanation = "gen_ai.evaluation.explanation"
	AttrResponseID   = "gen_ai.response.id"
	// AttrAgentName and AttrRequestModel are copied from the case onto its
	// result events and records, so metrics can be cut by agent and model
	// (docs/contract.md §18).
	AttrAgentName    = "gen_ai.agent.name"
	AttrRequestModel = "gen_ai.request.model"

	// MaxReasonBytes bounds `eval.<name>.reason`.
	MaxReasonBytes = 1024
)

// Attribute keys of one evaluator instance.
func ScoreKey(name string) string     { return AttrPrefix + name + ".score" }
func PassedKey(name string) string    { return AttrPrefix + name + ".passed" }
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
		passed: PassedKey(name), threshold: ThresholdKey(name)}
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
		m.PutStr(AttrAgentName, c.AgentName)
	}
	if c.Model != "" {
		m.PutStr(AttrRequestModel, c.Model)
	}
}

// CaseInfoOf reads back the case info that AnnotateCase wrote on span's
// gen_ai.evaluation.result events (a late result's span has no case).
func CaseInfoOf(span ptrace.Span) CaseInfo {
	var c CaseInfo
	evs := span.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if ev.Name() != EventName {
			continue
		}
		if v, ok := ev.Attributes().Get(AttrAgentName); ok {
			c.AgentName = v.AsString()
		}
		if v, ok := ev.Attributes().Get(AttrRequestModel); ok {
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
	if v, ok := attrs.Get(AttrResponseID); ok {
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
			attrs.PutStr(k.reason, Truncate(r.Reason, MaxReasonBytes))
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
		ev.SetName(EventName)
		ev.SetTimestamp(ts)
		ea := ev.Attributes()
		n := 3 + info.n()
		if r.Reason != "" {
			n++
		}
		if hasResponseID {
			n++
		}
		ea.EnsureCapacity(n)
		ea.PutStr(EventEvalName, r.Name)
		ea.PutDouble(EventScoreValue, r.Score)
		if r.Status == evaluators.StatusPassed {
			ea.PutStr(EventScoreLabel, "pass")
		} else {
			ea.PutStr(EventScoreLabel, "fail")
		}
		if r.Reason != "" {
			ea.PutStr(EventExplanation, Truncate(r.Reason, MaxReasonBytes))
		}
		if hasResponseID {
			ea.PutStr(AttrResponseID, responseID)
		}
		info.put(ea)
	}
	if len(failed) > 0 {
		addFailed(attrs, failed)
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
	have := make(map[string]bool, s.Len())
	for i := 0; i < s.Len(); i++ {
		have[s.At(i).AsString()] = true
	}
	for _, n := range names {
		if !have[n] {
			s.AppendEmpty().SetStr(n)
			have[n] = true
		}
	}
}

// Truncate cuts s to at most max bytes without splitting a UTF-8 sequence.
// It is kept for callers of this package; the rule is textutil.Truncate.
func Truncate(s string, max int) string { return textutil.Truncate(s, max) }
