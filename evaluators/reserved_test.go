package evaluators_test

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// docs/contract.md §16 (docs/evaluators.md): an instance may not be named
// after a key of the contract, and the error names the evaluator and the key.
func TestReservedNamesRejected(t *testing.T) {
	for _, name := range []string{"failed", "expected", "tasks", "constraints", "conversation_goal",
		"context", "session", "late", "target", "generated"} {
		err := (&evaluators.Config{Type: "tool_error", Name: name}).Validate()
		if err == nil {
			t.Errorf("name %q accepted", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `evaluator "`+name+`"`) || !strings.Contains(msg, "reserved") ||
			!strings.Contains(msg, "eval."+name) {
			t.Errorf("name %q: the reason should name the evaluator, say reserved and name the key: %s", name, msg)
		}
		// The processor's and evalctl's path (ValidateAll) rejects it too.
		if err := evaluators.ValidateAll([]evaluators.Config{{Type: "latency", Name: name, Options: map[string]any{"max": "1s"}}}); err == nil {
			t.Errorf("ValidateAll accepted %q", name)
		}
	}
	// Names that merely contain a reserved word are fine.
	for _, name := range []string{"failed_calls", "session_memory", "expected_output", "my_context", "latest"} {
		if err := (&evaluators.Config{Type: "tool_error", Name: name}).Validate(); err != nil {
			t.Errorf("name %q rejected: %v", name, err)
		}
	}
}

// Every eval.* key evalbridge writes or reads besides eval.<name>.* must have
// its first segment reserved, so a new key cannot silently become a name an
// instance may take.
func TestReservedNamesCoverEveryKey(t *testing.T) {
	keys := []string{
		annotator.AttrFailed,
		engine.AttrLate, engine.AttrTargetSpanName,
		sessions.AttrTurns, sessions.AttrTurnsDropped,
		adapter.AttrGenerated,
		// The expectations (docs/contract.md §3) the adapter reads.
		"eval.expected.tool_calls", "eval.expected.output", "eval.expected.documents",
		"eval.tasks", "eval.constraints", "eval.conversation_goal", "eval.context",
	}
	reserved := map[string]bool{}
	for _, n := range evaluators.ReservedNames() {
		reserved[n] = true
	}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, annotator.AttrPrefix)
		if !ok {
			t.Fatalf("%s is not an eval.* key", k)
		}
		first, _, _ := strings.Cut(rest, ".")
		if !reserved[first] {
			t.Errorf("key %s: instance name %q is not reserved", k, first)
		}
	}
	// No evaluator type is itself a reserved name (a type is the default name).
	for _, typ := range evaluators.Types() {
		if reserved[typ] {
			t.Errorf("type %q is reserved and could not be used without a name", typ)
		}
	}
}
