package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"

	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// `evalctl estimate` (docs/contract.md §21, docs/cost.md): what the judges
// would be asked on the inputs, without asking them. The inputs are read
// and scored as `run` does — the deterministic evaluators run, so run_if,
// `when` and sample_rate decide as in a real run — but every judge records
// its requests instead of sending them (judge evaluators report skipped,
// and so does a run_if that reads a judge's result), and remote evaluators
// are not called. Input tokens are judge.EstimateInputTokens of each
// rendered request (bytes/4 + 8 a message); output tokens are bounded by
// the request's max_tokens.

// estimateRow is one judge and evaluator's calls.
type estimateRow struct {
	Judge     string `json:"judge"`
	Evaluator string `json:"evaluator"`
	// Calls are the requests a run would send; CachedCalls the identical
	// requests a run answers from the verdict cache (cache_size > 0).
	Calls       int64 `json:"calls"`
	CachedCalls int64 `json:"cached_calls"`
	InputTokens int64 `json:"input_tokens"`
	// MaxOutputTokens is the sum of the requests' max_tokens, an upper
	// bound of the output tokens; OutputUnbounded says the judge sets no
	// max_tokens, so there is none.
	MaxOutputTokens int64 `json:"max_output_tokens"`
	OutputUnbounded bool  `json:"output_unbounded,omitempty"`
	// With a price: the cost of the input tokens, and an upper bound of the
	// whole cost (input plus MaxOutputTokens).
	InputCost *float64 `json:"input_cost"`
	MaxCost   *float64 `json:"max_cost"`
	Currency  string   `json:"currency,omitempty"`
}

type estimateTotal struct {
	Currency        string  `json:"currency"`
	Calls           int64   `json:"calls"`
	InputTokens     int64   `json:"input_tokens"`
	MaxOutputTokens int64   `json:"max_output_tokens"`
	InputCost       float64 `json:"input_cost"`
	MaxCost         float64 `json:"max_cost"`
	// Per1000Traces are InputCost and MaxCost scaled to 1000 traces of the
	// inputs' kind (cost / traces × 1000).
	InputCostPer1000Traces float64 `json:"input_cost_per_1000_traces"`
	MaxCostPer1000Traces   float64 `json:"max_cost_per_1000_traces"`
}

type estimateReport struct {
	Traces int `json:"traces"`
	// TokenMethod says how input tokens were estimated.
	TokenMethod string          `json:"token_method"`
	Evaluators  []*estimateRow  `json:"evaluators"`
	Totals      []estimateTotal `json:"totals"` // one per currency of the priced judges
}

const tokenMethod = "bytes/4 + 8 per message of each rendered judge request"

func estimateCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evalctl estimate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sc := addScoringFlags(fs, "output format: text or json")
	cfg := sc.parse(ctx, fs, args, stderr)
	if cfg == nil {
		return exitUsage
	}
	// Warnings only: every judge evaluator is skipped by design.
	eng, err := engine.New(cfg, telemetry(newLogger(stderr).WithOptions(zap.IncreaseLevel(zap.ErrorLevel))))
	if err != nil {
		fmt.Fprintf(stderr, "evalctl estimate: config %s: %v\n", sc.configPath, err)
		return exitUsage
	}
	rows := map[string]*estimateRow{}
	var order []*estimateRow
	for _, in := range eng.Instances() {
		if in.Judge == "" {
			continue
		}
		r := &estimateRow{Judge: in.Judge, Evaluator: in.Name}
		rows[in.Name] = r
		order = append(order, r)
	}
	var mu sync.Mutex
	eng.SetEstimateOnly(func(c judge.Call) {
		mu.Lock()
		defer mu.Unlock()
		r := rows[c.Evaluator]
		if r == nil {
			return
		}
		if c.Cached {
			r.CachedCalls++
			return
		}
		r.Calls++
		r.InputTokens += c.InputTokens
		r.MaxOutputTokens += c.MaxOutputTokens
		r.OutputUnbounded = r.OutputUnbounded || c.MaxOutputTokens == 0
	})
	docs, traces, ok := startScoring(ctx, eng, sc, stdin, stderr, "no trace in the inputs")
	if !ok {
		return exitUsage
	}
	defer func() { _ = eng.Shutdown(ctx) }()
	sum := newSummary(eng.Instances())
	scoreInputs(ctx, eng, cfg, docs, traces, sum, io.Discard)
	// An input with no case would estimate 0 calls for any config: that
	// says nothing of the config's cost (no false green).
	for _, line := range sum.noCase {
		fmt.Fprintf(stderr, "evalctl estimate: %s\n", line)
	}
	if len(sum.noCase) > 0 && len(sum.noCase) == traceFiles(docs) {
		fmt.Fprintln(stderr, "evalctl estimate: no input holds a case: an estimate of 0 judge calls would say nothing of the config's cost")
		return exitUsage
	}

	rep := estimateReport{Traces: len(traces), TokenMethod: tokenMethod, Evaluators: order}
	totals := map[string]*estimateTotal{}
	for _, r := range order {
		price, _, _ := eng.JudgePrice(r.Judge)
		if !price.Set() {
			continue
		}
		in, all := price.Cost(r.InputTokens, 0), price.Cost(r.InputTokens, r.MaxOutputTokens)
		r.InputCost, r.MaxCost, r.Currency = &in, &all, price.Currency
		t := totals[price.Currency]
		if t == nil {
			t = &estimateTotal{Currency: price.Currency}
			totals[price.Currency] = t
		}
		t.Calls += r.Calls
		t.InputTokens += r.InputTokens
		t.MaxOutputTokens += r.MaxOutputTokens
		t.InputCost += in
		t.MaxCost += all
	}
	for _, t := range totals {
		t.InputCostPer1000Traces = t.InputCost / float64(rep.Traces) * 1000
		t.MaxCostPer1000Traces = t.MaxCost / float64(rep.Traces) * 1000
		rep.Totals = append(rep.Totals, *t)
	}
	sort.Slice(rep.Totals, func(i, j int) bool { return rep.Totals[i].Currency < rep.Totals[j].Currency })
	if sc.summaryFormat == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "evalctl estimate: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// traceFiles counts the input files that hold spans.
func traceFiles(docs []document) int {
	files := map[string]bool{}
	for _, d := range docs {
		if !d.isLogs && d.traces.SpanCount() > 0 {
			files[d.file] = true
		}
	}
	return len(files)
}

func (rep *estimateReport) writeText(w io.Writer) error {
	if len(rep.Evaluators) == 0 {
		_, err := fmt.Fprintf(w, "No evaluator of the config calls a judge (none sets `judge`): scoring these %d trace(s) makes no judge call and costs nothing.\n", rep.Traces)
		return err
	}
	fmt.Fprintf(w, "Judge calls on %d trace(s); no judge was called. Input tokens: %s; output tokens: at most max_tokens.\n\n",
		rep.Traces, rep.TokenMethod)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JUDGE\tEVALUATOR\tCALLS\tCACHED\tINPUT TOKENS\tMAX OUTPUT TOKENS\tINPUT COST\tMAX COST\t")
	for _, r := range rep.Evaluators {
		maxOut := fmt.Sprint(r.MaxOutputTokens)
		if r.OutputUnbounded {
			maxOut = "unbounded (no max_tokens)"
		}
		inCost, maxCost := "-", "-"
		if r.InputCost != nil {
			inCost = fmt.Sprintf("%.6f %s", *r.InputCost, r.Currency)
			maxCost = fmt.Sprintf("%.6f %s", *r.MaxCost, r.Currency)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n", r.Judge, r.Evaluator, r.Calls, r.CachedCalls, r.InputTokens, maxOut, inCost, maxCost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range rep.Totals {
		fmt.Fprintf(w, "\nTotal %s: %d calls, input %.6f, at most %.6f; per 1000 traces: input %.4f, at most %.4f %s\n",
			t.Currency, t.Calls, t.InputCost, t.MaxCost, t.InputCostPer1000Traces, t.MaxCostPer1000Traces, t.Currency)
	}
	if len(rep.Totals) == 0 {
		_, err := fmt.Fprintln(w, "\nNo judge has a price: set `price` on a judge to see costs.")
		return err
	}
	return nil
}
