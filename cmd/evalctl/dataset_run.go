package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/dataset"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// `evalctl run --dataset DIR` (docs/contract.md §27): a trace whose root or
// agent span carries eval.dataset.case_id is scored against that case's
// pinned expectation, and the dataset is a gate: every pinned case must
// have run and passed. A case passes when at least one evaluator scored
// it, every evaluator that scored it passed, and none errored or timed out
// on it (an error says nothing, and nothing is no green).

// datasetRun follows one run over a dataset's replays.
type datasetRun struct {
	dir string
	ds  *dataset.Dataset
	// caseOf is the case id of each trace that replays a pinned case.
	caseOf map[pcommon.TraceID]string
	// outcome of each pinned case that ran, by id.
	outcome map[string]*datasetOutcome
	// readers are, per part of a pin ("tool calls", "output"), the
	// evaluators of agent cases that read it (probeReaders); nil when an
	// evaluator could not be asked. A case pinning a part that none of
	// them scored on its replay fails: nothing compared the replay with it.
	readers map[string]map[string]bool
}

type datasetOutcome struct {
	// read: the parts of the pin that a reader scored (probeReaders).
	read     map[string]bool
	traces   []string
	failures []string // "<evaluator>: <reason>" of what did not pass
	scored   int
	results  []dataset.Result // every agent-case result, for --record
}

// datasetCaseVerdict is one pinned case's line in the summary.
type datasetCaseVerdict struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"` // passed, failed or not_run
	TraceIDs []string `json:"trace_ids"`
	Failures []string `json:"failures"`
}

// datasetSummary is the `dataset` block of --summary json.
type datasetSummary struct {
	Dir    string               `json:"dir"`
	Pinned int                  `json:"pinned"`
	Run    int                  `json:"run"`
	Passed int                  `json:"passed"`
	Failed int                  `json:"failed"`
	NotRun []string             `json:"not_run"`
	Cases  []datasetCaseVerdict `json:"cases"`
}

func (d *datasetSummary) ok() bool { return d.Pinned > 0 && d.Passed == d.Pinned }

// gate is the dataset's verdict as a gate line.
func (d *datasetSummary) gate() gateResult {
	g := gateResult{Gate: "dataset", OK: d.ok()}
	if d.Pinned == 0 {
		g.Message = fmt.Sprintf("%s has no pinned case: nothing to gate on (evalctl dataset pin)", d.Dir)
		return g
	}
	g.Message = fmt.Sprintf("%d pinned case(s): %d run, %d passed, %d failed, %d not run", d.Pinned, d.Run, d.Passed, d.Failed, len(d.NotRun))
	if len(d.NotRun) > 0 {
		g.Message += " (not run: " + strings.Join(d.NotRun, ", ") + ")"
	}
	return g
}

// openDatasetRun reads the dataset; it must hold a pinned case.
func openDatasetRun(dir string) (*datasetRun, error) {
	ds, err := dataset.Open(dir, false)
	if err != nil {
		return nil, err
	}
	return &datasetRun{dir: dir, ds: ds, caseOf: map[pcommon.TraceID]string{}, outcome: map[string]*datasetOutcome{}}, nil
}

// prepare finds the traces that replay a case and, for a pinned case,
// replaces the trace's expectations with the pin: eval.expected.tool_calls
// and eval.expected.output are removed from every span of the trace and
// the pin's are set on the tagged span and on the root span (the agent
// case reads its own span, else the root). Traces of unknown or unpinned
// cases are scored as they are, with a warning.
func (r *datasetRun) prepare(traces [][]adapter.SpanRef, stderr io.Writer) {
	for _, spans := range traces {
		var tagged []adapter.SpanRef
		var id string
		root := -1
		for i, s := range spans {
			if s.Span.ParentSpanID().IsEmpty() {
				root = i
			}
			if v, ok := s.Span.Attributes().Get(dataset.AttrCaseID); ok && v.Str() != "" {
				if id != "" && v.Str() != id {
					fmt.Fprintf(stderr, "evalctl: warning: trace %s carries two dataset case ids (%s, %s); scored against %s\n",
						s.Span.TraceID(), id, v.Str(), id)
					continue
				}
				id = v.Str()
				tagged = append(tagged, s)
			}
		}
		if id == "" {
			continue
		}
		tid := spans[0].Span.TraceID()
		c := r.ds.Get(id)
		switch {
		case c == nil:
			fmt.Fprintf(stderr, "evalctl: warning: trace %s replays case %s, which dataset %s does not have; scored as it is\n", tid, id, r.dir)
			continue
		case !c.Pinned():
			fmt.Fprintf(stderr, "evalctl: warning: trace %s replays case %s, which is not pinned; scored as it is (evalctl dataset pin)\n", tid, id)
			continue
		}
		r.caseOf[tid] = id
		for _, s := range spans {
			s.Span.Attributes().Remove(adapter.AttrExpectedToolCalls)
			s.Span.Attributes().Remove(adapter.AttrExpectedOutput)
		}
		if root >= 0 {
			tagged = append(tagged, spans[root])
		}
		for _, s := range tagged {
			if len(c.Expected.ToolCalls) > 0 {
				s.Span.Attributes().PutStr(adapter.AttrExpectedToolCalls, string(c.Expected.ToolCalls))
			}
			if out, ok := c.Expected.OutputText(); ok {
				s.Span.Attributes().PutStr(adapter.AttrExpectedOutput, out)
			}
		}
	}
}

// Probe expectations: what probeReaders asks the evaluators about.
const (
	pinProbeTool   = "evalctl_pin_probe"
	pinProbeOutput = "evalctl pin probe"
)

// probeReaders finds which parts of a pin the evaluators of agent cases
// read, by asking each deterministic and CEL one about a probe case with
// and without that expectation (the probe expects exactly what the case
// did, so a reader's verdict changes). Judges and remote evaluators are
// not asked (a call costs and may read anything): with one of them, every
// part counts as read.
func (r *datasetRun) probeReaders(insts []*evaluators.Instance) {
	r.readers = map[string]map[string]bool{"tool calls": {}, "output": {}}
	base := adapter.Case{Level: adapter.LevelAgent, Input: "evalctl pin probe input", Output: pinProbeOutput,
		ToolCalls: []adapter.ToolCall{{Name: pinProbeTool, Arguments: map[string]any{}, RawArguments: "{}", Result: "ok", HasResult: true}}}
	calls, output := base, base
	calls.Expected = adapter.Expectations{ToolCalls: []adapter.ExpectedCall{{Name: pinProbeTool}}, HasToolCalls: true}
	output.Expected = adapter.Expectations{Output: pinProbeOutput, HasOutput: true}
	for _, in := range insts {
		if in.Level != adapter.LevelAgent {
			continue
		}
		if in.EvaluatorType != evaluators.EvaluatorTypeDeterministic && in.EvaluatorType != evaluators.EvaluatorTypeCEL {
			r.readers = nil
			return
		}
		without, ok := probeEvaluate(in, base)
		if !ok {
			r.readers = nil
			return
		}
		for part, c := range map[string]adapter.Case{"tool calls": calls, "output": output} {
			if with, ok := probeEvaluate(in, c); !ok || with.Status != without.Status || with.Score != without.Score || with.Reason != without.Reason {
				r.readers[part][in.Name] = true
			}
		}
	}
}

// probeEvaluate is in's verdict on c; ok is false when it panicked.
func probeEvaluate(in *evaluators.Instance, c adapter.Case) (res evaluators.Result, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	res = in.Evaluator.Evaluate(context.Background(), &c)
	return res, true
}

// observe records the results of a trace that replays a pinned case: its
// agent cases' results.
func (r *datasetRun) observe(spans []adapter.SpanRef, rep engine.Report) {
	tid := spans[0].Span.TraceID()
	id, ok := r.caseOf[tid]
	if !ok {
		return
	}
	o := r.outcome[id]
	if o == nil {
		o = &datasetOutcome{read: map[string]bool{}}
		r.outcome[id] = o
	}
	o.traces = append(o.traces, tid.String())
	for _, ev := range rep.Evaluations {
		if ev.Case.Level != adapter.LevelAgent {
			continue
		}
		for _, res := range ev.Results {
			dr := dataset.Result{Name: res.Name, Type: res.Type, Status: string(res.Status), Version: res.Version}
			if res.Scored() {
				s := res.Score
				dr.Score = &s
			}
			o.results = append(o.results, dr)
			for part, names := range r.readers {
				if names[res.Name] && res.Scored() {
					o.read[part] = true
				}
			}
			switch res.Status {
			case evaluators.StatusPassed:
				o.scored++
			case evaluators.StatusFailed:
				o.scored++
				o.failures = append(o.failures, fmt.Sprintf("%s: %s", res.Name, res.Reason))
			case evaluators.StatusError, evaluators.StatusTimeout:
				o.failures = append(o.failures, fmt.Sprintf("%s: %s: %s", res.Name, res.Status, res.Reason))
			}
		}
	}
}

// summary is the verdict over every pinned case.
func (r *datasetRun) summary() *datasetSummary {
	d := &datasetSummary{Dir: r.dir, NotRun: []string{}, Cases: []datasetCaseVerdict{}}
	for _, c := range r.ds.Cases {
		if !c.Pinned() {
			continue
		}
		d.Pinned++
		v := datasetCaseVerdict{ID: c.ID, TraceIDs: []string{}, Failures: []string{}}
		o := r.outcome[c.ID]
		switch {
		case o == nil:
			v.Status = "not_run"
			v.Failures = append(v.Failures, "not run: no trace carries "+dataset.AttrCaseID+"="+c.ID)
			d.NotRun = append(d.NotRun, c.ID)
		case o.scored == 0 && len(o.failures) == 0:
			d.Run++
			v.Status, v.TraceIDs = "failed", o.traces
			v.Failures = append(v.Failures, "no evaluator scored it")
			d.Failed++
		case len(o.failures) > 0 || len(r.unchecked(c, o)) > 0:
			d.Run++
			v.Status, v.TraceIDs, v.Failures = "failed", o.traces, slices.Clone(o.failures)
			for _, part := range r.unchecked(c, o) {
				v.Failures = append(v.Failures, fmt.Sprintf("pinned %s not checked: no evaluator that compares %s with an expectation scored the replay", part, part))
			}
			d.Failed++
		default:
			d.Run++
			v.Status, v.TraceIDs = "passed", o.traces
			d.Passed++
		}
		d.Cases = append(d.Cases, v)
	}
	return d
}

// unchecked are the parts c pins that no reader scored on its replay o.
func (r *datasetRun) unchecked(c *dataset.Case, o *datasetOutcome) []string {
	if r.readers == nil {
		return nil
	}
	var out []string
	if len(c.Expected.ToolCalls) > 0 && !o.read["tool calls"] {
		out = append(out, "tool calls")
	}
	if _, ok := c.Expected.OutputText(); ok && !o.read["output"] {
		out = append(out, "output")
	}
	return out
}

// record appends each pinned case's outcome, with its results and their
// evaluator versions, to the dataset's history (--record).
func (r *datasetRun) record(d *datasetSummary, now time.Time) error {
	var entries []dataset.HistoryEntry
	for _, c := range d.Cases {
		e := dataset.HistoryEntry{Time: now.UTC().Format(time.RFC3339), CaseID: c.ID, Status: c.Status, TraceIDs: c.TraceIDs, Results: []dataset.Result{}}
		if o := r.outcome[c.ID]; o != nil {
			e.Results = append(e.Results, o.results...)
		}
		entries = append(entries, e)
	}
	return dataset.AppendHistory(r.dir, entries)
}

// writeText lists the pinned cases that did not pass.
func (d *datasetSummary) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nDataset %s: %d pinned, %d run, %d passed, %d failed, %d not run\n", d.Dir, d.Pinned, d.Run, d.Passed, d.Failed, len(d.NotRun))
	for _, c := range d.Cases {
		if c.Status == "passed" {
			continue
		}
		status := strings.ReplaceAll(strings.ToUpper(c.Status), "_", " ")
		fmt.Fprintf(w, "  %-7s %s  %s\n", status, c.ID, strings.Join(c.Failures, "; "))
	}
}

// datasetJUnitSuite is the dataset as a JUnit suite: one test case per
// pinned case.
func datasetJUnitSuite(d *datasetSummary) junitSuite {
	suite := junitSuite{Name: "dataset"}
	for _, c := range d.Cases {
		tc := junitCase{ClassName: "dataset", Name: "case " + c.ID}
		if c.Status != "passed" {
			msg := strings.Join(c.Failures, "; ")
			text := fmt.Sprintf("%s\ncase: %s\ntraces: %s\n", msg, c.ID, strings.Join(c.TraceIDs, ", "))
			tc.Failure = &junitProblem{Message: msg, Type: c.Status, Text: xmlText(text)}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	return suite
}
