package adapter

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// AttrGenerated marks spans evalbridge made itself (late judge results,
// evaluate_session): they are never adapted into cases or turns again,
// neither by the collector that made them nor by another evalbridge
// downstream, and the processor forwards them without holding.
const AttrGenerated = "eval.generated"

// IsGenerated reports whether span carries AttrGenerated = true.
func IsGenerated(span ptrace.Span) bool {
	v, ok := span.Attributes().Get(AttrGenerated)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// Turn is one turn of a session: what one agent case said and did, kept
// compact (no spans) so that a session store can hold many of them.
type Turn struct {
	// TraceID and SpanID are the turn's case span.
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
	// Time is the case span's start (turns are ordered by it).
	Time      time.Time
	Input     string
	Output    string
	ToolCalls []ToolCall
	Usage     Usage
	Latency   time.Duration
	// LLMCalls is the LLM call spans of the turn's agent case.
	LLMCalls  int
	AgentName string
	Model     string
}
