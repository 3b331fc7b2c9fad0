package main

import (
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/fakejudge"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// buildExamples builds the example programs into a temporary directory.
func buildExamples(t *testing.T, pkgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
	return dir
}

// The worked example of docs/agreement.md, live: the collector on
// examples/agreement/collector.yaml judging with the stand-in judge,
// twelve rounds of the agent's five runs, and the users' feedback sent by
// examples/feedback with the OTel SDK's logs API. Prometheus then has the
// 60 pairs in eval_agreement_pairs_total, cell by cell as the docs say:
// with the judge as shipped kappa is 6/7; drifted, 0, below the alert's
// 0.4 on at least 50 pairs.
func TestAgreementWorkedExampleLive(t *testing.T) {
	bin := buildExamples(t, "./examples/agent", "./examples/feedback")
	t.Run("shipped", func(t *testing.T) { agreementLive(t, bin, false, [4]float64{45, 3, 0, 12}, 6.0/7) })
	t.Run("drifted", func(t *testing.T) { agreementLive(t, bin, true, [4]float64{36, 12, 9, 3}, 0) })
}

// agreementLive runs the example against a judge (drifted or not) and
// checks the pairs' cells (pass/pass, judged pass/human fail, judged
// fail/human pass, fail/fail) and the kappa of the recording rules.
func agreementLive(t *testing.T, bin string, drift bool, want [4]float64, wantKappa float64) {
	judge := httptest.NewServer(fakejudge.Judge{Drift: drift})
	t.Cleanup(judge.Close)
	t.Setenv("FAKE_JUDGE_ENDPOINT", judge.URL+"/v1")

	grpc, prom := freeAddr(t), freeAddr(t)
	cfg, err := filepath.Abs("../../examples/agreement/collector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set := settings()
	set.ConfigProviderSettings.ResolverSettings.URIs = []string{"file:" + cfg,
		"yaml:receivers::otlp::protocols::grpc::endpoint: " + grpc,
		"yaml:receivers::otlp::protocols::http::endpoint: " + freeAddr(t),
		"yaml:exporters::prometheus::endpoint: " + prom,
		"yaml:connectors::evalmetrics::flush_interval: 100ms",
		"yaml:service::telemetry::logs::level: warn",
		"yaml:service::telemetry::metrics::level: none",
	}
	testkit.RunCollector(t, set)

	var runs strings.Builder
	for range 12 {
		cmd := exec.Command(filepath.Join(bin, "agent"), "-endpoint", grpc)
		cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("examples/agent: %v\n%s", err, out)
		}
		runs.Write(out)
	}
	fb := exec.Command(filepath.Join(bin, "feedback"), "-endpoint", grpc)
	fb.Stdin = strings.NewReader(runs.String())
	if out, err := fb.CombinedOutput(); err != nil || !strings.Contains(string(out), "sent 60 feedback records (15 thumbs down)") {
		t.Fatalf("examples/feedback: %v\n%s", err, out)
	}

	cell := func(e testkit.Exposition, machine, human string) float64 {
		return e.Total("eval_agreement_pairs_total", map[string]string{
			"gen_ai_evaluation_name": "helpful", "eval_machine_label": machine, "eval_human_label": human})
	}
	e := waitScrape(t, "http://"+prom+"/metrics", func(e testkit.Exposition) bool {
		return e.Total("eval_agreement_pairs_total", nil) >= 60
	})
	a, b, c, d := cell(e, "pass", "pass"), cell(e, "pass", "fail"), cell(e, "fail", "pass"), cell(e, "fail", "fail")
	// As shipped, the judge fails the 12 runs that could not book the hotel
	// (the users too) and passes the rest, 3 slow loops the users turned
	// down among them. Drifted, it passes the 12 apologising tool_error
	// runs and fails the 12 loop runs, 3 of which users turned down.
	if got := [4]float64{a, b, c, d}; got != want {
		t.Fatalf("pairs pass/pass, pass/fail, fail/pass, fail/fail: %v, want %v\n%s", got, want, e)
	}
	// The recording rules' kappa: (po − pe)/(1 − pe), pe from both sides' pass shares.
	n := a + b + c + d
	po := (a + d) / n
	mp, hp := (a+b)/n, (a+c)/n
	pe := mp*hp + (1-mp)*(1-hp)
	kappa := (po - pe) / (1 - pe)
	if math.Abs(kappa-wantKappa) > 1e-9 {
		t.Errorf("kappa %v, want %v", kappa, wantKappa)
	}
	// EvalJudgeHumanKappaLow: kappa < 0.4 on at least 50 pairs.
	if fires := kappa < 0.4 && n >= 50; fires != drift {
		t.Errorf("the alert's condition is %v with kappa %v on %v pairs; want %v", fires, kappa, n, drift)
	}
	for _, s := range e.Samples {
		if strings.HasPrefix(s.Name, "eval_agreement_pairs_total") && !strings.Contains(s.Line, `gen_ai_evaluation_evaluator_version="sha256:`) {
			t.Errorf("a pair without the judge's version: %s", s.Line)
		}
	}
}
