package main

import (
	"fmt"
	"io"
)

// The calibration section of `evalctl calibrate --report`: per evaluator,
// its verdict, kappa's interval against --min-kappa, the confusion matrix
// and the cases where it and the person disagree (what to read before
// writing few-shot examples).

type reportCalibration struct {
	MinKappa   float64
	MinKappaX  float64 // --min-kappa on the interval bar
	Unfit      int
	Calibrated int
	Evaluators []reportCalibrated
}

type reportCalibrated struct {
	Name, Type, Version string
	Calibrated, Fit     bool
	Verdict             string
	Pairs, Labels       int
	Accuracy, Kappa     string
	KappaCI             string
	Caught, Passed      string
	Threshold, Best     string
	HasCI               bool
	KappaX, LoX, WidthX float64 // the interval bar over kappa's [-1, 1], in SVG units 0..200
	// Confusion: [machine][human], 0 pass.
	Confusion     [2][2]int
	Undefined     []string
	Disagreements []reportDisagreement
	More          int // disagreements not listed
}

type reportDisagreement struct {
	TraceID, SpanID, SpanName, Link string
	Machine, Human, Score           string
	Reason, Critique                string
}

// maxListedDisagreements bounds the report's list per evaluator.
const maxListedDisagreements = 50

func writeCalibrationReport(w io.Writer, s *summary, cals []calibration, minKappa float64, traceURL string) error {
	page := reportPageOf(s, nil, traceURL)
	rc := &reportCalibration{MinKappa: minKappa, MinKappaX: kappaX(minKappa)}
	for i := range cals {
		c := &cals[i]
		rc.Evaluators = append(rc.Evaluators, reportCalibratedOf(c, minKappa, traceURL))
		if c.Calibrated {
			rc.Calibrated++
			if !c.FitToGate {
				rc.Unfit++
			}
		}
	}
	page.Calibration = rc
	return reportTmpl.Execute(w, page)
}

// kappaX places a kappa in [-1, 1] on the 200-unit bar.
func kappaX(k float64) float64 { return 100 * (max(-1, min(1, k)) + 1) }

func reportCalibratedOf(c *calibration, minKappa float64, traceURL string) reportCalibrated {
	num := func(x *float64) string {
		if x == nil {
			return "—"
		}
		return fmt.Sprintf("%.3f", *x)
	}
	rc := reportCalibrated{
		Name: c.Name, Type: c.Type, Version: c.Version, Calibrated: c.Calibrated, Fit: c.FitToGate,
		Verdict: c.verdict(minKappa), Pairs: c.Pairs, Labels: c.Labels,
		Accuracy: num(c.Accuracy), Kappa: num(c.Kappa), KappaCI: "—",
		Confusion: c.matrix, Threshold: fmt.Sprintf("%g", c.Threshold), Best: "—",
		Caught: "—", Passed: "—",
	}
	if c.KappaCI != nil {
		rc.HasCI = true
		rc.KappaCI = fmt.Sprintf("95 %% CI %.3f – %.3f", c.KappaCI[0], c.KappaCI[1])
		rc.KappaX, rc.LoX = kappaX(*c.Kappa), kappaX(c.KappaCI[0])
		rc.WidthX = kappaX(c.KappaCI[1]) - rc.LoX
	}
	if c.Caught != nil {
		rc.Caught = fmt.Sprintf("%.1f %% (%d of %d)", 100**c.Caught, c.matrix[1][1], c.humanFailures)
	}
	if c.Passed != nil {
		rc.Passed = fmt.Sprintf("%.1f %% (%d of %d)", 100**c.Passed, c.matrix[0][0], c.humanPasses)
	}
	if c.KappaAtThreshold != nil {
		rc.Threshold += fmt.Sprintf(" (kappa %.3f)", *c.KappaAtThreshold)
	}
	if c.BestThreshold != nil {
		rc.Best = fmt.Sprintf("%g (kappa %.3f)", *c.BestThreshold, *c.KappaAtBest)
	}
	if c.Calibrated {
		for _, f := range sortedKeys(c.Undefined) {
			rc.Undefined = append(rc.Undefined, f+": "+c.Undefined[f])
		}
	}
	for i, d := range c.disagreements {
		if i == maxListedDisagreements {
			rc.More = len(c.disagreements) - i
			break
		}
		rc.Disagreements = append(rc.Disagreements, reportDisagreement{
			TraceID: d.TraceID, SpanID: d.SpanID, SpanName: d.SpanName, Link: traceLink(traceURL, d.TraceID, d.SpanID),
			Machine: d.Machine, Human: d.Human, Score: fmt.Sprintf("%.3g", d.Score), Reason: d.Reason, Critique: d.Critique,
		})
	}
	return rc
}
