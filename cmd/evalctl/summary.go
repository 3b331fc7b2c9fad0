package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// evaluatorSummary counts one evaluator instance's results.
type evaluatorSummary struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Version and EvaluatorType are the instance's provenance
	// (docs/contract.md §24; evaluators.Instance.Version): the baseline
	// gate compares versions, and calibrate and dataset read them.
	Version       string `json:"evaluator_version"`
	EvaluatorType string `json:"evaluator_type"`
	Cases         int    `json:"cases"`
	Passed        int    `json:"passed"`
	Failed        int    `json:"failed"`
	Skipped       int    `json:"skipped"`
	// Errors counts `error` and `timeout` results, so that cases = passed +
	// failed + skipped + errors (docs/contract.md §7); Timeouts is the part
	// of Errors that timed out.
	Errors    int      `json:"errors"`
	Timeouts  int      `json:"timeouts"`
	MeanScore *float64 `json:"mean_score"`
	// MeanScoreCI is the 95 % bootstrap interval of the mean score (seeded:
	// the same input gives the same interval).
	MeanScoreCI *[2]float64 `json:"mean_score_ci"`
	// PassRate is passed / (passed + failed): skipped and errored cases say
	// nothing about quality and are left out. With no scored case it is
	// null, and so is PassRateCI; a gate on such an evaluator fails.
	PassRate *float64 `json:"pass_rate"`
	// PassRateCI is the 95 % Wilson interval of PassRate.
	PassRateCI *[2]float64 `json:"pass_rate_ci"`
	// Judge is what the evaluator's judge calls cost (cost.go); absent for
	// evaluators without a judge, and for judge evaluators that made no call.
	Judge *judgeSpend `json:"judge,omitempty"`

	judge  string // the configured judge, "" when none
	scores []float64
	passed []bool // passed[i]: scores[i] passed (the histogram's colours)
}

// failure is one failed evaluation, listed so a CI log says what to look at.
type failure struct {
	Evaluator string  `json:"evaluator"`
	TraceID   string  `json:"trace_id"`
	SpanID    string  `json:"span_id"`
	SpanName  string  `json:"span_name"`
	Score     float64 `json:"score"`
	Threshold float64 `json:"threshold"`
	Reason    string  `json:"reason"`
}

// caseResult is one (evaluator, case) result, kept for --junit and --report.
type caseResult struct {
	Evaluator string
	TraceID   string
	SpanID    string
	Level     adapter.Level // the case's level (calibrate finds a trace's agent case by it)
	SpanName  string
	Status    evaluators.Status
	Score     float64
	Threshold float64
	Reason    string
	// The tool trajectories, kept for results that did not pass (the report
	// shows them side by side): the expectation the evaluator compared
	// with, when there is one, and the calls made.
	Expected    []adapter.ExpectedCall
	HasExpected bool
	Actual      []adapter.ToolCall
}

type summary struct {
	order    []string
	byName   map[string]*evaluatorSummary
	failures []failure
	results  []caseResult
	// cfgExpected is each evaluator's `expected:` option, the expectation
	// it uses when a case carries no eval.expected.tool_calls.
	cfgExpected map[string][]adapter.ExpectedCall
	// noCase are the inputs whose spans gave no case to score.
	noCase []string
	// observe, when set, sees each trace's spans and report once scored
	// (dataset.go: capture and the dataset verdict).
	observe func([]adapter.SpanRef, engine.Report)
	// dataset is the verdict on the pinned cases of --dataset.
	dataset *datasetSummary
}

func newSummary(insts []*evaluators.Instance) *summary {
	s := &summary{byName: map[string]*evaluatorSummary{}, cfgExpected: map[string][]adapter.ExpectedCall{}}
	for _, in := range insts {
		s.order = append(s.order, in.Name)
		s.byName[in.Name] = &evaluatorSummary{Name: in.Name, Type: in.Type, Version: in.Version,
			EvaluatorType: in.EvaluatorType, judge: in.Judge}
	}
	return s
}

// setExpectations records the evaluators' configured `expected:` options.
// The config was validated, so a parse error cannot happen; such an entry
// would only lack a trajectory in the report.
func (s *summary) setExpectations(cfgs []evaluators.Config) {
	for i := range cfgs {
		v, ok := cfgs[i].Options["expected"]
		if !ok || v == nil {
			continue
		}
		if calls, err := adapter.ParseExpectedCalls(v); err == nil {
			s.cfgExpected[cfgs[i].InstanceName()] = calls
		}
	}
}

func (s *summary) add(rep engine.Report) {
	for _, ev := range rep.Evaluations {
		for _, r := range ev.Results {
			e := s.byName[r.Name]
			if e == nil {
				continue
			}
			e.Cases++
			switch r.Status {
			case evaluators.StatusPassed:
				e.Passed++
			case evaluators.StatusFailed:
				e.Failed++
				s.failures = append(s.failures, failure{
					Evaluator: r.Name, TraceID: ev.Case.TraceID.String(), SpanID: ev.Case.SpanID.String(),
					SpanName: ev.Case.SpanName, Score: r.Score, Threshold: r.Threshold, Reason: r.Reason,
				})
			case evaluators.StatusSkipped:
				e.Skipped++
			case evaluators.StatusError:
				e.Errors++
			case evaluators.StatusTimeout:
				e.Errors++
				e.Timeouts++
			}
			if r.Scored() {
				e.scores = append(e.scores, r.Score)
				e.passed = append(e.passed, r.Status == evaluators.StatusPassed)
			}
			cr := caseResult{
				Evaluator: r.Name, TraceID: ev.Case.TraceID.String(), SpanID: ev.Case.SpanID.String(), Level: ev.Case.Level,
				SpanName: ev.Case.SpanName, Status: r.Status, Score: r.Score, Threshold: r.Threshold, Reason: r.Reason,
			}
			if r.Status != evaluators.StatusPassed && r.Status != evaluators.StatusSkipped {
				cr.Actual = ev.Case.ToolCalls
				if ev.Case.Expected.HasToolCalls {
					cr.Expected, cr.HasExpected = ev.Case.Expected.ToolCalls, true
				} else if exp, ok := s.cfgExpected[r.Name]; ok {
					cr.Expected, cr.HasExpected = exp, true
				}
			}
			s.results = append(s.results, cr)
		}
	}
}

func (s *summary) anyFailed() bool { return len(s.failures) > 0 }

// unscored says which results tell nothing (no false green, issue 19): an
// evaluator that scored no case, one whose errors and timeouts outnumber
// its scored cases, and the inputs with spans but no case (s.noCase). The
// run then fails unless --allow-unscored.
func (s *summary) unscored() []string {
	var out []string
	for _, n := range s.order {
		e := s.byName[n]
		scored := e.Passed + e.Failed
		switch {
		case scored == 0:
			out = append(out, fmt.Sprintf("evaluator %s scored no case (%d case(s): %d skipped, %d error(s) of which %d timeout(s))",
				e.Name, e.Cases, e.Skipped, e.Errors, e.Timeouts))
		case e.Errors > scored:
			out = append(out, fmt.Sprintf("evaluator %s: %d error(s) and timeout(s) outnumber its %d scored case(s)",
				e.Name, e.Errors, scored))
		}
	}
	return append(out, s.noCase...)
}

func (s *summary) rows() []*evaluatorSummary {
	out := make([]*evaluatorSummary, 0, len(s.order))
	for _, n := range s.order {
		e := s.byName[n]
		e.MeanScore, e.MeanScoreCI, e.PassRate, e.PassRateCI = nil, nil, nil, nil
		if len(e.scores) > 0 {
			sum := 0.0
			for _, x := range e.scores {
				sum += x
			}
			m := sum / float64(len(e.scores))
			e.MeanScore = &m
			lo, hi, _ := bootstrapMeanCI(e.Name, e.scores)
			e.MeanScoreCI = &[2]float64{lo, hi}
		}
		if n := e.Passed + e.Failed; n > 0 {
			p := float64(e.Passed) / float64(n)
			lo, hi, _ := wilson(e.Passed, n)
			e.PassRate, e.PassRateCI = &p, &[2]float64{lo, hi}
		}
		out = append(out, e)
	}
	return out
}

// writeText writes the failures, the table and, when gates is not nil, the
// gates' verdicts, which then decide the last line.
func (s *summary) writeText(w io.Writer, gates []gateResult) error {
	if len(s.failures) > 0 {
		fmt.Fprintln(w, "Failures:")
		for _, f := range s.failures {
			fmt.Fprintf(w, "  %s  trace %s  span %s (%s)  score %.4g < %.4g: %s\n",
				f.Evaluator, f.TraceID, f.SpanID, f.SpanName, f.Score, f.Threshold, f.Reason)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// The intervals come after the columns of docs/contract.md §7, so a
	// script reading the first eight columns keeps working.
	judges := s.hasJudges()
	head := "EVALUATOR\tTYPE\tCASES\tPASSED\tFAILED\tSKIPPED\tERRORS\tMEAN SCORE\tMEAN 95% CI\tPASS RATE\tPASS RATE 95% CI\t"
	if judges {
		head += "JUDGE CALLS\tCOST\t"
	}
	head += "VERSION\t"
	fmt.Fprintln(tw, head)
	for _, e := range s.rows() {
		cost := ""
		if judges {
			switch {
			case e.judge == "":
				cost = "-\t-\t"
			case e.Judge == nil:
				cost = "0\t0\t"
			default:
				cost = fmt.Sprintf("%d\t%s\t", e.Judge.Calls, costText(e.Judge))
			}
		}
		mean, rate := "-", "-"
		if e.MeanScore != nil {
			mean = fmt.Sprintf("%.3f", *e.MeanScore)
		}
		if e.PassRate != nil {
			rate = fmt.Sprintf("%.3f", *e.PassRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s%s\t\n",
			e.Name, e.Type, e.Cases, e.Passed, e.Failed, e.Skipped, e.Errors, mean, ciText(e.MeanScoreCI), rate, ciText(e.PassRateCI), cost,
			e.Version)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s.writeUnscored(w)
	if s.dataset != nil {
		s.dataset.writeText(w)
	}
	if gates != nil {
		fmt.Fprintln(w, "\nGates:")
		for _, g := range gates {
			verdict := "ok  "
			if !g.OK {
				verdict = "FAIL"
			}
			fmt.Fprintf(w, "  %s %-13s %s\n", verdict, g.Gate, g.Message)
		}
		n := gatesFailed(gates)
		if n > 0 {
			_, err := fmt.Fprintf(w, "\n%d of %d gate(s) failed (%d evaluation(s) failed)\n", n, len(gates), len(s.failures))
			return err
		}
		_, err := fmt.Fprintf(w, "\nall %d gate(s) hold (%d evaluation(s) failed)\n", len(gates), len(s.failures))
		return err
	}
	if len(s.failures) > 0 {
		_, err := fmt.Fprintf(w, "\n%d evaluation(s) failed\n", len(s.failures))
		return err
	}
	if u := s.unscored(); len(u) > 0 {
		_, err := fmt.Fprintf(w, "\nnothing failed, but %d result(s) say nothing: see \"Not scored\" above\n", len(u))
		return err
	}
	_, err := fmt.Fprintln(w, "\nall evaluations passed")
	return err
}

// writeUnscored lists what unscored found, before the last line.
func (s *summary) writeUnscored(w io.Writer) {
	if u := s.unscored(); len(u) > 0 {
		fmt.Fprintln(w, "\nNot scored:")
		for _, m := range u {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
}

func ciText(ci *[2]float64) string {
	if ci == nil {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", ci[0], ci[1])
}

// writeJSON writes the summary; "gates" and "gates_failed" are there only
// when a gate option was given (gates not nil).
func (s *summary) writeJSON(w io.Writer, gates []gateResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	var failedGates *int
	if gates != nil {
		n := gatesFailed(gates)
		failedGates = &n
	}
	return enc.Encode(struct {
		Evaluators  []*evaluatorSummary `json:"evaluators"`
		Failures    []failure           `json:"failures"`
		Failed      int                 `json:"failed"`
		Unscored    []string            `json:"unscored"`
		Gates       []gateResult        `json:"gates,omitempty"`
		GatesFailed *int                `json:"gates_failed,omitempty"`
		Dataset     *datasetSummary     `json:"dataset,omitempty"`
	}{s.rows(), append([]failure{}, s.failures...), len(s.failures), append([]string{}, s.unscored()...), gates, failedGates, s.dataset})
}
