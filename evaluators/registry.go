package evaluators

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// Deps are what an evaluator may need from its host.
type Deps struct {
	Logger *zap.Logger
	// Judge is the instance's configured `judge` name ("" when none); Build
	// sets it per instance so evaluators with optional judge checks know.
	Judge string
	// Judges are the configured judge clients by name (`judges:`); judge
	// evaluators use Judges[Judge]. Nil at validation time.
	Judges map[string]Judge
	// Name is the instance's name; Build and Validate set it (the remote
	// evaluator sends it with each case).
	Name string
	// Telemetry is the host's; evaluators that hold clients (remote) build
	// them with it. Zero at validation time.
	Telemetry component.TelemetrySettings
	// RedactBody, when set, masks personal data and secrets in a request
	// body before it leaves the collector (`redaction:`, docs/redaction.md);
	// the remote evaluator applies it to each JSON body it sends.
	RedactBody func(body []byte) []byte
	// NoMetrics says the caller reads no Result.Metrics (the engine, which
	// writes results onto spans, where metrics do not go): the tool-call
	// and token evaluators then leave it nil instead of building a map
	// per result. Everything else in their results is the same.
	NoMetrics bool
	// JudgeConfigs are the `judges:` entries by name: the version of an
	// instance with a judge hashes its judge's Behaviour (version.go). Nil
	// at validation time.
	JudgeConfigs map[string]judge.Config
	// Examples are the instance's few-shot examples (`examples:`,
	// examples.go); Build sets them per instance.
	Examples []Example
}

// factory creates evaluators of one type.
type factory struct {
	Type             string
	DefaultThreshold float64
	DefaultLevel     adapter.Level
	NeedsJudge       bool
	// ConversationFree says the evaluator reads no messages, input, output
	// or system instructions, so the adapter may skip decoding them when no
	// configured evaluator needs them (the costliest part of adapting).
	ConversationFree bool
	// Async says the evaluator waits on something outside the process (an
	// HTTP endpoint): the engine runs it in the background, bounded and with
	// late results, as it runs judge evaluators.
	Async bool
	// NeedsAttributes says the evaluator reads Case.Attributes, which the
	// adapter copies only when some evaluator needs them.
	NeedsAttributes bool
	// Sessions says the type can score a whole conversation (`case:
	// session`, docs/contract.md §14): it reads the case's turns, messages,
	// tool calls or usage, which a session case fills from all its turns.
	Sessions bool
	// ToolCalls says the evaluator compares the case's tool calls (and the
	// expected ones), so `max_tool_calls` caps it.
	ToolCalls bool
	// New decodes the type's options strictly (unknown keys are errors) and
	// builds the evaluator. It must be cheap and start nothing.
	New func(opts *confmap.Conf, deps Deps) (Evaluator, error)
}

// registry lists every evaluator type (docs/contract.md §6,
// docs/evaluators.md), keyed by `type`, each line naming the file that
// implements it. This is the one catalogue: there is no other registration.
var registry = index(
	// Tool calls compared with an expectation (toolcalls.go).
	factory{Type: "tool_correctness", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCorrectness},    // toolcalls.go
	factory{Type: "tool_trajectory", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolTrajectory},      // toolcalls.go
	factory{Type: "tool_call_accuracy", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCallAccuracy}, // toolcalls.go
	// Calls on their own.
	factory{Type: "tool_call_validity", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCallValidity},            // validity.go
	factory{Type: "tool_error", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, Sessions: true, New: newToolError},           // toolerror.go
	factory{Type: "tool_efficiency", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, Sessions: true, New: newToolEfficiency}, // efficiency.go
	// Tool definitions (reliability.go).
	factory{Type: "tool_name_reliability", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newToolNameReliability},               // reliability.go
	factory{Type: "tool_description_reliability", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newToolDescriptionReliability}, // reliability.go
	// Final output (output.go).
	factory{Type: "exact_match", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newExactMatch},           // output.go
	factory{Type: "regex", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newRegex},                      // output.go
	factory{Type: "structural_match", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newStructuralMatch}, // output.go
	// Retrieval (retrieval.go).
	factory{Type: "retrieval_precision", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newRetrieval(false)}, // retrieval.go
	factory{Type: "retrieval_recall", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newRetrieval(true)},     // retrieval.go
	// Limits (limits.go).
	factory{Type: "latency", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newLatency},        // limits.go
	factory{Type: "token_usage", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newTokenUsage}, // limits.go
	// Custom: the user's own checks, as a CEL expression (cel.go) or an
	// HTTP endpoint (remote.go).
	factory{Type: "cel", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, NeedsAttributes: true, Sessions: true, ToolCalls: true, New: newCEL},   // cel.go
	factory{Type: "remote", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsAttributes: true, Async: true, Sessions: true, New: newRemote}, // remote.go
	// With a judge (judge.go is their common base): an answer against the
	// operator's criteria, answers and retrieval, safety, agent runs and
	// conversations.
	factory{Type: "llm_judge", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newLLMJudge},                                                                            // judge_llm.go
	factory{Type: "faithfulness", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runFaithfulness)},                                                                             // judge_rag.go
	factory{Type: "hallucination", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runHallucination)},                                                                           // judge_rag.go
	factory{Type: "answer_relevancy", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runAnswerRelevancy)},                                                                      // judge_rag.go
	factory{Type: "contextual_relevance", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runContextualRelevance)},                                                              // judge_rag.go
	factory{Type: "contextual_precision", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runContextualPrecision)},                                                              // judge_rag.go
	factory{Type: "contextual_recall", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newRAG(runContextualRecall)},                                                                    // judge_rag.go
	factory{Type: "toxicity", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newSafety(toxicityCategories, "toxic")},                                                                  // judge_safety.go
	factory{Type: "bias", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newSafety(biasCategories, "biased")},                                                                         // judge_safety.go
	factory{Type: "task_completion", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newAgent(runTaskCompletion, 0, taskCompletionOpts)},                               // judge_agent.go
	factory{Type: "tool_argument_hallucination", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runToolArgHallucination, 20, toolArgumentsOpts)},                             // judge_agent.go
	factory{Type: "tool_argument_accuracy", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runToolArgAccuracy, 8, toolArgumentsOpts)},                                        // judge_agent.go
	factory{Type: "tool_call_necessity", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runToolCallNecessity, 0, noOptions)},                                                 // judge_agent.go
	factory{Type: "step_faithfulness", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runStepFaithfulness, 0, noOptions)},                                                    // judge_agent.go
	factory{Type: "plan_quality", DefaultThreshold: 0.6, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runPlanQuality, 0, noOptions)},                                                              // judge_agent.go
	factory{Type: "trajectory_efficiency", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, New: newAgent(runTrajectoryEfficiency, 0, noOptions)},                                            // judge_agent.go
	factory{Type: "agent_memory", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newAgent(runAgentMemory, 0, agentMemoryOpts)},                                        // judge_agent.go
	factory{Type: "knowledge_retention", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newAgent(runKnowledgeRetention, 0, noOptions)},                                // judge_conversation.go
	factory{Type: "conversation_completeness", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newAgent(runConversationCompleteness, 0, conversationCompletenessOpts)}, // judge_conversation.go
	factory{Type: "turn_relevancy", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, NeedsJudge: true, Sessions: true, New: newAgent(runTurnRelevancy, 0, noOptions)},                                          // judge_conversation.go
)

func index(fs ...factory) map[string]factory {
	m := make(map[string]factory, len(fs))
	for _, f := range fs {
		if _, dup := m[f.Type]; dup {
			panic("evaluators: duplicate type " + f.Type)
		}
		m[f.Type] = f
	}
	return m
}

// lookup returns the factory for a type.
func lookup(typ string) (factory, bool) {
	f, ok := registry[typ]
	return f, ok
}

// sessionTypes lists the types that accept `case: session`, sorted.
func sessionTypes() []string { return typesWhere(func(f factory) bool { return f.Sessions }) }

// typesWhere lists the types whose factory keep accepts, sorted.
func typesWhere(keep func(factory) bool) []string {
	var out []string
	for _, t := range Types() {
		if keep(registry[t]) {
			out = append(out, t)
		}
	}
	return out
}

// Types lists the registered types, sorted.
func Types() []string { return sortedKeys(registry) }
