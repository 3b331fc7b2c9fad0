package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

// The --report file: one self-contained HTML page (inline CSS, JS and SVG;
// nothing is fetched), rendered with html/template so that every reason,
// span name and argument quoted from a trace is escaped.

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Parse(reportTemplate))

type reportPage struct {
	Evaluations int
	Failed      int
	Evaluators  []reportEvaluator
	Cases       []reportCase
	Gated       bool
	Gates       []gateResult
	GatesFailed int
	Dataset     *datasetSummary
	// Calibration is evalctl calibrate's section (calibrate_report.go); nil for run.
	Calibration *reportCalibration
}

type reportEvaluator struct {
	Name, Type                 string
	Version, EvaluatorType     string // provenance (docs/contract.md §24)
	Cases, Passed, Failed      int
	Skipped, Errors, Scored    int
	FailingCases               int
	Rate, RateCI, Mean, MeanCI string
	HasRate, HasMean           bool
	PassClass                  string  // good, fair or bad: the colour of the rate
	RateX, RateLoX, RateWidth  float64 // the interval bar, in SVG units over 0..200
	Histogram                  []histBar
	HistMax                    int
	// Cost is the evaluator's judge spend in words ("" without a judge).
	Cost  string
	worst float64
}

// histBar is one bin of the score histogram, stacked: the cases that
// passed (green) under those that failed (red).
type histBar struct {
	X, W         float64
	YPass, HPass float64
	YFail, HFail float64
	Label        string
}

type reportCase struct {
	Evaluator   string
	Status      string
	SpanName    string
	TraceID     string
	SpanID      string
	Link        string
	Score       string
	Threshold   string
	Reason      string
	HasExpected bool
	Rows        []trajectoryRow
	Divergence  int // 1-based step of the first divergence; 0 when the steps agree
	DivergeNote string
	score       float64
}

type trajectoryRow struct {
	Step             int
	Expected, Actual string
	Diverges         bool
	After            bool // after the first divergence
}

func writeReport(w io.Writer, s *summary, gates []gateResult, traceURL string) error {
	return reportTmpl.Execute(w, reportPageOf(s, gates, traceURL))
}

func reportPageOf(s *summary, gates []gateResult, traceURL string) reportPage {
	page := reportPage{Evaluations: len(s.results), Failed: len(s.failures), Gated: gates != nil, Gates: gates, GatesFailed: gatesFailed(gates)}
	page.Dataset = s.dataset
	failing := map[string]int{}
	for _, r := range s.results {
		if r.Status == evaluators.StatusPassed || r.Status == evaluators.StatusSkipped {
			continue
		}
		failing[r.Evaluator]++
		page.Cases = append(page.Cases, reportCaseOf(r, traceURL))
	}
	for _, e := range s.rows() {
		page.Evaluators = append(page.Evaluators, reportEvaluatorOf(e, failing[e.Name]))
	}
	// Worst first: the lowest pass rate (an evaluator with none, after those
	// with one), then the lowest score; errors before failures of equal score.
	sort.SliceStable(page.Evaluators, func(i, j int) bool {
		a, b := page.Evaluators[i], page.Evaluators[j]
		if a.HasRate != b.HasRate {
			return a.HasRate
		}
		return a.worst < b.worst
	})
	sort.SliceStable(page.Cases, func(i, j int) bool { return page.Cases[i].score < page.Cases[j].score })
	return page
}

func reportEvaluatorOf(e *evaluatorSummary, failing int) reportEvaluator {
	re := reportEvaluator{
		Name: e.Name, Type: e.Type, Version: e.Version, EvaluatorType: e.EvaluatorType, Cases: e.Cases, Passed: e.Passed, Failed: e.Failed,
		Skipped: e.Skipped, Errors: e.Errors, Scored: len(e.scores), FailingCases: failing,
		Rate: "—", RateCI: "no scored case", Mean: "—", MeanCI: "", worst: math.Inf(1),
	}
	if e.PassRate != nil {
		re.HasRate = true
		re.worst = *e.PassRate
		re.Rate = fmt.Sprintf("%.1f %%", 100**e.PassRate)
		re.RateCI = fmt.Sprintf("95 %% CI %.1f – %.1f %%", 100*e.PassRateCI[0], 100*e.PassRateCI[1])
		re.RateX = 200 * *e.PassRate
		re.RateLoX = 200 * e.PassRateCI[0]
		re.RateWidth = 200 * (e.PassRateCI[1] - e.PassRateCI[0])
		switch {
		case e.Failed == 0:
			re.PassClass = "good"
		case *e.PassRate >= 0.8:
			re.PassClass = "fair"
		default:
			re.PassClass = "bad"
		}
	}
	if e.judge != "" {
		re.Cost = "judge " + e.judge + ": no call"
		if js := e.Judge; js != nil {
			re.Cost = fmt.Sprintf("judge %s: %d calls, %d input + %d output tokens, cost %s", js.Judge, js.Calls, js.InputTokens, js.OutputTokens, costText(js))
		}
	}
	if e.MeanScore != nil {
		re.HasMean = true
		re.Mean = fmt.Sprintf("%.3f", *e.MeanScore)
		re.MeanCI = fmt.Sprintf("95 %% CI %.3f – %.3f", e.MeanScoreCI[0], e.MeanScoreCI[1])
	}
	// Ten bins over [0, 1]; a score of exactly 1 goes into the last.
	var pass, fail [10]int
	for i, x := range e.scores {
		bin := min(9, max(0, int(x*10)))
		if e.passed[i] {
			pass[bin]++
		} else {
			fail[bin]++
		}
	}
	for i := range pass {
		re.HistMax = max(re.HistMax, pass[i]+fail[i])
	}
	const plotH, barW = 60.0, 20.0
	scale := 0.0
	if re.HistMax > 0 {
		scale = plotH / float64(re.HistMax)
	}
	for i := range pass {
		hp, hf := scale*float64(pass[i]), scale*float64(fail[i])
		re.Histogram = append(re.Histogram, histBar{
			X: float64(i)*barW + 1, W: barW - 2,
			YPass: plotH - hp, HPass: hp, YFail: plotH - hp - hf, HFail: hf,
			Label: fmt.Sprintf("score %.1f–%.1f: %d passed, %d failed", float64(i)/10, float64(i+1)/10, pass[i], fail[i]),
		})
	}
	return re
}

func reportCaseOf(r caseResult, traceURL string) reportCase {
	rc := reportCase{
		Evaluator: r.Evaluator, Status: string(r.Status), SpanName: r.SpanName, TraceID: r.TraceID, SpanID: r.SpanID,
		Link: traceLink(traceURL, r.TraceID, r.SpanID), Reason: r.Reason, HasExpected: r.HasExpected,
		Threshold: fmt.Sprintf("%.3g", r.Threshold), score: r.Score,
	}
	if r.Status == evaluators.StatusFailed {
		rc.Score = fmt.Sprintf("%.3g", r.Score)
	} else {
		rc.score = -1 // errors and timeouts have no score: list them first
	}
	if !r.HasExpected && len(r.Actual) == 0 {
		return rc
	}
	d := firstDivergence(r.Expected, r.Actual, r.HasExpected)
	n := max(len(r.Expected), len(r.Actual))
	for i := range n {
		row := trajectoryRow{Step: i + 1, Diverges: i == d, After: d >= 0 && i > d}
		if i < len(r.Expected) {
			row.Expected = expectedCallText(r.Expected[i])
		}
		if i < len(r.Actual) {
			row.Actual = actualCallText(r.Actual[i])
		}
		rc.Rows = append(rc.Rows, row)
	}
	if d >= 0 {
		rc.Divergence = d + 1
	} else if r.HasExpected {
		rc.DivergeNote = "the steps agree by name and arguments; see the reason"
	}
	return rc
}

// firstDivergence is the first step where the actual call is not the
// expected one: another tool, arguments that differ from the expected ones
// (compared as JSON, expected keys only), or one list ending early. It
// reads the trajectory literally, step by step; the evaluator's own
// matching (fuzzy arguments, any order) is in the reason. -1 when none.
func firstDivergence(exp []adapter.ExpectedCall, act []adapter.ToolCall, hasExpected bool) int {
	if !hasExpected {
		return -1
	}
	for i := range min(len(exp), len(act)) {
		if exp[i].Name != act[i].Name {
			return i
		}
		if exp[i].HasArguments && !argsCover(exp[i].Arguments, act[i].Arguments) {
			return i
		}
	}
	if len(exp) != len(act) {
		return min(len(exp), len(act))
	}
	return -1
}

// argsCover: every expected argument is present with an equal JSON value.
func argsCover(exp, act map[string]any) bool {
	for k, v := range exp {
		a, ok := act[k]
		if !ok || !jsonEqual(v, a) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return v
		}
		var out any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func expectedCallText(c adapter.ExpectedCall) string {
	if !c.HasArguments {
		return c.Name + "(…)"
	}
	return c.Name + "(" + argsText(c.Arguments) + ")"
}

func actualCallText(c adapter.ToolCall) string {
	args := c.RawArguments
	if c.Arguments != nil {
		args = argsText(c.Arguments)
	}
	s := c.Name + "(" + clip(args, 200) + ")"
	if c.Errored {
		s += " ✗ " + clip(c.ErrorMessage, 120)
	}
	return s
}

func argsText(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return clip(strings.TrimSuffix(strings.TrimPrefix(string(b), "{"), "}"), 200)
}

func clip(s string, n int) string { return textutil.Ellipsis(s, n) }
