package evaluators

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvaluatorTypes: every judge type is llm_judge, and so is a
// deterministic type with judge checks; cel and remote are their own.
func TestEvaluatorTypes(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Type: "tool_error"}, EvaluatorTypeDeterministic},
		{Config{Type: "tool_name_reliability"}, EvaluatorTypeDeterministic},
		{Config{Type: "tool_name_reliability", Judge: "j"}, EvaluatorTypeJudge},
		{Config{Type: "faithfulness", Judge: "j"}, EvaluatorTypeJudge},
		{Config{Type: "llm_judge", Judge: "j", Options: map[string]any{"criteria": "x"}}, EvaluatorTypeJudge},
		{Config{Type: "cel", Options: map[string]any{"expression": "true"}}, EvaluatorTypeCEL},
		{Config{Type: "remote", Options: map[string]any{"endpoint": "http://x.local/"}}, EvaluatorTypeRemote},
	} {
		insts, err := Build([]Config{tc.cfg}, Deps{})
		if err != nil {
			t.Fatalf("%s: %v", tc.cfg.Type, err)
		}
		if got := insts[0].EvaluatorType; got != tc.want {
			t.Errorf("%s (judge %q): type %q, want %q", tc.cfg.Type, tc.cfg.Judge, got, tc.want)
		}
	}
}

func TestVersionValidation(t *testing.T) {
	for v, want := range map[string]string{
		"v3":                     "",
		"2026-05 prompt b":       "",
		" v3":                    "without leading or trailing spaces",
		"v\x01":                  "printable",
		"sha256:abc":             "marks computed versions",
		strings.Repeat("x", 129): "more than 128",
	} {
		err := (&Config{Type: "tool_error", Version: v}).Validate()
		if want == "" {
			if err != nil {
				t.Errorf("version %q: %v", v, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %q: error %v, want one saying %q", v, err, want)
		}
	}
}

func TestExamplesValidation(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		`{"input":"a","output":"b","label":"pass","critique":"c"}` + "\n\n" + `{"output":"b","label":"FAIL"}`: "",
		``:                                     "no examples",
		`{"input":"a","label":"maybe"}`:        "line 1: label \"maybe\" must be pass or fail",
		`{"input":"a","label":"pass"}` + "\nx": "line 2:",
		`{"input":"a","label":"pass","why":1}`: "unknown field",
		`{"label":"pass","critique":"c"}`:      "needs an input or an output",
		`{"input":"a","label":"pass"} {"x":1}`: "more than one JSON value",
	} {
		p := filepath.Join(dir, "ex.jsonl")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		err := (&Config{Type: "task_completion", Judge: "j", Examples: p}).Validate()
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", content, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: error %v, want one naming the file and saying %q", content, err, want)
		}
	}
	if err := (&Config{Type: "task_completion", Judge: "j", Examples: filepath.Join(dir, "missing.jsonl")}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	if err := (&Config{Type: "tool_error", Examples: filepath.Join(dir, "ex.jsonl")}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "set `judge`") {
		t.Errorf("examples without a judge: %v", err)
	}
}

// BenchmarkBuildVersion: what computing versions adds to building
// instances (once per start), against the same configs with `version:`
// given, which skips the hash: a judge type (options compared, prompts
// recorded on the probe cases), cel and a deterministic type.
func BenchmarkBuildVersion(b *testing.B) {
	cfgs := func(version string) []Config {
		return []Config{
			{Type: "task_completion", Name: "done", Judge: "j", Version: version, Options: map[string]any{"tasks": []any{"book"}}},
			{Type: "cel", Name: "rule", Version: version, Options: map[string]any{"expression": "size(case.tool_calls) > 0", "cost_limit": 1000}},
			{Type: "tool_trajectory", Name: "flow", Version: version, Options: map[string]any{"mode": "strict"}},
		}
	}
	for _, bc := range []struct{ name, version string }{{"explicit", "v1"}, {"computed", ""}} {
		b.Run(bc.name, func(b *testing.B) {
			c := cfgs(bc.version)
			for b.Loop() {
				if _, err := Build(c, Deps{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
