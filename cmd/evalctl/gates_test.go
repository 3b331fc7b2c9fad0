package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// suiteFile writes n agent runs, of which the first `passing` have a
// successful tool call and the others a failing one, as JSON Lines of
// OTLP/JSON, and returns its path. Under gateConfig's `tool_error` (named
// `no_tool_errors`) exactly `passing` of n pass.
func suiteFile(t *testing.T, dir string, passing, n int) string {
	t.Helper()
	var buf bytes.Buffer
	var m ptrace.JSONMarshaler
	start := time.Unix(1764100000, 0)
	for i := range n {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
		tid := pcommon.TraceID([16]byte{0xee, byte(passing), byte(n), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)})
		root := ss.Spans().AppendEmpty()
		root.SetTraceID(tid)
		root.SetSpanID(pcommon.SpanID([8]byte{0, 0, 0, 0, 0, 0, 0, 1}))
		root.SetName("invoke_agent support_agent")
		root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
		root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		root.Attributes().PutStr("gen_ai.agent.name", "support_agent")
		tool := ss.Spans().AppendEmpty()
		tool.SetTraceID(tid)
		tool.SetSpanID(pcommon.SpanID([8]byte{0, 0, 0, 0, 0, 0, 0, 2}))
		tool.SetParentSpanID(root.SpanID())
		tool.SetName("execute_tool lookup_order")
		tool.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(100 * time.Millisecond)))
		tool.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(200 * time.Millisecond)))
		tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		tool.Attributes().PutStr("gen_ai.tool.name", "lookup_order")
		tool.Attributes().PutStr("gen_ai.tool.call.arguments", `{"order": 42}`)
		if i >= passing {
			tool.Status().SetCode(ptrace.StatusCodeError)
			tool.Status().SetMessage("OrderServiceTimeout")
		}
		b, err := m.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	p := filepath.Join(dir, fmt.Sprintf("suite-%d-of-%d.jsonl", passing, n))
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const gateConfig = "evaluators:\n  - type: tool_error\n    name: no_tool_errors\n  - type: latency\n    max: 10s\n"

func gateSetup(t *testing.T) (dir, cfg string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "gate.yaml")
	if err := os.WriteFile(cfg, []byte(gateConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// The check: a baseline of 95/100 passing; a run of 60/100 fails
// the gate naming the evaluator, both rates and both intervals; a run of
// 93/100 (a drop inside the noise) passes although 7 cases failed.
func TestBaselineGate(t *testing.T) {
	dir, cfg := gateSetup(t)
	code, baseline, stderr := runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", suiteFile(t, dir, 95, 100))
	if code != exitFailed {
		t.Fatalf("baseline run: exit %d\n%s", code, stderr)
	}
	var sum struct {
		Evaluators []evaluatorSummary `json:"evaluators"`
	}
	if err := json.Unmarshal([]byte(baseline), &sum); err != nil {
		t.Fatal(err)
	}
	e := sum.Evaluators[0]
	if e.Name != "no_tool_errors" || e.Passed != 95 || e.Failed != 5 || e.PassRate == nil || *e.PassRate != 0.95 ||
		e.PassRateCI == nil || e.MeanScoreCI == nil {
		t.Fatalf("baseline summary %+v", e)
	}
	basePath := filepath.Join(dir, "baseline.json")
	if err := os.WriteFile(basePath, []byte(baseline), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--baseline", basePath, suiteFile(t, dir, 60, 100))
	if code != exitFailed {
		t.Fatalf("60/100 against 95/100: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	want := "FAIL baseline      no_tool_errors: pass rate dropped from 0.950 [0.888, 0.978] (baseline) to 0.600 [0.502, 0.691] (now)"
	if !strings.Contains(out, want) {
		t.Errorf("the gate's message does not name the evaluator, both rates and intervals:\n%s", out)
	}
	// latency passes in both runs and holds.
	if !strings.Contains(out, "ok   baseline      latency:") || !strings.Contains(out, "1 of 2 gate(s) failed") {
		t.Errorf("summary:\n%s", out)
	}

	code, out, stderr = runEvalctl(t, "", "run", "--config", cfg, "--baseline", basePath, suiteFile(t, dir, 93, 100))
	if code != exitOK {
		t.Fatalf("93/100 against 95/100: exit %d, want 0 (7 cases fail, but within the noise)\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "all 2 gate(s) hold (7 evaluation(s) failed)") {
		t.Errorf("summary:\n%s", out)
	}

	// In JSON the verdicts are in the summary, and the failing one on stderr.
	code, out, stderr = runEvalctl(t, "", "run", "--config", cfg, "--baseline", basePath, "--summary", "json", suiteFile(t, dir, 60, 100))
	var js struct {
		Gates       []gateResult `json:"gates"`
		GatesFailed int          `json:"gates_failed"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != exitFailed {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if js.GatesFailed != 1 || len(js.Gates) != 2 || js.Gates[0].OK || js.Gates[0].Evaluator != "no_tool_errors" ||
		!strings.Contains(stderr, "gate baseline failed: no_tool_errors") {
		t.Errorf("gates %+v, stderr %q", js, stderr)
	}
}

// --min-pass-rate fails on a clear miss only: the interval's upper bound
// below the bar.
func TestMinPassRateGate(t *testing.T) {
	dir, cfg := gateSetup(t)
	nineOfTen := suiteFile(t, dir, 9, 10)
	// 9/10 = [0.596, 0.982]: could be 95 %, so a 0.95 bar holds, though a case failed.
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--min-pass-rate", "no_tool_errors=0.95", nineOfTen)
	if code != exitOK || !strings.Contains(out, "ok   min_pass_rate no_tool_errors: pass rate 0.900 [0.596, 0.982] holds against 0.95") {
		t.Errorf("9/10 with bar 0.95: exit %d\n%s\n%s", code, out, stderr)
	}
	// 60/100 = [0.502, 0.691] is clearly below 0.9.
	code, out, _ = runEvalctl(t, "", "run", "--config", cfg, "--min-pass-rate", "no_tool_errors=0.9",
		"--min-pass-rate", "latency=1", suiteFile(t, dir, 60, 100))
	if code != exitFailed || !strings.Contains(out, "FAIL min_pass_rate no_tool_errors: pass rate 0.600 [0.502, 0.691] is below the bar 0.9") ||
		!strings.Contains(out, "ok   min_pass_rate latency:") {
		t.Errorf("60/100 with bar 0.9: exit %d\n%s", code, out)
	}
}

// A gate on an evaluator that scored nothing fails: no evidence is not a pass.
func TestGateOnNothingScoredFails(t *testing.T) {
	dir, _ := gateSetup(t)
	cfg := filepath.Join(dir, "traj.yaml")
	// No expectation anywhere: every case is skipped.
	if err := os.WriteFile(cfg, []byte("evaluators:\n  - type: tool_trajectory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runEvalctl(t, "", "run", "--config", cfg, "--min-pass-rate", "tool_trajectory=0.5", "--summary", "json", suiteFile(t, dir, 3, 3))
	if code != exitFailed || !strings.Contains(out, `"pass_rate": null`) || !strings.Contains(out, "no scored case") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestGateBadUsageExit2(t *testing.T) {
	dir, cfg := gateSetup(t)
	in := suiteFile(t, dir, 1, 1)
	notSummary := filepath.Join(dir, "not-summary.json")
	os.WriteFile(notSummary, []byte(`{"resourceSpans": []}`), 0o600)
	percent := filepath.Join(dir, "percent.json")
	os.WriteFile(percent, []byte(`{"evaluators": [{"name": "no_tool_errors", "pass_rate": 95, "pass_rate_ci": [88, 98]}]}`), 0o600)
	notJSON := filepath.Join(dir, "not-json.json")
	os.WriteFile(notJSON, []byte(`EVALUATOR TYPE`), 0o600)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown evaluator": {[]string{"--min-pass-rate", "no_tool_error=0.9"}, `no evaluator named "no_tool_error"`},
		"no equals":         {[]string{"--min-pass-rate", "no_tool_errors"}, "NAME=R"},
		"rate above 1":      {[]string{"--min-pass-rate", "no_tool_errors=90"}, "within [0, 1]"},
		"rate NaN":          {[]string{"--min-pass-rate", "no_tool_errors=NaN"}, "within [0, 1]"},
		"missing baseline":  {[]string{"--baseline", filepath.Join(dir, "nope.json")}, "nope.json"},
		"baseline of OTLP":  {[]string{"--baseline", notSummary}, "not-summary.json"},
		"baseline not JSON": {[]string{"--baseline", notJSON}, "not-json.json"},
		"baseline percent":  {[]string{"--baseline", percent}, `percent.json: evaluator "no_tool_errors"`},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"run", "--config", cfg}, append(tc.args, in)...)
			code, _, stderr := runEvalctl(t, "", args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q", code, stderr, tc.want)
			}
		})
	}
}

// A baseline written before the intervals existed (counts only) still gates.
func TestBaselineFromCountsOnly(t *testing.T) {
	dir, cfg := gateSetup(t)
	old := filepath.Join(dir, "old.json")
	os.WriteFile(old, []byte(`{"evaluators": [{"name": "no_tool_errors", "passed": 95, "failed": 5, "mean_score": 0.95},
	  {"name": "renamed_away", "passed": 1, "failed": 0}, {"name": "latency", "pass_rate": 1}]}`), 0o600)
	code, out, _ := runEvalctl(t, "", "run", "--config", cfg, "--baseline", old, suiteFile(t, dir, 60, 100))
	if code != exitFailed || !strings.Contains(out, "dropped from 0.950 [0.888, 0.978]") ||
		!strings.Contains(out, "renamed_away: in the baseline") {
		t.Errorf("exit %d\n%s", code, out)
	}
}
