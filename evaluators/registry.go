package evaluators

import (
	"sort"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
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
}

// Factory creates evaluators of one type.
type Factory struct {
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
	// session`, contract section 14): it reads the case's turns, messages,
	// tool calls or usage, which a session case fills from all its turns.
	Sessions bool
	// ToolCalls says the evaluator compares the case's tool calls (and the
	// expected ones), so `max_tool_calls` caps it.
	ToolCalls bool
	// New decodes the type's options strictly (unknown keys are errors) and
	// builds the evaluator. It must be cheap and start nothing.
	New func(opts *confmap.Conf, deps Deps) (Evaluator, error)
}

// registry lists every evaluator type, keyed by `type`. Each family file
// defines its factories; they are listed here so the catalogue is in one place.
var registry = index(
	// Tool calls compared with an expectation (toolcalls.go).
	Factory{Type: "tool_correctness", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCorrectness},
	Factory{Type: "tool_trajectory", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolTrajectory},
	Factory{Type: "tool_call_accuracy", DefaultThreshold: 0.7, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCallAccuracy},
	// Calls on their own.
	Factory{Type: "tool_call_validity", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, New: newToolCallValidity},
	Factory{Type: "tool_error", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, Sessions: true, New: newToolError},
	Factory{Type: "tool_efficiency", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, ToolCalls: true, Sessions: true, New: newToolEfficiency},
	// Tool definitions (reliability.go).
	Factory{Type: "tool_name_reliability", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newToolNameReliability},
	Factory{Type: "tool_description_reliability", DefaultThreshold: 0.8, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newToolDescriptionReliability},
	// Final output (output.go).
	Factory{Type: "exact_match", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newExactMatch},
	Factory{Type: "regex", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newRegex},
	Factory{Type: "structural_match", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, New: newStructuralMatch},
	// Retrieval (retrieval.go).
	Factory{Type: "retrieval_precision", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newRetrieval(false)},
	Factory{Type: "retrieval_recall", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newRetrieval(true)},
	// Limits (limits.go).
	Factory{Type: "latency", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newLatency},
	Factory{Type: "token_usage", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, ConversationFree: true, New: newTokenUsage},
	// Custom: the user's own checks, as a CEL expression (cel.go) or an
	// HTTP endpoint (remote.go).
	Factory{Type: "cel", DefaultThreshold: 1.0, DefaultLevel: adapter.LevelAgent, NeedsAttributes: true, Sessions: true, New: newCEL},
	Factory{Type: "remote", DefaultThreshold: 0.5, DefaultLevel: adapter.LevelAgent, NeedsAttributes: true, Async: true, Sessions: true, New: newRemote},
)

func index(fs ...Factory) map[string]Factory {
	m := make(map[string]Factory, len(fs))
	for _, f := range fs {
		if _, dup := m[f.Type]; dup {
			panic("evaluators: duplicate type " + f.Type)
		}
		m[f.Type] = f
	}
	return m
}

// Lookup returns the factory for a type.
func Lookup(typ string) (Factory, bool) {
	f, ok := registry[typ]
	return f, ok
}

// SessionTypes lists the types that accept `case: session`, sorted.
func SessionTypes() []string {
	var out []string
	for _, t := range Types() {
		if registry[t].Sessions {
			out = append(out, t)
		}
	}
	return out
}

// Types lists the registered types, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
