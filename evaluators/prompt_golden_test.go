package evaluators

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// go test ./evaluators -run TestPromptGolden -update rewrites the golden
// files; review the diff: it is exactly what the judges will be asked.
var updateGolden = goflag.Bool("update", false, "rewrite evaluators/testdata/prompts/*.golden from the current prompts")

// recordingJudge keeps every prompt and answers none, so each evaluator
// stops after its first question (every judge evaluator asks one).
type recordingJudge struct{ prompts [][]judge.Message }

var errRecorded = errors.New("recorded")

func (j *recordingJudge) Complete(_ context.Context, msgs []judge.Message) (string, error) {
	j.prompts = append(j.prompts, msgs)
	return "", errRecorded
}

func (j *recordingJudge) MaxFieldBytes() int { return 8192 }

// goldenCases are the fixed cases every judge type is asked about: one with
// every expectation set and a conversation, one with none, one with tasks
// only: the prompts differ by what the span carries.
func goldenCases() []struct {
	name string
	c    *adapter.Case
} {
	calls := []adapter.ToolCall{
		{Name: "search_flights", Arguments: map[string]any{"from": "LHR", "to": "CDG", "date": "2026-05-01"},
			HasResult: true, Result: `{"flights":[{"id":"AF1081","price":120}]}`},
		{Name: "book_flight", Arguments: map[string]any{"flight_id": "AF1081", "passenger": "Ada"},
			HasResult: true, Result: `{"error":"card declined"}`, Errored: true, ErrorMessage: "card declined"},
		{Name: "book_flight", Arguments: map[string]any{"flight_id": "AF1081", "passenger": "Ada", "card": "backup"},
			HasResult: true, Result: `{"booking":"B42"}`},
	}
	defs := []adapter.ToolDefinition{
		{Name: "search_flights", Description: "Search flights between two airports on a date.",
			Parameters: map[string]any{"type": "object", "required": []any{"from", "to"}, "properties": map[string]any{
				"from": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"}, "date": map[string]any{"type": "string"}}}},
		{Name: "book_flight", Description: "Book a flight.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"flight_id": map[string]any{"type": "string", "description": "the flight"}, "passenger": map[string]any{}}}},
	}
	msgs := []adapter.Message{
		{Role: "system", Content: "You are a travel agent."},
		{Role: "user", Content: "My name is Ada and I am vegetarian."},
		{Role: "assistant", Content: "Noted, Ada. Where would you like to go?"},
		{Role: "user", Content: "Book me a flight from London to Paris on 1 May."},
		{Role: "assistant", Content: "I will search flights first, then book the cheapest."},
		{Role: "assistant", Content: "Booked AF1081 (booking B42) with a vegetarian meal."},
	}
	full := &adapter.Case{
		Level: adapter.LevelAgent, Input: "Book me a flight from London to Paris on 1 May.",
		Output:   "Booked AF1081 (booking B42) with a vegetarian meal. Paris is the capital of France.",
		Messages: msgs, SystemInstructions: "You are a travel agent.", ToolCalls: calls, ToolDefinitions: defs,
		Documents: []adapter.Document{{ID: "d1", Content: "AF1081 leaves LHR at 09:00 for CDG."}, {ID: "d2", Content: "Paris is the capital of France."}},
		Expected: adapter.Expectations{
			Output: "Booked AF1081.", HasOutput: true,
			Tasks: []string{"find a flight", "book it"}, HasTasks: true,
			Constraints: "never pay more than 200 EUR", ConversationGoal: "a booked flight to Paris",
			Context: []string{"Ada is vegetarian.", "Ada prefers morning flights."}, HasContext: true,
		},
	}
	bare := &adapter.Case{
		Level: adapter.LevelAgent, Input: "Book me a flight from London to Paris on 1 May.",
		Output: "Booked AF1081 (booking B42).", ToolCalls: calls,
	}
	// tasks: tasks but no constraints, no context (task_completion asks
	// without constraints_honoured).
	tasks := *bare
	tasks.Expected = adapter.Expectations{Tasks: []string{"book a flight"}, HasTasks: true}
	return []struct {
		name string
		c    *adapter.Case
	}{{"full", full}, {"bare", bare}, {"tasks", &tasks}}
}

// goldenOptions are the options a type needs to run at all.
var goldenOptions = map[string]map[string]any{
	"llm_judge":    {"criteria": "The answer is polite and correct.", "score_range": []any{1, 5}},
	"agent_memory": {"context": []any{"Ada is vegetarian."}},
}

// judgeTypes are the types that may ask a judge: the judge types and the
// reliability types (their optional judge checks).
func judgeTypes() []string {
	return typesWhere(func(f factory) bool {
		return f.NeedsJudge || f.Type == "tool_name_reliability" || f.Type == "tool_description_reliability"
	})
}

func renderPrompts(t *testing.T, typ string) string {
	t.Helper()
	var b strings.Builder
	for _, gc := range goldenCases() {
		j := &recordingJudge{}
		cfg := Config{Type: typ, Judge: "default", Options: goldenOptions[typ]}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: validate: %v", typ, err)
		}
		insts, err := Build([]Config{cfg}, Deps{Judges: map[string]Judge{"default": j}})
		if err != nil {
			t.Fatalf("%s: build: %v", typ, err)
		}
		r := insts[0].Evaluate(context.Background(), gc.c)
		fmt.Fprintf(&b, "=== case %s: %d prompt(s), then %s", gc.name, len(j.prompts), r.Status)
		if len(j.prompts) == 0 {
			fmt.Fprintf(&b, " (%s)", r.Reason)
		}
		b.WriteString("\n")
		for i, msgs := range j.prompts {
			for _, m := range msgs {
				fmt.Fprintf(&b, "--- prompt %d, %s\n%s\n", i+1, m.Role, m.Content)
			}
		}
	}
	return b.String()
}

// TestPromptGolden pins every judge prompt, word for word, to
// testdata/prompts/<type>.golden: a prompt change fails here until the
// golden file is updated with it (-update), so it shows in review.
func TestPromptGolden(t *testing.T) {
	types := judgeTypes()
	if len(types) < 20 {
		t.Fatalf("only %d judge types: %v", len(types), types)
	}
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			got := renderPrompts(t, typ)
			if !strings.Contains(got, "--- prompt 1, system") {
				t.Fatalf("%s asked the judge nothing on the golden cases:\n%s", typ, got)
			}
			path := filepath.Join("testdata", "prompts", typ+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./evaluators -run TestPromptGolden -update)", err)
			}
			if string(want) != got {
				t.Errorf("the prompts of %s changed; if intended, run go test ./evaluators -run TestPromptGolden -update and review the diff.\n--- got:\n%s", typ, got)
			}
		})
	}
	// No stale golden file for a type that is gone.
	files, _ := filepath.Glob(filepath.Join("testdata", "prompts", "*.golden"))
	known := map[string]bool{}
	for _, typ := range types {
		known[typ] = true
	}
	for _, f := range files {
		if typ := strings.TrimSuffix(filepath.Base(f), ".golden"); !known[typ] {
			t.Errorf("%s: no judge type %q", f, typ)
		}
	}
}
