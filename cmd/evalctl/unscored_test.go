package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func judgeConfig(t *testing.T, endpoint string) string {
	return writeFile(t, "c.yaml", `timeout: 10s
judges:
  default:
    endpoint: `+endpoint+`
    model: m
    retry: {max_attempts: 1}
evaluators:
  - type: llm_judge
    name: helpful
    judge: default
    criteria: the answer helps
  - type: tool_call_validity
`)
}

// No false green (issue 19): a judge that is down errors every case; the
// run says the evaluator scored nothing and exits 1, never "all evaluations
// passed"; --allow-unscored accepts it.
func TestRunWithJudgeDownIsNotGreen(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Status: 500, Body: "down"}
	})
	cfg := judgeConfig(t, srv.Endpoint())
	code, out, stderr := runEvalctl(t, "", append([]string{"run", "--config", cfg}, exampleTraces...)...)
	if code != exitFailed || strings.Contains(out, "all evaluations passed") {
		t.Fatalf("exit %d; stdout: %s", code, out)
	}
	for _, want := range []string{"Not scored:", "evaluator helpful scored no case (3 case(s): 0 skipped, 3 error(s)", "nothing failed, but 1 result(s) say nothing"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q: %s", want, out)
		}
	}
	if !strings.Contains(stderr, "--allow-unscored") {
		t.Errorf("stderr does not name the flag: %s", stderr)
	}
	code, out, _ = runEvalctl(t, "", append([]string{"run", "--config", cfg, "--allow-unscored", "--summary", "json"}, exampleTraces...)...)
	if code != exitOK || !strings.Contains(out, `"unscored": [`) {
		t.Fatalf("--allow-unscored: exit %d; %s", code, out)
	}
}

// A judge that answers one case in three: errors outnumber scored cases.
func TestRunWithMostlyErrorsIsNotGreen(t *testing.T) {
	srv := judgetest.New(t, func(n int, _ judgetest.Request) judgetest.Reply {
		if n == 1 {
			return judgetest.Reply{Content: `{"score": 1, "reason": "fine"}`}
		}
		return judgetest.Reply{Status: 500, Body: "down"}
	})
	code, out, _ := runEvalctl(t, "", append([]string{"run", "--config", judgeConfig(t, srv.Endpoint())}, exampleTraces...)...)
	if code != exitFailed || !strings.Contains(out, "evaluator helpful: 2 error(s) and timeout(s) outnumber its 1 scored case(s)") {
		t.Fatalf("exit %d; stdout: %s", code, out)
	}
}

// A valid trace file without any LLM or agent span: reported as such, and
// the run fails; the gates do not turn it green either.
func TestRunOnFileWithoutCaseFails(t *testing.T) {
	in := writeFile(t, "http.json", `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},
"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"GET /health",
"kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000"}]}]}]}`)
	for _, extra := range [][]string{nil, {"--min-pass-rate", "booking_flow=0"}} {
		args := append(append([]string{"run", "--config", "../../examples/evalctl.yaml"}, extra...), in, exampleTraces[0])
		code, out, stderr := runEvalctl(t, "", args...)
		if code != exitFailed || strings.Contains(out, "all evaluations passed") {
			t.Fatalf("%v: exit %d; stdout: %s", extra, code, out)
		}
		want := "input " + in + ": 1 span(s) in 1 trace(s), but no case was scored"
		if !strings.Contains(out, want) || !strings.Contains(stderr, want) {
			t.Fatalf("%v: want %q in stdout and stderr:\n%s\n%s", extra, want, out, stderr)
		}
	}
}

// An unset ${env:…} in the config is a warning on stderr, as the collector
// logs one: a judge without its key would otherwise be called silently
// without Authorization.
func TestUnsetEnvVariableWarns(t *testing.T) {
	cfg := writeFile(t, "c.yaml", `judges:
  default:
    endpoint: http://127.0.0.1:1/v1
    model: m
    api_key: ${env:EVALCTL_TEST_UNSET_OPENAI_API_KEY}
evaluators:
  - type: tool_error
`)
	code, _, stderr := runEvalctl(t, "", "validate", "--config", cfg)
	want := "evalctl: warning: config " + cfg + " references ${env:EVALCTL_TEST_UNSET_OPENAI_API_KEY}, which is not set"
	if code != exitOK || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	code, _, stderr = runEvalctl(t, "", "run", "--config", cfg, exampleTraces[0])
	if code != exitOK || !strings.Contains(stderr, want) {
		t.Fatalf("run: exit %d; stderr: %s", code, stderr)
	}
}
