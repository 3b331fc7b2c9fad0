package webhookexporter

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
)

// attrService names the resource attribute of Alert.ServiceName. The eval.*
// names come from the annotator that writes them (docs/contract.md §4).
const attrService = "service.name"

// The result event's names (docs/contract.md §4): the version of a result
// is read from the event of its evaluator.
const (
	resultEventName = "gen_ai.evaluation.result"
	attrEvalName    = "gen_ai.evaluation.name"
)

// agentNameKeys are read in order for Alert.AgentName.
var agentNameKeys = []string{"gen_ai.agent.name", "agent.name", "traceloop.entity.name"}

// Payload is the request body of format json, and the data that format
// template executes over.
type Payload struct {
	Alerts []Alert `json:"alerts"`
	// Suppressed counts failed evaluations that rate limiting folded into
	// this request instead of sending them one by one.
	Suppressed int `json:"suppressed"`
	// SuppressedByEvaluator is the digest of Suppressed: counts per
	// evaluator name. Present only when Suppressed > 0.
	SuppressedByEvaluator map[string]int `json:"suppressed_by_evaluator,omitempty"`
	// Monitors are monitor notifications (docs/contract.md §13). A request
	// of notifications only is {"monitors": [...]}; the sending queue's
	// batching, when enabled, can put both in one request.
	Monitors []MonitorNotification `json:"monitors,omitempty"`
}

// Alert is one failed evaluation on one span.
type Alert struct {
	TraceID     string `json:"trace_id"`
	SpanID      string `json:"span_id"`
	SpanName    string `json:"span_name"`
	ServiceName string `json:"service_name"`
	AgentName   string `json:"agent_name"`
	Evaluator   string `json:"evaluator"`
	// EvaluatorVersion is the version of the evaluator that gave the
	// result (docs/contract.md §24); "" when the result does not say.
	EvaluatorVersion string   `json:"evaluator_version"`
	Score            *float64 `json:"score"`
	Threshold        *float64 `json:"threshold"`
	Status           string   `json:"status"`
	Reason           string   `json:"reason"`
	// Time is the span's end time, RFC 3339 in UTC.
	Time     string `json:"time"`
	TraceURL string `json:"trace_url,omitempty"`
}

// extractAlerts returns one Alert per name in each span's `eval.failed`,
// restricted to allow when it is non-empty.
func extractAlerts(td ptrace.Traces, allow map[string]bool, traceURL string) []Alert {
	var out []Alert
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get(attrService); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				out = appendSpanAlerts(out, spans.At(k), service, allow, traceURL)
			}
		}
	}
	return out
}

func appendSpanAlerts(out []Alert, span ptrace.Span, service string, allow map[string]bool, traceURL string) []Alert {
	attrs := span.Attributes()
	v, ok := attrs.Get(annotator.AttrFailed)
	if !ok {
		return out
	}
	names := failedNames(v)
	if len(names) == 0 {
		return out
	}
	traceID := traceIDString(span.TraceID())
	evaluated, spanName := evaluatedSpan(span)
	spanID := spanIDString(evaluated)
	agent := ""
	for _, k := range agentNameKeys {
		if a, ok := attrs.Get(k); ok && a.AsString() != "" {
			agent = a.AsString()
			break
		}
	}
	end := span.EndTimestamp()
	if end == 0 {
		end = span.StartTimestamp()
	}
	ts := end.AsTime().UTC().Format(time.RFC3339Nano)
	link := ""
	if traceURL != "" {
		link = traceLink(traceURL, traceID, spanID)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] || (len(allow) > 0 && !allow[name]) {
			continue
		}
		seen[name] = true
		a := Alert{
			TraceID:          traceID,
			SpanID:           spanID,
			SpanName:         spanName,
			ServiceName:      service,
			AgentName:        agent,
			Evaluator:        name,
			EvaluatorVersion: resultVersion(span, name),
			Score:            doubleAttr(attrs, annotator.ScoreKey(name)),
			Threshold:        doubleAttr(attrs, annotator.ThresholdKey(name)),
			Status:           strAttr(attrs, annotator.StatusKey(name)),
			Reason:           strAttr(attrs, annotator.ReasonKey(name)),
			Time:             ts,
			TraceURL:         link,
		}
		if a.Status == "" {
			a.Status = "failed"
		}
		out = append(out, a)
	}
	return out
}

// traceLink fills trace_url's {trace_id} and {span_id} placeholders.
func traceLink(traceURL, traceID, spanID string) string {
	return strings.NewReplacer("{trace_id}", traceID, "{span_id}", spanID).Replace(traceURL)
}

// failedNames reads `eval.failed`: a string array, or leniently a single
// string (comma separated) when a span went through a lossy hop.
func failedNames(v pcommon.Value) []string {
	var names []string
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 0; i < s.Len(); i++ {
			if n := strings.TrimSpace(s.At(i).AsString()); n != "" {
				names = append(names, n)
			}
		}
	case pcommon.ValueTypeStr:
		for _, n := range strings.Split(v.Str(), ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

func doubleAttr(m pcommon.Map, key string) *float64 {
	v, ok := m.Get(key)
	if !ok {
		return nil
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	default:
		return nil
	}
	return &f
}

func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}

func traceIDString(id pcommon.TraceID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}

// evaluatedSpan is the id and name of the span span's results are about:
// span itself, or, for a span evalbridge made to carry them (stream mode's
// result spans, late results: eval.generated, a child of the evaluated
// span, named by eval.target.span_name), its parent.
func evaluatedSpan(span ptrace.Span) (pcommon.SpanID, string) {
	attrs := span.Attributes()
	if g, ok := attrs.Get(adapter.AttrGenerated); ok && g.Type() == pcommon.ValueTypeBool && g.Bool() && !span.ParentSpanID().IsEmpty() {
		if n, ok := attrs.Get(annotator.AttrTargetSpanName); ok {
			return span.ParentSpanID(), n.AsString()
		}
	}
	return span.SpanID(), span.Name()
}

func spanIDString(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}
