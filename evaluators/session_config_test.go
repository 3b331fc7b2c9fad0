package evaluators

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

// case: session is a property of the registry entry: the session-capable
// types of docs/contract.md §14 accept it, every other type is rejected at
// validation, naming the evaluator and its type.
func TestCaseSession(t *testing.T) {
	capable := map[string]bool{"knowledge_retention": true, "conversation_completeness": true, "turn_relevancy": true,
		"agent_memory": true, "llm_judge": true, "task_completion": true, "tool_efficiency": true, "tool_error": true,
		"cel": true, "remote": true} // the list of docs/contract.md §14
	for _, typ := range Types() {
		f, _ := lookup(typ)
		if f.Sessions != capable[typ] {
			t.Errorf("%s: Sessions = %v, want %v", typ, f.Sessions, capable[typ])
		}
	}
	if got := strings.Join(sessionTypes(), ","); !strings.Contains(got, "tool_error") || strings.Contains(got, "exact_match") {
		t.Errorf("SessionTypes() = %s", got)
	}
	ok := Config{Type: "tool_error", Name: "convo_errors", Case: adapter.LevelSession}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{Type: "tool_trajectory", Name: "flow", Case: adapter.LevelSession, Options: map[string]any{"expected": []any{"a"}}}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), `evaluator "flow": type tool_trajectory cannot score sessions`) {
		t.Fatalf("err = %v", err)
	}
	insts, err := Build([]Config{ok}, Deps{})
	if err != nil || insts[0].Level != adapter.LevelSession {
		t.Fatalf("%v %+v", err, insts)
	}
}
