// Package adapter turns the spans of one trace into evaluation cases, whatever
// GenAI convention the application's instrumentation follows (OTel GenAI
// semconv, OpenInference, OpenLLMetry, Vercel AI SDK).
package adapter

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Level says what a case covers.
type Level string

const (
	// LevelLLM is one LLM call span.
	LevelLLM Level = "llm"
	// LevelAgent is one agent run: an agent span with every LLM, tool and
	// retrieval span below it.
	LevelAgent Level = "agent"
	// LevelSession is one conversation: the agent cases (turns) of several
	// traces that share a conversation id within one service (turn.go).
	LevelSession Level = "session"
)

// Case is one unit of evaluation, built from spans. Fields that the spans did
// not carry stay at their zero value; evaluators that need them report
// `skipped`.
type Case struct {
	Level Level
	// TraceID and SpanID identify the span the case came from (the anchor);
	// results are written back onto it.
	TraceID  pcommon.TraceID
	SpanID   pcommon.SpanID
	SpanName string
	// SpanIndex is the anchor's position in the spans given to Adapt: two
	// different spans may share a span id (bad input), and the results go
	// on the one the case came from.
	SpanIndex int

	// Input is the last user message; Output the final assistant text.
	Input              string
	Output             string
	Messages           []Message
	SystemInstructions string

	// ToolCalls are in the order the model requested them (tool spans
	// matched to the calls of the LLM outputs by id, else by name and
	// arguments; unmatched ones by start time, ties by position in the
	// export; docs/tool-call-order.md), or the calls requested in LLM
	// outputs when no tool span exists.
	ToolCalls       []ToolCall
	ToolDefinitions []ToolDefinition
	Documents       []Document

	Model          string
	Provider       string
	AgentName      string
	ConversationID string
	ResponseID     string
	Usage          Usage
	Latency        time.Duration
	// LLMCalls is the number of LLM call spans the case covers (1 for an
	// llm case).
	LLMCalls int

	// Attributes are the anchor span's attributes, copied, when the
	// adapter's Options ask for them (nil otherwise).
	Attributes map[string]any

	// LatencyInvalid, when set, says why the span's timestamps give no
	// valid latency (it ends before it starts, or overflows): bad input.
	LatencyInvalid string

	Expected Expectations

	// ServiceName is the anchor span's resource `service.name`.
	ServiceName string

	// Turns are a session case's turns, oldest first (nil for llm and agent
	// cases). Messages, ToolCalls and Usage are then the session's whole.
	Turns []Turn

	// Problems lists what could not be read (malformed JSON, wrong types,
	// missing parents, …). The case holds whatever was readable.
	Problems []string
}

// Message is one conversation message.
type Message struct {
	Role       string // system, user, assistant, tool
	Content    string
	ToolCalls  []ToolCall // calls requested by an assistant message
	ToolCallID string     // for role tool: the call this answers
}

// ToolCall is one tool invocation.
type ToolCall struct {
	Name string
	// Arguments is the call's arguments as a JSON object; nil when the call
	// carried none or they could not be parsed (see RawArguments).
	Arguments map[string]any
	// RawArguments is the arguments as they were found (a JSON string usually).
	RawArguments string
	Result       string
	HasResult    bool
	// Errored is true when the tool span's status is ERROR.
	Errored      bool
	ErrorMessage string
	ID           string
	Duration     time.Duration
	// SpanID is the tool span's id when the call came from a tool span.
	SpanID pcommon.SpanID
}

// ToolDefinition describes a tool the model was offered.
type ToolDefinition struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the tool's arguments; nil when absent.
	Parameters map[string]any
	// RawParameters is the JSON text Parameters was decoded from, exactly as
	// found in the span (the schema's part of a tool-definitions JSON string,
	// or a schema given as a JSON string of its own); "" when the schema was
	// a structured attribute value or is absent. Equal non-empty
	// RawParameters mean equal Parameters, so it can key a cache of compiled
	// schemas (JSON texts that differ only in spacing or key order are
	// different keys).
	RawParameters string
}

// Document is one retrieved document.
type Document struct {
	ID       string
	Content  string
	Score    float64
	HasScore bool
	Metadata map[string]any
}

// Usage holds token counts; a zero with the Has flag false means unknown.
type Usage struct {
	InputTokens     int64
	OutputTokens    int64
	TotalTokens     int64
	HasInputTokens  bool
	HasOutputTokens bool
	HasTotalTokens  bool
	// Invalid, when set, says why the counts cannot be trusted: a count was
	// negative, NaN, infinite or beyond int64, or the counts summed over
	// the run's LLM calls overflow. Such counts are bad input (reported as
	// a problem too), never a pass.
	Invalid string
}

// Total returns the total token count, summing input and output when the
// spans gave no total; ok is false when nothing is known. The sum
// saturates at math.MaxInt64 (and sets Invalid) instead of wrapping.
func (u Usage) Total() (int64, bool) {
	if u.HasTotalTokens {
		return u.TotalTokens, true
	}
	if u.HasInputTokens || u.HasOutputTokens {
		n, _ := AddCounts(u.InputTokens, u.OutputTokens)
		return n, true
	}
	return 0, false
}

// AddCounts adds two non-negative counts, saturating at math.MaxInt64;
// overflow says it saturated.
func AddCounts(a, b int64) (sum int64, overflow bool) {
	if a > math.MaxInt64-b {
		return math.MaxInt64, true
	}
	return a + b, false
}

// usageOverflow is Usage.Invalid when a sum overflows.
const usageOverflow = "the token counts of the run's LLM calls overflow a 64-bit count when summed"

// add sums the counts of another span into u (the run's usage from its LLM
// calls), saturating and marking an overflow as invalid; overflow says
// this sum is the one that first overflowed.
func (u *Usage) add(o Usage) (overflow bool) {
	var of1, of2, of3 bool
	u.InputTokens, of1 = AddCounts(u.InputTokens, o.InputTokens)
	u.OutputTokens, of2 = AddCounts(u.OutputTokens, o.OutputTokens)
	u.TotalTokens, of3 = AddCounts(u.TotalTokens, o.TotalTokens)
	u.HasInputTokens = u.HasInputTokens || o.HasInputTokens
	u.HasOutputTokens = u.HasOutputTokens || o.HasOutputTokens
	u.HasTotalTokens = u.HasTotalTokens || o.HasTotalTokens
	switch {
	case u.Invalid != "":
	case o.Invalid != "":
		u.Invalid = o.Invalid
	case of1 || of2 || of3:
		u.Invalid = usageOverflow
		return true
	}
	return false
}

// Expectations are read from the case's span, else from the trace's root
// span (docs/contract.md §3). Each Has* flag distinguishes "not given" from an
// empty value: `eval.expected.tool_calls = []` expects no call at all.
type Expectations struct {
	ToolCalls    []ExpectedCall
	HasToolCalls bool

	// Output is the expected output: a string, or a decoded JSON value when
	// the attribute held JSON that is not a plain string.
	Output    any
	HasOutput bool

	// Documents are the relevant documents or ids (strings or JSON objects).
	Documents    []any
	HasDocuments bool

	Tasks    []string
	HasTasks bool

	Constraints      string
	ConversationGoal string

	Context    []string
	HasContext bool
}

// ExpectedCall is one expected tool call. An expected call without
// arguments (HasArguments false) matches a call of that name with any
// arguments; `arguments: {}` expects none.
type ExpectedCall struct {
	Name         string
	Arguments    map[string]any
	HasArguments bool
}
