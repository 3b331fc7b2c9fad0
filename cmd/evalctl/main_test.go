package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

func runEvalctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// summaryByName decodes the output of `--summary json` (its evaluators and
// failures) and returns the evaluators' rows by name.
func summaryByName(t *testing.T, out string) map[string]evaluatorSummary {
	t.Helper()
	var sum struct {
		Evaluators []evaluatorSummary `json:"evaluators"`
		Failures   []failure          `json:"failures"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	by := map[string]evaluatorSummary{}
	for _, e := range sum.Evaluators {
		by[e.Name] = e
	}
	return by
}

var exampleTraces = []string{
	"../../examples/traces/travel-agent-semconv.json",
	"../../examples/traces/travel-agent-wrong-order.json",
	"../../examples/traces/travel-agent-openinference.json",
}

func TestRunOnExamplesReportsFailuresAndExits1(t *testing.T) {
	args := append([]string{"run", "--config", "../../examples/evalctl.yaml", "--summary", "json"}, exampleTraces...)
	code, out, stderr := runEvalctl(t, "", args...)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
	}
	by := summaryByName(t, out)
	// Three agent runs: the good run passes the booking flow, the wrong order
	// and the OpenInference run (a repeated search) do not.
	if e := by["booking_flow"]; e.Cases != 3 || e.Passed != 1 || e.Failed != 2 {
		t.Errorf("booking_flow = %+v, want 3 cases, 1 passed, 2 failed", e)
	}
	if e := by["tool_error"]; e.Cases != 3 || e.Failed != 1 {
		t.Errorf("tool_error = %+v, want 1 failure (the hotel booking error)", e)
	}
	if e := by["tool_efficiency"]; e.Failed != 1 {
		t.Errorf("tool_efficiency = %+v, want 1 failure (repeated search_flights)", e)
	}
	if e := by["token_usage"]; e.Cases < 9 || e.Failed != 0 {
		t.Errorf("token_usage = %+v, want one case per LLM span, none failing", e)
	}
}

func TestRunTextSummaryAndPassingInputExits0(t *testing.T) {
	code, out, stderr := runEvalctl(t, "", "run", "--config", "../../examples/evalctl.yaml", exampleTraces[0])
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"EVALUATOR", "booking_flow", "tool_trajectory", "all evaluations passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestRunWritesAnnotatedTracesAsJSONLines(t *testing.T) {
	outPath := filepath.Join(t.TempDir(), "scored.jsonl")
	code, _, stderr := runEvalctl(t, "", append([]string{"run", "--config", "../../examples/evalctl.yaml", "--out", outPath}, exampleTraces...)...)
	if code != exitFailed {
		t.Fatalf("exit %d; %s", code, stderr)
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (one per input document)", len(lines))
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	attrs := root.Attributes().AsRaw()
	if attrs["eval.booking_flow.status"] != "failed" || attrs["eval.tool_error.score"] != 0.5 {
		t.Errorf("root attributes lack the results: %v", attrs)
	}
}

func TestRunReadsStdinAndJSONLines(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range exampleTraces[:2] {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatal(err)
		}
		buf.Write(compact.Bytes())
		buf.WriteByte('\n')
	}
	code, out, stderr := runEvalctl(t, buf.String(), "run", "--config", "../../examples/evalctl.yaml", "-")
	if code != exitFailed || !strings.Contains(out, "booking_flow") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestBadUsageConfigAndInputExit2(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badCfg, []byte("evaluators:\n  - type: tool_trajectory\n    mode: sideways\n"), 0o600)
	unknownOpt := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknownOpt, []byte("evaluators:\n  - type: tool_error\n    colour: red\n"), 0o600)
	badInput := filepath.Join(dir, "bad.json")
	os.WriteFile(badInput, []byte(`{"resourceSpans": [`), 0o600)

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no command":     {nil, "Usage"},
		"unknown cmd":    {[]string{"frobnicate"}, "unknown command"},
		"no config":      {[]string{"run", exampleTraces[0]}, "--config is required"},
		"no input":       {[]string{"run", "--config", "../../examples/evalctl.yaml"}, "INPUT"},
		"bad summary":    {[]string{"run", "--config", "../../examples/evalctl.yaml", "--summary", "xml", exampleTraces[0]}, "--summary"},
		"missing config": {[]string{"run", "--config", filepath.Join(dir, "nope.yaml"), exampleTraces[0]}, "nope.yaml"},
		"bad option":     {[]string{"run", "--config", badCfg, exampleTraces[0]}, "mode"},
		"unknown option": {[]string{"validate", "--config", unknownOpt}, "colour"},
		"bad input":      {[]string{"run", "--config", "../../examples/evalctl.yaml", badInput}, "bad.json"},
		"missing input":  {[]string{"run", "--config", "../../examples/evalctl.yaml", filepath.Join(dir, "none.json")}, "none.json"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runEvalctl(t, "", tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not name %q", stderr, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	code, out, stderr := runEvalctl(t, "", "validate", "--config", "../../examples/evalctl.yaml")
	if code != exitOK || !strings.Contains(out, "valid") {
		t.Errorf("exit %d out %q err %q", code, out, stderr)
	}
}

func TestRunWithJudge(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always("Here is my verdict:\n```json\n{\"score\": 4, \"reason\": \"books both, but no price\"}\n```"))
	cfg := "judges:\n  default:\n    endpoint: " + srv.Endpoint() + "\n    model: judge-model\n    api_key: ${env:EVALCTL_TEST_KEY}\n" +
		"evaluators:\n  - type: llm_judge\n    name: helpful\n    judge: default\n    criteria: Is the answer helpful?\n    score_range: [1, 5]\n    threshold: 0.8\n"
	cfgPath := writeFile(t, "judge.yaml", cfg)
	t.Setenv("EVALCTL_TEST_KEY", "sk-evalctl-secret")
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfgPath, "--summary", "json", exampleTraces[0])
	if code != exitFailed {
		t.Fatalf("exit %d, want 1 (score 0.75 < 0.8)\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, `"mean_score": 0.75`) {
		t.Errorf("(4-1)/(5-1) = 0.75 not in summary:\n%s", out)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].User(), "Lisbon") {
		t.Fatalf("judge got %d requests; first: %+v", len(reqs), reqs)
	}
	if strings.Contains(stderr+out, "sk-evalctl-secret") {
		t.Error("the API key leaked into evalctl's output")
	}
}

// The processor's `storage:` key is accepted (the YAML is shared under strict
// decoding) and ignored: evalctl holds nothing across runs.
func TestValidateAcceptsProcessorStorageKey(t *testing.T) {
	path := writeFile(t, "config.yaml", "storage: file_storage/eval\nevaluators:\n  - type: tool_error\n")
	code, out, stderr := runEvalctl(t, "", "validate", "--config", path)
	if code != exitOK || !strings.Contains(out, "valid") {
		t.Errorf("exit %d out %q err %q", code, out, stderr)
	}
}

// The processor's `sampling:` block (contract §19) is accepted and ignored:
// evalctl forwards nothing; its shares are still checked.
func TestValidateAcceptsProcessorSamplingKey(t *testing.T) {
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"sampling: {failed: 1, passed: 0.1, unscored: 1}\nevaluators:\n  - type: tool_error\n", true},
		{"sampling: {passed: 2}\nevaluators:\n  - type: tool_error\n", false},
	} {
		path := writeFile(t, "config.yaml", c.yaml)
		code, out, stderr := runEvalctl(t, "", "validate", "--config", path)
		if (code == exitOK) != c.ok {
			t.Errorf("%q: exit %d out %q err %q", c.yaml, code, out, stderr)
		}
		if !c.ok && !strings.Contains(stderr+out, "sampling: passed 2 must be within [0, 1]") {
			t.Errorf("%q: no clear message: %q %q", c.yaml, out, stderr)
		}
	}
}
