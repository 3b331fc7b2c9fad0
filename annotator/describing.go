package annotator

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxDescribingValue bounds a string attribute a result span keeps of its
// evaluated span: the webhook's monitors group by at most 256 bytes of a
// value.
const maxDescribingValue = 256

// contentWords are in the names of the attributes that carry content
// (messages, prompts, completions, tool arguments and results, documents)
// in the four conventions, flattened or not.
var contentWords = []string{"message", "prompt", "completion", "content", "input", "output", "argument", "args",
	"result", "response.text", "instruction", "definition", "document", "value"}

// Describing says whether an attribute of an evaluated span describes it
// (a tenant, a user tier, an operation, a model) rather than carrying
// content or evalbridge's own keys: a number, a bool, or a string of at most
// 256 bytes whose name names no content. A span that carries an evaluated
// span's results in its place (stream mode's result span, docs/contract.md
// §26) keeps these, so monitors group its results by the evaluated span's
// attributes as they do in hold mode.
func Describing(k string, v pcommon.Value) bool {
	if strings.HasPrefix(k, AttrPrefix) {
		return false
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
