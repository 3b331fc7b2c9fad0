package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evalbridge/evalbridge/engine"
	"github.com/evalbridge/evalbridge/evaluators"
)

// evaluatorSummary counts one evaluator instance's results.
type evaluatorSummary struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Cases   int    `json:"cases"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Errors counts `error` and `timeout` results, so that cases = passed +
	// failed + skipped + errors (contract section 7); Timeouts is the part
	// of Errors that timed out.
	Errors    int      `json:"errors"`
	Timeouts  int      `json:"timeouts"`
	MeanScore *float64 `json:"mean_score"`

	scoreSum float64
	scored   int
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

type summary struct {
	order    []string
	byName   map[string]*evaluatorSummary
	failures []failure
}

func newSummary(insts []*evaluators.Instance) *summary {
	s := &summary{byName: map[string]*evaluatorSummary{}}
	for _, in := range insts {
		s.order = append(s.order, in.Name)
		s.byName[in.Name] = &evaluatorSummary{Name: in.Name, Type: in.Type}
	}
	return s
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
				e.scoreSum += r.Score
				e.scored++
			}
		}
	}
}

func (s *summary) anyFailed() bool { return len(s.failures) > 0 }

func (s *summary) rows() []*evaluatorSummary {
	out := make([]*evaluatorSummary, 0, len(s.order))
	for _, n := range s.order {
		e := s.byName[n]
		if e.scored > 0 {
			m := e.scoreSum / float64(e.scored)
			e.MeanScore = &m
		}
		out = append(out, e)
	}
	return out
}

func (s *summary) writeText(w io.Writer) error {
	if len(s.failures) > 0 {
		fmt.Fprintln(w, "Failures:")
		for _, f := range s.failures {
			fmt.Fprintf(w, "  %s  trace %s  span %s (%s)  score %.4g < %.4g: %s\n",
				f.Evaluator, f.TraceID, f.SpanID, f.SpanName, f.Score, f.Threshold, f.Reason)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EVALUATOR\tTYPE\tCASES\tPASSED\tFAILED\tSKIPPED\tERRORS\tMEAN SCORE\t")
	for _, e := range s.rows() {
		mean := "-"
		if e.MeanScore != nil {
			mean = fmt.Sprintf("%.3f", *e.MeanScore)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
			e.Name, e.Type, e.Cases, e.Passed, e.Failed, e.Skipped, e.Errors, mean)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.failures) > 0 {
		_, err := fmt.Fprintf(w, "\n%d evaluation(s) failed\n", len(s.failures))
		return err
	}
	_, err := fmt.Fprintln(w, "\nall evaluations passed")
	return err
}

func (s *summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Evaluators []*evaluatorSummary `json:"evaluators"`
		Failures   []failure           `json:"failures"`
		Failed     int                 `json:"failed"`
	}{s.rows(), append([]failure{}, s.failures...), len(s.failures)})
}
