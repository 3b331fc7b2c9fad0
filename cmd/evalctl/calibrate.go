package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/stats"
)

// `evalctl calibrate` (docs/contract.md §25): how well each evaluator
// agrees with human labels of the same cases, and whether it agrees well
// enough to gate anything.

// defaultMinKappa is --min-kappa's default: 0.6 is the conventional floor
// of "substantial" agreement (Landis and Koch 1977: 0.61–0.80).
const defaultMinKappa = 0.6

// labelPaths is the repeatable --labels flag.
type labelPaths []string

func (l *labelPaths) String() string     { return strings.Join(*l, ",") }
func (l *labelPaths) Set(v string) error { *l = append(*l, v); return nil }

// calibration is one evaluator's agreement with the human labels. Figures
// that are undefined are nil, with the reason in Undefined under the
// figure's JSON name.
type calibration struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Version string `json:"evaluator_version,omitempty"`
	// Calibrated is false when no label names the evaluator.
	Calibrated bool `json:"calibrated"`
	// Labels is how many labels name the evaluator; Pairs how many of them
	// met a passed or failed result of it.
	Labels           int                       `json:"labels"`
	Pairs            int                       `json:"pairs"`
	Accuracy         *float64                  `json:"accuracy"`
	Kappa            *float64                  `json:"kappa"`
	KappaCI          *[2]float64               `json:"kappa_ci"`
	Caught           *float64                  `json:"caught"`
	Passed           *float64                  `json:"passed"`
	Confusion        map[string]map[string]int `json:"confusion"`
	Threshold        float64                   `json:"threshold"`
	KappaAtThreshold *float64                  `json:"kappa_at_threshold"`
	BestThreshold    *float64                  `json:"best_threshold"`
	KappaAtBest      *float64                  `json:"kappa_at_best_threshold"`
	FitToGate        bool                      `json:"fit_to_gate"`
	Undefined        map[string]string         `json:"undefined,omitempty"`
	// NotPaired counts the labels naming the evaluator that made no pair, by reason.
	NotPaired map[string]int `json:"not_paired,omitempty"`

	matrix        stats.Binary // [machine][human], 0 pass
	humanFailures int
	humanPasses   int
	disagreements []disagreement
}

// disagreement is a pair where the evaluator and the person differ: what
// the report lists, to read before writing few-shot examples.
type disagreement struct {
	TraceID, SpanID, SpanName string
	Machine, Human            string
	Score                     float64
	Reason, Critique          string
}

func calibrateCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evalctl calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sc := addScoringFlags(fs, "summary format: text or json")
	var labels labelPaths
	fs.Var(&labels, "labels", "human labels `FILE`: JSON Lines {\"trace_id\", \"span_id\", \"name\", \"label\"} or OTLP/JSON logs of human gen_ai.evaluation.result records (repeatable)")
	minKappa := fs.Float64("min-kappa", defaultMinKappa, "an evaluator is fit to gate when the lower bound of kappa's 95% interval is at least this")
	reportPath := fs.String("report", "", "write a self-contained HTML report with a calibration section to FILE")
	traceURL := fs.String("trace-url", "", "link template for traces in --report, with {trace_id} and {span_id} placeholders")
	cfg := sc.parse(ctx, fs, args, stderr)
	if cfg == nil {
		return exitUsage
	}
	if len(labels) == 0 {
		fmt.Fprintln(stderr, "evalctl calibrate: --labels is required")
		return exitUsage
	}
	if *minKappa < -1 || *minKappa > 1 {
		fmt.Fprintf(stderr, "evalctl calibrate: --min-kappa %v: kappa lies in [-1, 1]\n", *minKappa)
		return exitUsage
	}
	// Read before scoring: a bad labels file should not cost a judge bill.
	lf, err := readLabels(labels)
	if err != nil {
		fmt.Fprintf(stderr, "evalctl calibrate: %v\n", err)
		return exitUsage
	}
	eng, err := engine.New(cfg, telemetry(newLogger(stderr)))
	if err != nil {
		fmt.Fprintf(stderr, "evalctl calibrate: config %s: %v\n", sc.configPath, err)
		return exitUsage
	}
	sum := newSummary(eng.Instances())
	sum.setExpectations(cfg.Evaluators)
	docs, traces, ok := startScoring(ctx, eng, sc, stdin, stderr, "no trace in the inputs: nothing to compare the labels with")
	if !ok {
		return exitUsage
	}
	defer func() { _ = eng.Shutdown(ctx) }()
	scoreInputs(ctx, eng, cfg, docs, traces, sum, stderr)
	sum.setSpend(eng.JudgeSpend())

	cals, unnamed := calibrate(eng.Instances(), sum.results, lf.labels, spanDepths(traces))
	for i := range cals {
		cals[i].decide(*minKappa)
	}
	for name, n := range unnamed {
		lf.dropped[fmt.Sprintf("labels naming %q, which is no evaluator of the config", name)] += n
	}
	for _, why := range sortedKeys(lf.dropped) {
		fmt.Fprintf(stderr, "evalctl: warning: labels: %d %s: not used\n", lf.dropped[why], why)
	}
	for _, c := range cals {
		for _, why := range sortedKeys(c.NotPaired) {
			fmt.Fprintf(stderr, "evalctl: warning: %s: %d label(s) made no pair: %s\n", c.Name, c.NotPaired[why], why)
		}
		for fig, why := range c.Undefined {
			if c.Calibrated {
				fmt.Fprintf(stderr, "evalctl: %s: %s undefined: %s\n", c.Name, fig, why)
			}
		}
	}
	if *reportPath != "" {
		if err := writeFileWith(*reportPath, func(w io.Writer) error {
			return writeCalibrationReport(w, sum, cals, *minKappa, *traceURL)
		}); err != nil {
			fmt.Fprintf(stderr, "evalctl calibrate: --report %s: %v\n", *reportPath, err)
			return exitUsage
		}
	}
	if sc.summaryFormat == "json" {
		err = writeCalibrationJSON(stdout, cals, *minKappa, len(lf.labels))
	} else {
		err = writeCalibrationText(stdout, cals, *minKappa, len(lf.labels))
	}
	if err != nil {
		fmt.Fprintf(stderr, "evalctl calibrate: summary: %v\n", err)
		return exitUsage
	}
	calibrated, unfit := 0, 0
	for _, c := range cals {
		if c.Calibrated {
			calibrated++
			if !c.FitToGate {
				unfit++
			}
		}
	}
	switch {
	case calibrated == 0:
		// No false green: a calibration that compared nothing proves nothing.
		fmt.Fprintf(stderr, "evalctl calibrate: failing: no label names an evaluator of the config (%d label(s) read)\n", len(lf.labels))
		return exitFailed
	case unfit > 0:
		return exitFailed
	}
	return exitOK
}

// spanDepths gives, per trace id, each span's depth below the root (0),
// so that a label without a span id goes to the outermost agent case.
func spanDepths(traces [][]adapter.SpanRef) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, spans := range traces {
		parent := map[string]string{}
		for _, r := range spans {
			parent[r.Span.SpanID().String()] = r.Span.ParentSpanID().String()
		}
		depth := map[string]int{}
		for id := range parent {
			d, at := 0, id
			for seen := 0; seen <= len(parent); seen++ { // a cycle (bad input) ends too
				p, ok := parent[at]
				if !ok || p == "" {
					break
				}
				d, at = d+1, p
			}
			depth[id] = d
		}
		out[spans[0].Span.TraceID().String()] = depth
	}
	return out
}

// resultKey identifies one evaluator's result on one span.
type resultKey struct{ trace, span, name string }

// calibrate pairs each label with the result of its evaluator on its span
// (without a span id: on the trace's outermost agent case) and computes
// each evaluator's agreement. A label is identified by trace, span and
// name, as in evalmetrics: the first counts; a repeat, or a later
// different label (a relabel), does not. Labels naming no instance are
// returned by name.
func calibrate(insts []*evaluators.Instance, results []caseResult, labels []humanLabel, depths map[string]map[string]int) ([]calibration, map[string]int) {
	byName := map[string]*calibration{}
	cals := make([]calibration, len(insts))
	for i, in := range insts {
		cals[i] = calibration{Name: in.Name, Type: in.Type, Threshold: in.Threshold, Version: in.Version}
		byName[in.Name] = &cals[i]
	}
	byKey := map[resultKey]*caseResult{}
	agent := map[resultKey]*caseResult{} // trace and name -> the outermost agent case's result
	for i := range results {
		r := &results[i]
		byKey[resultKey{r.TraceID, r.SpanID, r.Evaluator}] = r
		if r.Level != adapter.LevelAgent {
			continue
		}
		k := resultKey{trace: r.TraceID, name: r.Evaluator}
		if cur, ok := agent[k]; !ok || depths[r.TraceID][r.SpanID] < depths[r.TraceID][cur.SpanID] {
			agent[k] = r
		}
	}
	unnamed := map[string]int{}
	seen := map[resultKey]bool{}
	pairs := map[string]*pairSet{}
	for _, l := range labels {
		c := byName[l.Name]
		if c == nil {
			unnamed[l.Name]++
			continue
		}
		c.Labels++
		c.Calibrated = true
		var r *caseResult
		if l.SpanID.IsEmpty() {
			r = agent[resultKey{trace: l.TraceID.String(), name: l.Name}]
		} else {
			r = byKey[resultKey{l.TraceID.String(), l.SpanID.String(), l.Name}]
		}
		notPaired := func(why string) {
			if c.NotPaired == nil {
				c.NotPaired = map[string]int{}
			}
			c.NotPaired[why]++
		}
		switch {
		case r == nil && l.SpanID.IsEmpty():
			notPaired("no agent case of its trace has a result of this evaluator (a label without span_id is for the trace's agent case)")
			continue
		case r == nil:
			notPaired("its span has no result of this evaluator")
			continue
		}
		k := resultKey{r.TraceID, r.SpanID, l.Name}
		if seen[k] {
			notPaired("a label for the same span came earlier (the first counts)")
			continue
		}
		seen[k] = true
		if r.Status != evaluators.StatusPassed && r.Status != evaluators.StatusFailed {
			notPaired("the result is " + string(r.Status) + ", not passed or failed")
			continue
		}
		machinePass := r.Status == evaluators.StatusPassed
		c.matrix.Add(machinePass, l.Pass)
		ps := pairs[l.Name]
		if ps == nil {
			ps = &pairSet{}
			pairs[l.Name] = ps
		}
		ps.labels = append(ps.labels, [2]bool{machinePass, l.Pass})
		ps.scores = append(ps.scores, r.Score)
		ps.truth = append(ps.truth, l.Pass)
		if machinePass != l.Pass {
			c.disagreements = append(c.disagreements, disagreement{
				TraceID: r.TraceID, SpanID: r.SpanID, SpanName: r.SpanName, Machine: passFail(machinePass), Human: passFail(l.Pass),
				Score: r.Score, Reason: r.Reason, Critique: l.Critique,
			})
		}
	}
	for i := range cals {
		ps := pairs[cals[i].Name]
		if ps == nil {
			ps = &pairSet{}
		}
		cals[i].figures(ps)
	}
	return cals, unnamed
}

// pairSet is one evaluator's pairs: labels[i] the machine's and the
// person's verdicts (true for pass), scores[i] the machine's score and
// truth[i] the person's verdict again (the threshold sweep's input).
type pairSet struct {
	labels [][2]bool
	scores []float64
	truth  []bool
}

// pairRank orders (machine, human) verdict pairs: pass before fail.
func pairRank(p [2]bool) int {
	r := 0
	if !p[0] {
		r += 2
	}
	if !p[1] {
		r++
	}
	return r
}

func passFail(pass bool) string {
	if pass {
		return "pass"
	}
	return "fail"
}

// figures computes the agreement figures from the pairs.
func (c *calibration) figures(ps *pairSet) {
	scores, truth := ps.scores, ps.truth
	c.Undefined = map[string]string{}
	if !c.Calibrated {
		for _, f := range []string{"accuracy", "kappa", "kappa_ci", "caught", "passed", "kappa_at_threshold", "best_threshold", "kappa_at_best_threshold"} {
			c.Undefined[f] = "not calibrated: no label names this evaluator"
		}
		return
	}
	m := c.matrix
	c.Pairs = m.N()
	c.Confusion = map[string]map[string]int{
		"pass": {"pass": m[0][0], "fail": m[0][1]},
		"fail": {"pass": m[1][0], "fail": m[1][1]},
	}
	c.humanPasses, c.humanFailures = m[0][0]+m[1][0], m[0][1]+m[1][1]
	if c.Pairs == 0 {
		for _, f := range []string{"accuracy", "kappa", "kappa_ci", "caught", "passed", "kappa_at_threshold", "best_threshold", "kappa_at_best_threshold"} {
			c.Undefined[f] = fmt.Sprintf("no pairs: none of the %d label(s) met a passed or failed result", c.Labels)
		}
		return
	}
	acc := float64(m[0][0]+m[1][1]) / float64(c.Pairs)
	c.Accuracy = &acc
	if c.humanFailures > 0 {
		x := float64(m[1][1]) / float64(c.humanFailures)
		c.Caught = &x
	} else {
		c.Undefined["caught"] = "no human label is fail"
	}
	if c.humanPasses > 0 {
		x := float64(m[0][0]) / float64(c.humanPasses)
		c.Passed = &x
	} else {
		c.Undefined["passed"] = "no human label is pass"
	}
	if k, err := m.Kappa(); err != nil {
		c.Undefined["kappa"] = c.kappaUndefined(err, "its results")
		c.Undefined["kappa_ci"] = c.Undefined["kappa"]
	} else {
		c.Kappa = &k
		// Pairs are exchangeable: resampled from a canonical order, the
		// interval (and fit_to_gate) depends on the pairs, not on the order
		// the labels were read in.
		pairs := slices.Clone(ps.labels)
		slices.SortFunc(pairs, func(a, b [2]bool) int { return pairRank(a) - pairRank(b) })
		lo, hi, _ := stats.KappaCI(pairs, 0.95, bootstrapResamples, seededRand(c.Name))
		c.KappaCI = &[2]float64{lo, hi}
	}
	if k, err := stats.KappaAt(scores, truth, c.Threshold); err != nil {
		c.Undefined["kappa_at_threshold"] = c.kappaUndefined(err, fmt.Sprintf("its results at threshold %g", c.Threshold))
	} else {
		c.KappaAtThreshold = &k
	}
	if best, ok := stats.BestThreshold(stats.Sweep(scores, truth), c.Threshold); ok {
		t, k := best.Threshold, best.Kappa
		c.BestThreshold, c.KappaAtBest = &t, &k
	} else {
		why := fmt.Sprintf("every score is %g: no threshold splits them", scores[0])
		if c.humanFailures == 0 || c.humanPasses == 0 {
			why = c.kappaUndefined(stats.ErrConstantB, "")
		}
		c.Undefined["best_threshold"] = why
		c.Undefined["kappa_at_best_threshold"] = why
	}
}

// kappaUndefined says in words why kappa is undefined; machine names the
// evaluator's side.
func (c *calibration) kappaUndefined(err error, machine string) string {
	humans := "every human label is " + passFail(c.humanPasses > 0)
	var sides []string
	if errors.Is(err, stats.ErrConstantA) {
		sides = append(sides, machine+" are all "+passFail(c.matrix[0][0]+c.matrix[0][1] > 0))
	}
	if errors.Is(err, stats.ErrConstantB) {
		sides = append(sides, humans)
	}
	if len(sides) == 0 {
		return err.Error()
	}
	return strings.Join(sides, " and ") + " (one side constant: kappa needs both sides to vary)"
}

// decide sets FitToGate: kappa's lower bound at least minKappa.
func (c *calibration) decide(minKappa float64) {
	c.FitToGate = c.KappaCI != nil && c.KappaCI[0] >= minKappa
}

// verdict is the evaluator's line in words.
func (c *calibration) verdict(minKappa float64) string {
	switch {
	case !c.Calibrated:
		return "not calibrated (no label)"
	case c.FitToGate:
		return "fit to gate"
	case c.KappaCI == nil:
		return "not fit to gate: kappa undefined"
	default:
		return fmt.Sprintf("not fit to gate: %.3f < %g", c.KappaCI[0], minKappa)
	}
}

func writeCalibrationJSON(w io.Writer, cals []calibration, minKappa float64, labels int) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	fit := true
	for _, c := range cals {
		if c.Calibrated && !c.FitToGate {
			fit = false
		}
	}
	return enc.Encode(struct {
		MinKappa   float64       `json:"min_kappa"`
		Labels     int           `json:"labels"`
		Evaluators []calibration `json:"evaluators"`
		// FitToGate: every calibrated evaluator is fit to gate.
		FitToGate bool `json:"fit_to_gate"`
	}{minKappa, labels, cals, fit})
}

func writeCalibrationText(w io.Writer, cals []calibration, minKappa float64, labels int) error {
	fmt.Fprintf(w, "Calibration against %d human label(s): fit to gate when the lower bound of kappa's 95%% interval is at least %g\n\n", labels, minKappa)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EVALUATOR\tVERSION\tPAIRS\tACCURACY\tKAPPA\tKAPPA 95% CI\tCAUGHT\tPASSED\tTHRESHOLD\tKAPPA AT IT\tBEST THRESHOLD\tKAPPA AT BEST\tVERDICT\t")
	num := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", *x)
	}
	share := func(x *float64, k, n int) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f (%d/%d)", *x, k, n)
	}
	for _, c := range cals {
		version := c.Version
		if version == "" {
			version = "-"
		}
		if !c.Calibrated {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t%g\t-\t-\t-\t%s\t\n", c.Name, version, c.Threshold, c.verdict(minKappa))
			continue
		}
		best := "-"
		if c.BestThreshold != nil {
			best = fmt.Sprintf("%g", *c.BestThreshold)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%g\t%s\t%s\t%s\t%s\t\n", c.Name, version, c.Pairs, num(c.Accuracy), num(c.Kappa), ciText(c.KappaCI),
			share(c.Caught, c.matrix[1][1], c.humanFailures), share(c.Passed, c.matrix[0][0], c.humanPasses),
			c.Threshold, num(c.KappaAtThreshold), best, num(c.KappaAtBest), c.verdict(minKappa))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	calibrated, unfit := 0, 0
	for _, c := range cals {
		if !c.Calibrated {
			continue
		}
		calibrated++
		if !c.FitToGate {
			unfit++
		}
		fmt.Fprintf(w, "\n%s: confusion (rows: the evaluator, columns: the human labels)\n", c.Name)
		fmt.Fprintf(w, "              human pass  human fail\n")
		fmt.Fprintf(w, "  judged pass %10d  %10d\n", c.matrix[0][0], c.matrix[0][1])
		fmt.Fprintf(w, "  judged fail %10d  %10d\n", c.matrix[1][0], c.matrix[1][1])
		for _, f := range sortedKeys(c.Undefined) {
			fmt.Fprintf(w, "  %s undefined: %s\n", f, c.Undefined[f])
		}
	}
	var err error
	switch {
	case calibrated == 0:
		_, err = fmt.Fprintln(w, "\nno evaluator calibrated: no label names an evaluator of the config")
	case unfit > 0:
		_, err = fmt.Fprintf(w, "\n%d of %d calibrated evaluator(s) not fit to gate\n", unfit, calibrated)
	default:
		_, err = fmt.Fprintf(w, "\nall %d calibrated evaluator(s) fit to gate\n", calibrated)
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
