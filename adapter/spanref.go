package adapter

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// SpanRef is one span with the resource and scope it was sent under. It keeps
// the ResourceSpans and ScopeSpans themselves (not only their resource and
// scope) because OTTL's span context is built from them.
type SpanRef struct {
	Span          ptrace.Span
	ResourceSpans ptrace.ResourceSpans
	ScopeSpans    ptrace.ScopeSpans
	// Events are the GenAI content log records joined to this span (by its
	// span id; see JoinEvents). They are read like the span's own events
	// and fill only what the span's attributes lack. Nil for most spans.
	Events []plog.LogRecord
}

// Resource is the span's resource.
func (r SpanRef) Resource() pcommon.Resource { return r.ResourceSpans.Resource() }

// Scope is the span's instrumentation scope.
func (r SpanRef) Scope() pcommon.InstrumentationScope { return r.ScopeSpans.Scope() }

// ForEachSpan calls f for every span of td, in order, with its resource and
// scope: the one walk over a batch that the packages share.
func ForEachSpan(td ptrace.Traces, f func(SpanRef)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				f(SpanRef{Span: spans.At(k), ResourceSpans: rs, ScopeSpans: ss})
			}
		}
	}
}

// GroupByTrace groups all spans of td by trace id, keeping their order of
// appearance within each trace.
func GroupByTrace(td ptrace.Traces) map[pcommon.TraceID][]SpanRef {
	out := map[pcommon.TraceID][]SpanRef{}
	ForEachSpan(td, func(r SpanRef) {
		out[r.Span.TraceID()] = append(out[r.Span.TraceID()], r)
	})
	return out
}
