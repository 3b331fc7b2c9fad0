package adapter

// The eval.* input attributes: what an instrumented application sets on a
// span (or the trace's root span) to tell the evaluators what it expected.
// The evaluators, the examples and the load generator name them through
// these constants, so a key is spelled once (docs/evaluators.md says what
// each evaluator reads).
const (
	// AttrExpectedToolCalls is a JSON array of expected calls, each a name
	// or {"name", "arguments"} (ParseExpectedCalls).
	AttrExpectedToolCalls = "eval.expected.tool_calls"
	// AttrExpectedOutput is the expected final answer (a string, or JSON).
	AttrExpectedOutput = "eval.expected.output"
	// AttrExpectedDocuments is a JSON array of the documents a retrieval
	// should have found.
	AttrExpectedDocuments = "eval.expected.documents"
	// AttrTasks is the tasks an agent was given (a string or a JSON array
	// of strings).
	AttrTasks = "eval.tasks"
	// AttrContext is the grounding context of the case (a string or a
	// JSON array of strings).
	AttrContext = "eval.context"
	// AttrConstraints is the constraints the agent had to keep (text).
	AttrConstraints = "eval.constraints"
	// AttrConversationGoal is what a conversation was meant to achieve
	// (text).
	AttrConversationGoal = "eval.conversation_goal"
)
