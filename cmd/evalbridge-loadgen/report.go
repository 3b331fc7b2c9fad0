package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// report is the outcome of one load (one scenario of the suite).
type report struct {
	Scenario string

	Traces      int   // traces started
	Spans       int   // spans generated
	SpansAcked  int   // distinct spans in an acknowledged request
	CopiesAcked int64 // span copies acknowledged, resends included
	Requests    int64 // requests acknowledged
	Refused     int64 // requests the collector refused until the client gave up
	Retries     int64 // retryable refusals (back-pressure) the client retried
	Received    int   // span copies the sink received
	Arrived     int   // distinct generated spans the sink received
	Lost        int   // acknowledged spans that never arrived
	Duplicated  int   // copies beyond the first
	Scored      int   // agent spans that arrived with eval.* results
	Unscored    int   // agent spans of normal runs that arrived without results
	// AllScored: a scenario in which every normal run must be scored
	// (Unscored is then a broken promise).
	AllScored   bool
	ResultSpans int // stream mode's result spans received
	FalseFail   int // runs designed to pass whose agent span says failed
	BadPasses   int // hostile runs scored passed on a check they must fail (token_usage on bad counts)
	Misplaced   int // spans other than the agent span that carry eval.* results
	BadResource int // spans that arrived under a resource other than the one they were sent under
	P99         time.Duration
	P99Runs     time.Duration // spans of normal agent runs (pass and fail kinds): held for the processor's wait
	P99Plain    time.Duration // non-GenAI spans only: the pass-through delay
	MaxHostile  time.Duration // longest forwarding delay of a hostile span
	KeyLeaks    int           // output spans plus log lines holding a fragment of the judge key
	// CrossDelivered: spans that reached the backend of a pipeline they did
	// not come in through (two_pipelines).
	CrossDelivered int
	// RedirectHits: requests that reached the other port a judge redirected
	// to (credentials): a followed cross-host redirect, a broken promise.
	RedirectHits int
	// The log flood: its traces' spans at the backend (of FloodWant), how
	// long after they were sent, against FloodBound; FloodErr: sending failed.
	FloodSpans, FloodWant int
	FloodWait, FloodBound time.Duration
	FloodErr              string
	// MaxHostileBound: the longest hostile delay allowed (0: none).
	MaxHostileBound time.Duration
	// NoDuplicates: a scenario whose backend must get each span once
	// (alert_down: a down side channel must not multiply the export).
	NoDuplicates bool
	LeakExamples []string

	// From the collector process (suite only; 0 when unknown).
	PeakRSSMiB     float64
	PeakGoroutines int
	Notes          []string
	// Extra are the findings of a topology scenario's own checks: notes,
	// and the promises it breaks (suite_topologies.go).
	Extra topologyResult
}

// account joins what was generated and sent with what the sink received.
func account(name string, l *load, s *sink) report {
	arr, received, _, leaks, leakSeen := s.snapshot()
	l.mu.Lock()
	defer l.mu.Unlock()
	r := report{
		Scenario:    name,
		Traces:      len(l.gen.traces),
		Spans:       len(l.gen.spans),
		CopiesAcked: l.stats.spansAcked.Load(),
		Requests:    l.stats.requests.Load(),
		Refused:     l.stats.refused.Load(),
		Retries:     l.stats.retried.Load(),
		Received:    received,
		KeyLeaks:    leaks,
		ResultSpans: s.resultSpans(),
	}
	for k, v := range leakSeen {
		r.LeakExamples = append(r.LeakExamples, fmt.Sprintf("%s: …%s…", k, v))
	}
	var delays, runs, plain []time.Duration
	falseBy := map[string]int{}
	hostileBy := map[string]time.Duration{}
	lostBy := map[string]int{}
	for seq, si := range l.gen.spans {
		if si.acked {
			r.SpansAcked++
		}
		a, ok := arr[int64(seq)]
		tr := l.gen.traces[si.trace]
		if !ok {
			if si.acked {
				r.Lost++
				lostBy[tr.kind]++
			}
			continue
		}
		r.Arrived++
		r.Duplicated += a.count - 1
		if a.badResource {
			r.BadResource++
		}
		if si.reqSent > 0 {
			d := a.first.Sub(time.Unix(0, si.reqSent))
			delays = append(delays, d)
			switch tr.kind {
			case kindPlain:
				plain = append(plain, d)
			case kindPass, kindFail:
				runs = append(runs, d)
			}
			if strings.HasPrefix(tr.kind, "hostile:") {
				r.MaxHostile = max(r.MaxHostile, d)
				hostileBy[tr.kind] = max(hostileBy[tr.kind], d)
			}
		}
		if !si.agent {
			// A trace whose agent span shares its id with a tool span: the
			// results belong on the agent span only. (Other spans may carry
			// results by the contract: a trace without its agent span is
			// scored on its earliest GenAI span.)
			if len(a.statuses) > 0 && tr.kind == "hostile:duplicate_span_id" {
				r.Misplaced++
			}
			continue
		}
		if len(a.statuses) > 0 {
			r.Scored++
		} else if tr.kind == kindPass || tr.kind == kindFail {
			r.Unscored++
		}
		if tr.expectPass && (a.failed || slices.Contains(mapValues(a.statuses), "failed")) {
			r.FalseFail++
			for name, st := range a.statuses {
				if st == "failed" {
					falseBy[tr.kind+"/"+name]++
				}
			}
		}
		if tr.kind == "hostile:bad_tokens" && a.statuses["token_usage"] == "passed" {
			r.BadPasses++
		}
	}
	r.Notes = appendCounts(r.Notes, "lost spans by trace kind: ", lostBy)
	r.Notes = appendCounts(r.Notes, "false failures by trace kind/evaluator: ", falseBy)
	if len(hostileBy) > 0 {
		kinds := make([]string, 0, len(hostileBy))
		for k := range hostileBy {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return hostileBy[kinds[i]] > hostileBy[kinds[j]] })
		var by []string
		for _, k := range kinds {
			by = append(by, fmt.Sprintf("%s %s", strings.TrimPrefix(k, "hostile:"), round(hostileBy[k])))
		}
		r.Notes = append(r.Notes, "longest forwarding delay by hostile kind: "+strings.Join(by, ", "))
	}
	r.P99 = p99(delays)
	r.P99Runs = p99(runs)
	r.P99Plain = p99(plain)
	return r
}

// appendCounts appends the note title followed by counts as "key n", in
// key order; nothing when counts is empty.
func appendCounts(notes []string, title string, counts map[string]int) []string {
	if len(counts) == 0 {
		return notes
	}
	by := make([]string, 0, len(counts))
	for k, n := range counts {
		by = append(by, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(by)
	return append(notes, title+strings.Join(by, ", "))
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)*99+99)/100-1] // the ceil(0.99 n)-th smallest
}

// failures lists the promises r breaks (lost spans, false failures, key
// leaks, bad passes, misplaced results): what -strict turns into exit 1.
func (r report) failures() []string {
	var out []string
	if r.FloodWant > 0 {
		switch {
		case r.FloodErr != "":
			out = append(out, "the log flood could not be sent: "+r.FloodErr)
		case r.FloodSpans < r.FloodWant || r.FloodWait == 0:
			out = append(out, fmt.Sprintf("%d of %d spans of the log-flooded traces arrived", r.FloodSpans, r.FloodWant))
		case r.FloodWait > r.FloodBound:
			out = append(out, fmt.Sprintf("the log-flooded traces waited %s (bound %s)", round(r.FloodWait), r.FloodBound))
		}
	}
	switch {
	case r.RedirectHits > 0:
		out = append(out, fmt.Sprintf("%d judge requests followed a redirect to another port", r.RedirectHits))
	case r.RedirectHits < 0:
		out = append(out, "the judge redirected nothing: the redirect check did not run")
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.Lost, "acknowledged spans lost"},
		{r.FalseFail, "false failures"},
		{r.KeyLeaks, "judge-key leaks"},
		{r.BadPasses, "bad token counts passed"},
		{r.Misplaced, "spans with results that are not the agent span"},
		{r.BadResource, "spans arrived under a resource other than the one they were sent under"},
		{r.CrossDelivered, "spans went on through another pipeline"},
	} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if r.MaxHostileBound > 0 && r.MaxHostile > r.MaxHostileBound {
		out = append(out, fmt.Sprintf("a hostile span waited %s (bound %s)", round(r.MaxHostile), r.MaxHostileBound))
	}
	if r.AllScored && r.Unscored > 0 {
		out = append(out, fmt.Sprintf("%d agent spans of normal runs got no results", r.Unscored))
	}
	if r.NoDuplicates && r.Duplicated > 0 {
		out = append(out, fmt.Sprintf("%d span copies delivered more than once", r.Duplicated))
	}
	return append(out, r.Extra.Broken...)
}

func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "== %s\n", r.Scenario)
	fmt.Fprintf(w, "  traces %d, spans %d; requests acknowledged %d, refused %d (retryable refusals retried: %d)\n",
		r.Traces, r.Spans, r.Requests, r.Refused, r.Retries)
	fmt.Fprintf(w, "  spans sent (acknowledged) %d, arrived %d, lost %d; copies acknowledged %d, received %d, duplicated %d\n",
		r.SpansAcked, r.Arrived, r.Lost, r.CopiesAcked, r.Received, r.Duplicated)
	fmt.Fprintf(w, "  agent spans scored %d, normal runs unscored %d, false failures %d, bad passes %d, misplaced results %d, spans under another resource %d\n",
		r.Scored, r.Unscored, r.FalseFail, r.BadPasses, r.Misplaced, r.BadResource)
	fmt.Fprintf(w, "  forwarding delay p99 %s (normal agent runs %s, non-GenAI %s), longest hostile %s\n",
		round(r.P99), round(r.P99Runs), round(r.P99Plain), round(r.MaxHostile))
	if r.PeakRSSMiB > 0 || r.PeakGoroutines > 0 {
		fmt.Fprintf(w, "  collector peak RSS %.0f MiB, peak goroutines %d\n", r.PeakRSSMiB, r.PeakGoroutines)
	}
	fmt.Fprintf(w, "  judge-key leaks %d\n", r.KeyLeaks)
	for _, e := range r.LeakExamples {
		fmt.Fprintf(w, "    leak: %s\n", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// table prints the reports as the README's markdown table.
func table(w io.Writer, rs []report) {
	fmt.Fprintln(w, "| scenario | spans sent | arrived | lost | duplicated | scored | false failures | key leaks | peak RSS | p99 delay: all / agent runs / non-GenAI | peak goroutines | longest hostile |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %.0f MiB | %s / %s / %s | %d | %s |\n",
			r.Scenario, r.SpansAcked, r.Arrived, r.Lost, r.Duplicated, r.Scored, r.FalseFail, r.KeyLeaks,
			r.PeakRSSMiB, round(r.P99), round(r.P99Runs), round(r.P99Plain), r.PeakGoroutines, round(r.MaxHostile))
	}
}
