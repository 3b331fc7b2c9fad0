package annotator

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// MaxDescribing bounds the describing attributes a span evalbridge makes
// copies from the span it is about (the SDKs' default attribute count
// limit).
const MaxDescribing = 128

// maxDescribingValue bounds a string attribute a result span keeps of its
// evaluated span: the webhook's monitors group by at most 256 bytes of a
// value.
const maxDescribingValue = 256

// contentWords are in the names of the attributes that carry content
// (messages, prompts, completions, tool arguments and results, documents)
// in the four conventions, flattened or not.
var contentWords = []string{"message", "prompt", "completion", "content", "input", "output", "argument", "args",
	"result", "response.text", "instruction", "definition", "document", "value"}

// conventionPrefixes are the namespaces of the GenAI conventions: their
// keys mark a span as an LLM call, agent or tool (gen_ai.operation.name,
// openinference.span.kind) or count its tokens, so a result span that
// copied them would be one more LLM call, with its tokens counted twice,
// in a backend's GenAI views. Only conventionKept are copied of them.
var conventionPrefixes = []string{"gen_ai.", "llm.", "openinference.", "traceloop.", "ai.", "tool.", "tool_call.",
	"retrieval.", "embedding.", "reranker."}

// conventionKept are the convention keys that describe a span without
// making it a GenAI operation: what a monitor groups by.
var conventionKept = []string{"gen_ai.request.model", "gen_ai.response.model", "gen_ai.provider.name", "gen_ai.system",
	"gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.conversation.id", "llm.model_name", "llm.provider", "llm.system"}

// Describing says whether an attribute of an evaluated span describes it
// (a tenant, a user tier, a route, a model) rather than carrying content,
// marking a GenAI operation or being evalbridge's own: a number, a bool,
// or a string of at most 256 bytes whose name names no content, outside
// the GenAI conventions' namespaces but for their model, provider, agent
// and conversation keys. A span that carries an evaluated span's results
// in its place (stream mode's result span, docs/contract.md §26) keeps
// these, so monitors group its results by the evaluated span's attributes
// as they do in hold mode.
func Describing(k string, v pcommon.Value) bool {
	if strings.HasPrefix(k, AttrPrefix) {
		return false
	}
	for _, p := range conventionPrefixes {
		if strings.HasPrefix(k, p) {
			if !slices.Contains(conventionKept, k) {
				return false
			}
			break
		}
	}
	switch v.Type() {
	case pcommon.ValueTypeBool, pcommon.ValueTypeInt, pcommon.ValueTypeDouble:
		return true
	case pcommon.ValueTypeStr:
		if len(v.Str()) > maxDescribingValue {
			return false
		}
		for _, w := range contentWords {
			if strings.Contains(k, w) {
				return false
			}
		}
		return true
	}
	return false
}
