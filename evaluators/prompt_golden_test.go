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
	for _, gc := range probeCases() {
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
