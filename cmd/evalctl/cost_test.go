package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// corpus writes a JSON Lines file of agent runs with known failures: good
// copies of travel-agent-semconv.json (booking_flow passes) and bad copies
// of travel-agent-wrong-order.json (booking_flow fails), each with its own
// trace id.
func corpus(t *testing.T, good, bad int) string {
	t.Helper()
	var buf bytes.Buffer
	add := func(path, traceID string, n, tag int) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			// Random-looking ids, as real ones are (sample_rate hashes them).
			id := sha256.Sum256(fmt.Appendf(nil, "%d/%d", tag, i))
			doc := strings.ReplaceAll(string(raw), traceID, hex.EncodeToString(id[:16]))
			if err := json.Compact(&buf, []byte(doc)); err != nil {
				t.Fatal(err)
			}
			buf.WriteByte('\n')
		}
	}
	add("../../examples/traces/travel-agent-semconv.json", "5b8efff798038103d269b633813fc60c", good, 1)
	add("../../examples/traces/travel-agent-wrong-order.json", "8a3c60f7d188f8fa79d48a391a778fa6", bad, 2)
	p := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// costConfig is examples/cost.yaml pointed at endpoint, without the
// verdict cache (so every call counts), and without run_if when cascade is
// off.
func costConfig(t *testing.T, endpoint string, cascade bool) string {
	t.Helper()
	raw, err := os.ReadFile("../../examples/cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(raw), "endpoint: https://api.openai.com/v1", "endpoint: "+endpoint+"\n    cache_size: 0", 1)
	if !cascade {
		y = strings.Replace(y, "run_if:", "# run_if:", 1)
	}
	return writeFile(t, "cost.yaml", y)
}

type estimateOut struct {
	Traces     int           `json:"traces"`
	Evaluators []estimateRow `json:"evaluators"`
}

// estimateByName decodes the output of `estimate --summary json` and
// returns it with its rows by evaluator.
func estimateByName(t *testing.T, out string) (estimateOut, map[string]estimateRow) {
	t.Helper()
	var est estimateOut
	if err := json.Unmarshal([]byte(out), &est); err != nil {
		t.Fatalf("estimate summary: %v\n%s", err, out)
	}
	by := map[string]estimateRow{}
	for _, r := range est.Evaluators {
		by[r.Evaluator] = r
	}
	return est, by
}

var costPrice = judge.PriceConfig{InputPerMillionTokens: 0.15, OutputPerMillionTokens: 0.60, Currency: "USD"}

// On 50 runs with 5 known failures: the cascade sends the failure review
// only for the failures; evalctl's reported cost is exactly the price of
// the tokens the fake judge counted (by its own method, in its usage); the
// estimate predicts the same calls, bounds the output tokens, and its
// input tokens are within 35% of the judge's count.
func TestCascadeCostAgainstTheFakeJudge(t *testing.T) {
	const good, bad = 45, 5
	input := corpus(t, good, bad)
	const verdict = `{"accomplished": false, "complete": true, "grounded": true, "failed_or_errored": false, "score": 0.4, "reason": "the hotel was booked before the flights were searched"}`
	calls := map[bool]int{}
	for _, cascade := range []bool{false, true} {
		srv := judgetest.New(t, judgetest.Counting(verdict))
		cfg := costConfig(t, srv.Endpoint(), cascade)

		code, out, stderr := runEvalctl(t, "", "estimate", "--config", cfg, "--summary", "json", input)
		if code != exitOK {
			t.Fatalf("estimate: exit %d: %s", code, stderr)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("estimate sent %d requests", n)
		}
		_, estBy := estimateByName(t, out)

		code, out, stderr = runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", input)
		if code != exitFailed {
			t.Fatalf("run: exit %d, want 1 (booking_flow fails): %s", code, stderr)
		}
		runBy := summaryByName(t, out)

		// What the fake judge saw, by evaluator (task_completion's prompt
		// names the task; llm_judge's quotes the criteria).
		in, outTok, n := map[string]int64{}, map[string]int64{}, map[string]int64{}
		for _, r := range srv.Requests() {
			ev := "failure_review"
			if strings.Contains(r.System(), "<criteria>") {
				ev = "baseline_quality"
			}
			in[ev] += r.PromptTokens()
			outTok[ev] += judgetest.CountTokens(verdict)
			n[ev]++
		}
		wantReview := int64(good + bad)
		if cascade {
			wantReview = bad
		}
		if n["failure_review"] != wantReview {
			t.Errorf("cascade %v: %d failure reviews, want %d", cascade, n["failure_review"], wantReview)
		}
		if n["baseline_quality"] == 0 || n["baseline_quality"] == good+bad {
			t.Errorf("baseline sample_rate 0.5 judged %d of %d runs", n["baseline_quality"], good+bad)
		}
		calls[cascade] = len(srv.Requests())

		var estIn, gotIn int64
		for _, ev := range []string{"failure_review", "baseline_quality"} {
			js := runBy[ev].Judge
			if js == nil || js.Cost == nil {
				t.Fatalf("%s: no judge cost in the summary: %+v", ev, runBy[ev])
			}
			want := costPrice.Cost(in[ev], outTok[ev])
			if *js.Cost != want || js.Calls != n[ev] || js.InputTokens != in[ev] || js.OutputTokens != outTok[ev] || js.CallsEstimated != 0 {
				t.Errorf("cascade %v, %s: summary %+v cost %v, want exactly %v from the judge's usage (%d calls, %d in, %d out)",
					cascade, ev, *js, *js.Cost, want, n[ev], in[ev], outTok[ev])
			}
			e := estBy[ev]
			if e.Calls != n[ev] {
				t.Errorf("cascade %v, %s: estimate %d calls, the run made %d", cascade, ev, e.Calls, n[ev])
			}
			if e.MaxOutputTokens < outTok[ev] {
				t.Errorf("%s: max output tokens %d below the %d reported", ev, e.MaxOutputTokens, outTok[ev])
			}
			if e.MaxCost == nil || *e.MaxCost < want {
				t.Errorf("%s: estimate's max cost %v below the cost %v", ev, e.MaxCost, want)
			}
			estIn += e.InputTokens
			gotIn += in[ev]
		}
		errPct := 100 * float64(estIn-gotIn) / float64(gotIn)
		t.Logf("cascade %v: %d judge calls; cost %.8f USD; estimated input tokens %d vs %d counted by the judge (%+.1f%%)",
			cascade, calls[cascade], costPrice.Cost(in["failure_review"]+in["baseline_quality"], outTok["failure_review"]+outTok["baseline_quality"]),
			estIn, gotIn, errPct)
		if math.Abs(errPct) > 35 {
			t.Errorf("estimate off by %.1f%% of the judge's count", errPct)
		}
		// docs/cost.md quotes these figures.
		wantCalls, wantErr := map[bool]int{false: 77, true: 32}[cascade], map[bool]string{false: "-6.0", true: "+2.5"}[cascade]
		if calls[cascade] != wantCalls || fmt.Sprintf("%+.1f", errPct) != wantErr {
			t.Errorf("cascade %v: %d calls, error %+.1f%%; docs/cost.md says %d and %s%%", cascade, calls[cascade], errPct, wantCalls, wantErr)
		}
	}
	if calls[true] >= calls[false] {
		t.Errorf("the cascade made %d calls, without it %d", calls[true], calls[false])
	}
}

// The text summary and the HTML report show each evaluator's judge cost;
// replies without usage are costed with the estimate and said to be.
func TestCostInTextSummaryAndReport(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: `{"score": 0.4, "reason": "no"}`, NoUsage: true}
	})
	cfg := costConfig(t, srv.Endpoint(), true)
	report := filepath.Join(t.TempDir(), "report.html")
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--report", report, corpus(t, 1, 1))
	if code != exitFailed {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "JUDGE CALLS") || !strings.Contains(out, "COST") {
		t.Fatalf("no cost columns:\n%s", out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "failure_review ") {
			line = l
		}
	}
	if !strings.Contains(line, " 1  ") || !strings.Contains(line, "USD (") || !strings.Contains(line, "estimated)") {
		t.Errorf("failure_review row %q: want 1 call and an estimated cost in USD", line)
	}
	// The cost is the column before the last (VERSION).
	if l := strings.Fields(strings.SplitN(out[strings.Index(out, "\nbooking_flow "):], "\n", 3)[1]); l[len(l)-2] != "-" {
		t.Errorf("booking_flow has no judge: want '-' in its cost column, got %v", l)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "judge default: 1 calls") || !strings.Contains(string(html), "USD") {
		t.Errorf("the report shows no judge cost")
	}
	code, out, stderr = runEvalctl(t, "", "estimate", "--config", cfg, corpus(t, 1, 1))
	if code != exitOK || !strings.Contains(out, "failure_review") || !strings.Contains(out, "per 1000 traces") {
		t.Errorf("estimate text: exit %d\n%s%s", code, out, stderr)
	}
}

// No false green from estimate: a config without judge evaluators says so
// instead of printing an empty table, and inputs with no case (no LLM,
// agent or tool span) are refused rather than estimated at 0 calls.
func TestEstimateSaysWhenThereIsNothingToEstimate(t *testing.T) {
	noJudge := writeFile(t, "deterministic.yaml", "evaluators:\n  - type: tool_error\n")
	code, out, stderr := runEvalctl(t, "", "estimate", "--config", noJudge, "../../examples/traces/travel-agent-semconv.json")
	if code != exitOK || !strings.Contains(out, "No evaluator of the config calls a judge") || strings.Contains(out, "JUDGE") {
		t.Errorf("no judge: exit %d, out %q, stderr %q", code, out, stderr)
	}

	srv := judgetest.New(t, judgetest.Counting(`{"score": 1, "reason": "ok"}`))
	cfg := costConfig(t, srv.Endpoint(), false)
	// A trace of one plain HTTP span: no case for any evaluator.
	noCase := writeFile(t, "http.json", `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"GET /",`+
		`"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`)
	code, out, stderr = runEvalctl(t, "", "estimate", "--config", cfg, noCase)
	if code != exitUsage || !strings.Contains(stderr, "no case was scored") || !strings.Contains(stderr, "no input holds a case") {
		t.Errorf("no case: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if strings.Contains(out, "0 calls") {
		t.Errorf("no case: an estimate printed: %q", out)
	}
}

// examples/judge.yaml can pass on the examples: on the clean example run
// every one of its judge evaluators would call the judge (none is sampled
// out, which would leave it "not scored" and the run unable to exit 0).
func TestJudgeExampleScoresEveryEvaluatorOnTheExamples(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "unused")
	code, out, stderr := runEvalctl(t, "", "estimate", "--config", "../../examples/judge.yaml", "--summary", "json",
		"../../examples/traces/travel-agent-semconv.json")
	if code != exitOK {
		t.Fatalf("estimate: exit %d: %s", code, stderr)
	}
	est, _ := estimateByName(t, out)
	if len(est.Evaluators) < 4 {
		t.Fatalf("%d judge evaluators in examples/judge.yaml", len(est.Evaluators))
	}
	for _, r := range est.Evaluators {
		if r.Calls+r.CachedCalls == 0 {
			t.Errorf("%s would not call its judge on the example run: a run reports it not scored", r.Evaluator)
		}
	}
}
