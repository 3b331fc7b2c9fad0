package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Gates (docs/contract.md §7, "Gate and report options") decide the exit
// status from the intervals, not from single failures: a noisy suite with a
// few failing cases passes, a clear miss or a clear regression does not.

// minPassRates is the repeatable --min-pass-rate NAME=R flag, in the order given.
type minPassRates []minPassRate

type minPassRate struct {
	name string
	bar  float64
}

func (m *minPassRates) String() string {
	if m == nil {
		return ""
	}
	parts := make([]string, len(*m))
	for i, g := range *m {
		parts[i] = fmt.Sprintf("%s=%g", g.name, g.bar)
	}
	return strings.Join(parts, ",")
}

func (m *minPassRates) Set(v string) error {
	name, r, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=R, e.g. booking_flow=0.9", v)
	}
	bar, err := strconv.ParseFloat(r, 64)
	// Written as !(in range) so that NaN is out of range too.
	if err != nil || !(bar >= 0 && bar <= 1) {
		return fmt.Errorf("%q: R must be a number within [0, 1]", v)
	}
	*m = append(*m, minPassRate{name: name, bar: bar})
	return nil
}

// gateResult is one gate's verdict on one evaluator.
type gateResult struct {
	Gate      string `json:"gate"` // min_pass_rate or baseline
	Evaluator string `json:"evaluator"`
	OK        bool   `json:"ok"`
	Message   string `json:"message"`
}

// baselineEvaluator is what a gate reads of an earlier --summary json.
type baselineEvaluator struct {
	Name string `json:"name"`
	// Version is the evaluator's version in the baseline run ("" in a
	// summary written before versions existed: then compared as before).
	Version    string      `json:"evaluator_version"`
	Passed     int         `json:"passed"`
	Failed     int         `json:"failed"`
	PassRate   *float64    `json:"pass_rate"`
	PassRateCI *[2]float64 `json:"pass_rate_ci"`
}

// readBaseline reads an earlier `--summary json`. A summary written before
// the intervals existed still works: the rate and interval are computed
// from its passed and failed counts.
func readBaseline(path string) (map[string]baselineEvaluator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w", path, err)
	}
	var doc struct {
		Evaluators *[]baselineEvaluator `json:"evaluators"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("--baseline %s: not an evalctl --summary json: %w", path, err)
	}
	if doc.Evaluators == nil {
		return nil, fmt.Errorf("--baseline %s: not an evalctl --summary json: no \"evaluators\" list", path)
	}
	out := make(map[string]baselineEvaluator, len(*doc.Evaluators))
	for _, e := range *doc.Evaluators {
		if e.Name == "" {
			return nil, fmt.Errorf("--baseline %s: an evaluator without a name", path)
		}
		if e.PassRate == nil || e.PassRateCI == nil {
			if n := e.Passed + e.Failed; n > 0 {
				p := float64(e.Passed) / float64(n)
				lo, hi, _ := wilson(e.Passed, n)
				e.PassRate, e.PassRateCI = &p, &[2]float64{lo, hi}
			} else if e.PassRate != nil {
				// A rate without counts or interval: taken as exact.
				e.PassRateCI = &[2]float64{*e.PassRate, *e.PassRate}
			}
		}
		if e.PassRate != nil {
			p, ci := *e.PassRate, *e.PassRateCI
			// Written as !(in range) so that NaN is out of range too; a
			// percentage (95 for 0.95) would otherwise gate on nonsense.
			if !(p >= 0 && p <= 1 && ci[0] >= 0 && ci[0] <= p && p <= ci[1] && ci[1] <= 1) {
				return nil, fmt.Errorf("--baseline %s: evaluator %q: pass_rate %v and pass_rate_ci %v must be fractions with low ≤ rate ≤ high",
					path, e.Name, p, ci)
			}
		}
		out[e.Name] = e
	}
	return out, nil
}

func rateText(p *float64, ci *[2]float64) string {
	if p == nil || ci == nil {
		return "none (no scored case)"
	}
	return fmt.Sprintf("%.3f %s", *p, ciText(ci))
}

// checkMinPassRate fails when the interval's upper bound is below the bar:
// even the most favourable reading of the data misses it. An evaluator
// with no scored case fails: a gate must not pass on nothing.
func checkMinPassRate(e *evaluatorSummary, g minPassRate) gateResult {
	r := gateResult{Gate: "min_pass_rate", Evaluator: e.Name}
	switch {
	case e.PassRate == nil:
		r.Message = fmt.Sprintf("%s: no scored case (%d cases: %d skipped, %d errors), so no pass rate to hold against %g",
			e.Name, e.Cases, e.Skipped, e.Errors, g.bar)
	case e.PassRateCI[1] < g.bar:
		r.Message = fmt.Sprintf("%s: pass rate %s is below the bar %g (upper bound %.3f < %g; %d of %d passed)",
			e.Name, rateText(e.PassRate, e.PassRateCI), g.bar, e.PassRateCI[1], g.bar, e.Passed, e.Passed+e.Failed)
	default:
		r.OK = true
		r.Message = fmt.Sprintf("%s: pass rate %s holds against %g (upper bound %.3f ≥ %g)",
			e.Name, rateText(e.PassRate, e.PassRateCI), g.bar, e.PassRateCI[1], g.bar)
	}
	return r
}

// checkBaseline fails when the pass rate dropped and the new interval lies
// wholly below the baseline's: a drift inside the noise of either run passes.
// An evaluator whose version differs from the baseline's means something
// else now (docs/contract.md §24): it is not comparable and fails, unless
// allowVersionChange, when it is compared and the line says so.
func checkBaseline(e *evaluatorSummary, base baselineEvaluator, inBase bool, path string, allowVersionChange bool) (r gateResult) {
	r = gateResult{Gate: "baseline", Evaluator: e.Name}
	changed := inBase && base.Version != "" && base.Version != e.Version
	if changed && !allowVersionChange {
		r.Message = fmt.Sprintf("%s: not comparable: version changed: %s -> %s (the evaluator means something else now; "+
			"--allow-version-change compares anyway)", e.Name, base.Version, e.Version)
		return r
	}
	if changed {
		defer func() { r.Message += fmt.Sprintf(" (version changed: %s -> %s)", base.Version, e.Version) }()
	}
	now := rateText(e.PassRate, e.PassRateCI)
	switch {
	case !inBase:
		r.OK = true
		r.Message = fmt.Sprintf("%s: not in the baseline %s, not compared (pass rate now %s)", e.Name, path, now)
	case base.PassRate == nil:
		r.OK = true
		r.Message = fmt.Sprintf("%s: the baseline had no scored case, not compared (pass rate now %s)", e.Name, now)
	case e.PassRate == nil:
		r.Message = fmt.Sprintf("%s: no scored case now (%d cases: %d skipped, %d errors); baseline pass rate %s",
			e.Name, e.Cases, e.Skipped, e.Errors, rateText(base.PassRate, base.PassRateCI))
	case *e.PassRate < *base.PassRate && e.PassRateCI[1] < base.PassRateCI[0]:
		r.Message = fmt.Sprintf("%s: pass rate dropped from %s (baseline) to %s (now); the intervals do not overlap",
			e.Name, rateText(base.PassRate, base.PassRateCI), now)
	default:
		r.OK = true
		r.Message = fmt.Sprintf("%s: pass rate %s (now) against %s (baseline): no clear drop",
			e.Name, now, rateText(base.PassRate, base.PassRateCI))
	}
	return r
}

// gateSet is the gates of one run.
type gateSet struct {
	minPass      minPassRates
	baselinePath string
	baseline     map[string]baselineEvaluator
	// datasetDir is --dataset: its pinned cases are a gate (dataset_run.go).
	datasetDir string
	// allowVersionChange compares evaluators whose version changed since
	// the baseline instead of failing their gate.
	allowVersionChange bool
}

func (g *gateSet) active() bool {
	return len(g.minPass) > 0 || g.baselinePath != "" || g.datasetDir != ""
}

// checkNames is bad usage when --min-pass-rate names an evaluator the
// config does not have: a typo must not turn a gate into a no-op.
func (g *gateSet) checkNames(s *summary) error {
	for _, m := range g.minPass {
		if _, ok := s.byName[m.name]; !ok {
			return fmt.Errorf("--min-pass-rate %s=%g: no evaluator named %q in the config (have: %s)",
				m.name, m.bar, m.name, strings.Join(s.order, ", "))
		}
	}
	return nil
}

// evaluate runs every gate over the summary's rows.
func (g *gateSet) evaluate(s *summary) []gateResult {
	rows := s.rows()
	var out []gateResult
	for _, m := range g.minPass {
		out = append(out, checkMinPassRate(s.byName[m.name], m))
	}
	if g.baselinePath != "" {
		for _, e := range rows {
			base, ok := g.baseline[e.Name]
			out = append(out, checkBaseline(e, base, ok, g.baselinePath, g.allowVersionChange))
		}
		// A renamed or removed evaluator escapes the comparison; say so.
		var gone []string
		for name := range g.baseline {
			if _, ok := s.byName[name]; !ok {
				gone = append(gone, name)
			}
		}
		slices.Sort(gone)
		for _, name := range gone {
			out = append(out, gateResult{Gate: "baseline", Evaluator: name, OK: true,
				Message: fmt.Sprintf("%s: in the baseline %s but not in this config, not compared", name, g.baselinePath)})
		}
	}
	if s.dataset != nil {
		out = append(out, s.dataset.gate())
	}
	return out
}

func gatesFailed(rs []gateResult) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}
