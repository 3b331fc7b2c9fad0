package webhookexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A span evalbridge made to carry results (stream mode's result span, a
// late result) names the span they are about: its parent, by
// eval.target.span_name. Other spans name themselves.
func TestAlertsOfAResultSpanNameTheEvaluatedSpan(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-app")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	result := spans.AppendEmpty()
	result.SetTraceID(pcommon.TraceID{1})
	result.SetSpanID(pcommon.SpanID{9})
	result.SetParentSpanID(pcommon.SpanID{1})
	result.SetName("evaluation")
	result.Attributes().PutBool("eval.generated", true)
	result.Attributes().PutStr("eval.target.span_name", "invoke_agent travel_agent")
	result.Attributes().PutStr("eval.tool_error.status", "failed")
	result.Attributes().PutEmptySlice("eval.failed").AppendEmpty().SetStr("tool_error")
	own := spans.AppendEmpty()
	own.SetTraceID(pcommon.TraceID{2})
	own.SetSpanID(pcommon.SpanID{2})
	own.SetName("invoke_agent other")
	own.Attributes().PutEmptySlice("eval.failed").AppendEmpty().SetStr("tool_error")

	alerts := extractAlerts(td, nil, "")
	require.Len(t, alerts, 2)
	assert.Equal(t, spanIDString(pcommon.SpanID{1}), alerts[0].SpanID)
	assert.Equal(t, "invoke_agent travel_agent", alerts[0].SpanName)
	assert.Equal(t, spanIDString(pcommon.SpanID{2}), alerts[1].SpanID)
	assert.Equal(t, "invoke_agent other", alerts[1].SpanName)
}
