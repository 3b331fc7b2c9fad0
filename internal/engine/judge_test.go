package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

func TestJudgeConfigReferences(t *testing.T) {
	cfg := NewDefaultConfig()
	y := judgeYAML("http://localhost:1/v1", 2, map[string]any{"type": "llm_judge", "judge": "other", "criteria": "x"})
	if err := confmap.NewFromStringMap(y).Unmarshal(&cfg); err != nil {
		t.Fatal(err)
	}
	err := confmap.Validate(&cfg)
	if err == nil || !strings.Contains(err.Error(), `judge "other" is not configured`) || !strings.Contains(err.Error(), "default") {
		t.Fatalf("err = %v", err)
	}
	cfg = NewDefaultConfig()
	y = judgeYAML("http://localhost:1/v1", 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"})
	y["judges"].(map[string]any)["default"].(map[string]any)["model"] = ""
	if err := confmap.NewFromStringMap(y).Unmarshal(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := confmap.Validate(&cfg); err == nil || !strings.Contains(err.Error(), "model") {
		t.Fatalf("err = %v", err)
	}
}

func TestJudgeEngineScoresConcurrently(t *testing.T) {
	var calls atomic.Int32
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		calls.Add(1)
		return judgetest.Reply{Delay: 200 * time.Millisecond, Content: `{"score": 0.9, "reason": "fine"}`}
	})
	var evs []map[string]any
	names := []string{"j1", "j2", "j3", "j4"}
	for i, n := range names {
		evs = append(evs, map[string]any{"type": "llm_judge", "name": n, "judge": "default",
			"criteria": "criterion " + string(rune('a'+i))})
	}
	evs = append(evs, map[string]any{"type": "tool_error"})
	e := newEngine(t, judgeYAML(srv.Endpoint(), 4, evs...))
	started(t, e)
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	for _, n := range names {
		if r := got[n]; r.Status != evaluators.StatusPassed || r.Score != 0.9 {
			t.Errorf("%s: %+v", n, r)
		}
	}
	if _, ok := got["tool_error"]; !ok {
		t.Error("deterministic evaluator did not run")
	}
	// The four calls overlap (each takes 200ms), never more than the bound.
	if m := srv.MaxInFlight(); m < 2 || m > 4 {
		t.Errorf("max in flight %d, want concurrent calls within max_concurrency 4", m)
	}
}

func TestJudgeEngineTimeout(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 2 * time.Second, Content: `{"score": 1}`}
	})
	e := newEngine(t, judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"}))
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got := results(e.ScoreTrace(ctx, loadTrace(t, semconvTrace)))
	if r := got["llm_judge"]; r.Status != evaluators.StatusTimeout {
		t.Fatalf("llm_judge: %+v", r)
	}
}

func TestJudgeEngineShutdownWithoutStart(t *testing.T) {
	e := newEngine(t, judgeYAML("http://localhost:1/v1", 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"}))
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	if r := got["llm_judge"]; r.Status != evaluators.StatusError || !strings.Contains(r.Reason, "not started") {
		t.Fatalf("llm_judge before Start: %+v", r)
	}
}

// A judge that cannot start (bad TLS file) must not leave the other judges'
// metric callbacks registered, even for a host that does not call Shutdown
// after a failed Start (evalctl; a collector does, and Shutdown is safe twice).
func TestJudgeEngineFailedStartReleasesEveryJudge(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer func() { _ = tel.Shutdown(context.Background()) }()
	y := judgeYAML("http://localhost:1/v1", 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"})
	judges := y["judges"].(map[string]any)
	judges["a_broken"] = map[string]any{"endpoint": "https://localhost:1/v1", "model": "m",
		"tls": map[string]any{"ca_file": "/nonexistent/ca.pem"}}
	judges["default"].(map[string]any)["budget"] = map[string]any{"tokens_per_hour": 1000}
	e := newEngineWith(t, decodeConfig(t, y), tel.NewTelemetrySettings())
	if _, err := tel.GetMetric("otelcol_processor_eval_judge_budget_remaining"); err != nil {
		t.Fatalf("before Start the budget gauge is registered: %v", err)
	}
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err == nil {
		t.Fatal("Start succeeded with a missing ca_file")
	}
	if m, err := tel.GetMetric("otelcol_processor_eval_judge_budget_remaining"); err == nil {
		t.Fatalf("after a failed Start the budget gauge is still reported: %+v", m)
	}
}

// New failing after it built the judge clients releases them too.
func TestJudgeEngineFailedNewReleasesJudges(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer func() { _ = tel.Shutdown(context.Background()) }()
	y := judgeYAML("http://localhost:1/v1", 2, map[string]any{"type": "no_such_type"})
	y["judges"].(map[string]any)["default"].(map[string]any)["budget"] = map[string]any{"tokens_per_hour": 1000}
	cfg := NewDefaultConfig()
	if err := confmap.NewFromStringMap(y).Unmarshal(&cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(&cfg, tel.NewTelemetrySettings()); err == nil {
		t.Fatal("New accepted an unknown evaluator type")
	}
	if m, err := tel.GetMetric("otelcol_processor_eval_judge_budget_remaining"); err == nil {
		t.Fatalf("after a failed New the budget gauge is still reported: %+v", m)
	}
}
