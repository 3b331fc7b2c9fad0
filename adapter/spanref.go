package adapter

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// SpanRef is one span with the resource and scope it was sent under. It keeps
// the ResourceSpans and ScopeSpans themselves (not only their resource and
// scope) because OTTL's span context is built from them.
type SpanRef struct {
	Span          ptrace.Span
	ResourceSpans ptrace.ResourceSpans
	ScopeSpans    ptrace.ScopeSpans
}

// Resource is the span's resource.
func (r SpanRef) Resource() pcommon.Resource { return r.ResourceSpans.Resource() }

// Scope is the span's instrumentation scope.
func (r SpanRef) Scope() pcommon.InstrumentationScope { return r.ScopeSpans.Scope() }

// GroupByTrace groups all spans of td by trace id, keeping their order of
// appearance within each trace.
func GroupByTrace(td ptrace.Traces) map[pcommon.TraceID][]SpanRef {
	out := map[pcommon.TraceID][]SpanRef{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				out[s.TraceID()] = append(out[s.TraceID()], SpanRef{Span: s, ResourceSpans: rs, ScopeSpans: ss})
			}
		}
	}
	return out
}
