package evaluators

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

// call builds a tool call; args may be nil.
func call(name string, args map[string]any) adapter.ToolCall {
	return adapter.ToolCall{Name: name, Arguments: args, HasResult: true, Result: `{"ok":true}`}
}

func calls(names ...string) []adapter.ToolCall {
	out := make([]adapter.ToolCall, len(names))
	for i, n := range names {
		out[i] = call(n, nil)
	}
	return out
}

func exp(name string, args map[string]any) adapter.ExpectedCall {
	return adapter.ExpectedCall{Name: name, Arguments: args, HasArguments: args != nil}
}

func exps(names ...string) []adapter.ExpectedCall {
	out := make([]adapter.ExpectedCall, len(names))
	for i, n := range names {
		out[i] = adapter.ExpectedCall{Name: n}
	}
	return out
}

func caseWith(expected []adapter.ExpectedCall, made []adapter.ToolCall) *adapter.Case {
	c := &adapter.Case{Level: adapter.LevelAgent, ToolCalls: made}
	if expected != nil {
		c.Expected.ToolCalls, c.Expected.HasToolCalls = expected, true
	}
	return c
}

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// runEval validates, builds and runs one evaluator instance.
func runEval(t *testing.T, typ string, opts map[string]any, threshold *float64, c *adapter.Case) Result {
	t.Helper()
	cfg := Config{Type: typ, Threshold: threshold, Options: opts}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	insts, err := Build([]Config{cfg}, Deps{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return insts[0].Evaluate(context.Background(), c)
}

func f64(v float64) *float64 { return &v }

// want is an expected outcome: a score (with status from the threshold) or a
// status without score (skipped, error).
type want struct {
	score  float64
	status Status
	reason string // substring the reason must contain
}

func check(t *testing.T, r Result, w want) {
	t.Helper()
	if w.status == "" {
		t.Fatalf("test bug: no status")
	}
	if r.Status != w.status {
		t.Fatalf("status = %s, want %s (score %v, reason %q)", r.Status, w.status, r.Score, r.Reason)
	}
	if r.Scored() && math.Abs(r.Score-w.score) > 1e-9 {
		t.Fatalf("score = %.12f, want %.12f (reason %q)", r.Score, w.score, r.Reason)
	}
	if w.reason != "" && !strings.Contains(r.Reason, w.reason) {
		t.Fatalf("reason %q does not contain %q", r.Reason, w.reason)
	}
	if r.Reason == "" {
		t.Fatalf("empty reason")
	}
}

func scored(score float64, threshold float64, reason ...string) want {
	st := StatusPassed
	if score < threshold {
		st = StatusFailed
	}
	w := want{score: score, status: st}
	if len(reason) > 0 {
		w.reason = reason[0]
	}
	return w
}

func skipped(reason string) want { return want{status: StatusSkipped, reason: reason} }

func errored(reason string) want { return want{status: StatusError, reason: reason} }

func jsonNumber(s string) any { return json.Number(s) }
