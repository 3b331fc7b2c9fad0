package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/dataset"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/redact"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

// `evalctl dataset` (docs/contract.md §27, docs/datasets.md): capture the
// failing agent cases of production traces into a dataset directory, list
// them, and pin what the agent should have done. `run --dataset`
// (dataset_run.go) gates on the pinned cases; `review` (review.go) is the
// page a reviewer does the pinning and labelling on.

const datasetUsage = `evalctl dataset manages regression datasets: one JSON file per captured agent case.

Usage:
  evalctl dataset add DIR --config FILE [--where CEL] [--summary text|json]
              (INPUT... | --jaeger URL [--service S] [--operation O]
               [--tags K=V]... [--lookback 24h] [--limit N])
  evalctl dataset list DIR [--json] [--pinned | --unpinned] [--failed NAME] [--service S]
  evalctl dataset pin DIR ID (--tool-calls JSON [--output TEXT] | --output TEXT
              | --from FILE --trace-id T)
  evalctl dataset history DIR ID [--json]

add scores the inputs as run does and writes each agent case that --where
selects (CEL over results and case, as run_if reads them; default: any
result failed) to DIR/cases/<id>.json, its input and what the agent did
redacted with the config's redaction; DIR/dataset.json is the manifest.
The id hashes the redacted input and the tool calls' names and arguments,
so the same failure twice is one case (a duplicate).

history prints a case's outcomes recorded by run --dataset --record, with
each result's evaluator version.

pin sets the case's expectation (§3 shapes); --from takes the tool calls
of a good run (trace T in FILE). An unknown id, invalid JSON or an
expectation that does not fit changes no file.

Exit status: 0 done, 2 bad usage, config, input or id.
`

func datasetCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, datasetUsage)
		return exitUsage
	}
	switch args[0] {
	case "add":
		return datasetAddCmd(ctx, args[1:], stdin, stdout, stderr)
	case "list":
		return datasetListCmd(args[1:], stdout, stderr)
	case "pin":
		return datasetPinCmd(args[1:], stdout, stderr)
	case "history":
		return datasetHistoryCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		// One page with every subcommand's flags, on stderr as the
		// flag package prints a subcommand's -h.
		fmt.Fprintf(stderr, "Usage of evalctl dataset:\n%s", datasetUsage)
		hist, _ := newDatasetHistoryFlags()
		for _, fs := range []*flag.FlagSet{newDatasetAddFlags().fs, newDatasetListFlags().fs, newDatasetPinFlags().fs, hist} {
			fmt.Fprintf(stderr, "\nFlags of %s:\n", fs.Name())
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return exitUsage
	default:
		fmt.Fprintf(stderr, "evalctl dataset: unknown subcommand %q\n\n%s", args[0], datasetUsage)
		return exitUsage
	}
}

type datasetAddFlags struct {
	fs    *flag.FlagSet
	sc    *scoring
	where *string
}

func newDatasetAddFlags() datasetAddFlags {
	fs := flag.NewFlagSet("evalctl dataset add", flag.ContinueOnError)
	sc := addScoringFlags(fs, "what add prints: text, or json ({\"added\", \"duplicates\", \"added_ids\", \"duplicate_ids\", \"cases\", \"pinned\"})")
	sc.leading = 1
	where := fs.String("where", "", "CEL `condition` over results and case (as run_if reads them) selecting the agent cases to capture (default: any result failed)")
	return datasetAddFlags{fs: fs, sc: sc, where: where}
}

// captured is one case add wrote or found already there.
type captured struct {
	id, traceID string
	failed      []string
	duplicate   bool
}

func datasetAddCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newDatasetAddFlags()
	f.fs.SetOutput(stderr)
	cfg := f.sc.parse(ctx, f.fs, args, stderr)
	if cfg == nil {
		return exitUsage
	}
	dir := f.sc.lead[0]
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalctl dataset add: "+format+"\n", a...)
		return exitUsage
	}
	var cond *evaluators.RunIf
	if strings.TrimSpace(*f.where) != "" {
		var err error
		if cond, err = evaluators.CompileCondition(*f.where); err != nil {
			return fail("--where: %v", strings.TrimPrefix(err.Error(), "run_if: "))
		}
	}
	ds, err := dataset.Open(dir, true)
	if err != nil {
		return fail("%v", err)
	}
	red, err := redact.New(cfg.Redaction, nil)
	if err != nil {
		return fail("config %s: redaction: %v", f.sc.configPath, err)
	}
	eng, err := engine.New(cfg, telemetry(newLogger(stderr)))
	if err != nil {
		return fail("config %s: %v", f.sc.configPath, err)
	}
	var agentNames []string
	for _, in := range eng.Instances() {
		if in.Level == adapter.LevelAgent {
			agentNames = append(agentNames, in.Name)
		}
	}
	if msg := checkWhereNames(cond, agentNames); msg != "" || len(agentNames) == 0 {
		_ = eng.Shutdown(ctx)
		if msg == "" {
			msg = fmt.Sprintf("config %s has no evaluator of agent cases: a dataset holds agent cases", f.sc.configPath)
		}
		return fail("%s", msg)
	}
	sum := newSummary(eng.Instances())
	var (
		got       []captured
		written   []*dataset.Case
		whereErrs = map[string]int{}
	)
	sum.observe = func(spans []adapter.SpanRef, rep engine.Report) {
		for _, c := range captureCases(ctx, spans, rep, cond, red, whereErrs) {
			cp := captured{id: c.ID, traceID: c.Source.TraceID, failed: c.Failed()}
			if ds.Add(c) {
				written = append(written, c)
			} else {
				cp.duplicate = true
			}
			got = append(got, cp)
		}
	}
	docs, traces, ok := startScoring(ctx, eng, f.sc, stdin, stderr, "no trace in the inputs")
	if !ok {
		return exitUsage
	}
	scoreInputs(ctx, eng, cfg, docs, traces, sum, stderr)
	_ = eng.Shutdown(ctx)
	for msg, n := range whereErrs {
		fmt.Fprintf(stderr, "evalctl dataset add: warning: --where could not be evaluated on %d case(s), not captured: %s\n", n, msg)
	}
	if err := ds.Save(written...); err != nil {
		return fail("writing %s: %v", dir, err)
	}
	return writeAddReport(stdout, f.sc.summaryFormat, dir, ds, got)
}

// checkWhereNames says what is wrong with the names --where reads as
// results.<name>: each must be an evaluator of agent cases.
func checkWhereNames(cond *evaluators.RunIf, agentNames []string) string {
	if cond == nil {
		return ""
	}
	for _, n := range cond.Names {
		if !slices.Contains(agentNames, n) {
			return fmt.Sprintf("--where reads results.%s, but no evaluator of agent cases is named %q (they are: %s)",
				n, n, strings.Join(agentNames, ", "))
		}
	}
	return ""
}

// captureCases turns the agent cases of one scored trace that cond
// selects (nil: any result failed) into dataset cases. The engine's cases
// may lack the conversation (evaluators that do not read it skip
// decoding it), so the trace is adapted again, fully, for the content.
func captureCases(ctx context.Context, spans []adapter.SpanRef, rep engine.Report, cond *evaluators.RunIf, red *redact.Redactor, whereErrs map[string]int) []*dataset.Case {
	var full map[pcommon.SpanID]*adapter.Case
	var out []*dataset.Case
	for _, ev := range rep.Evaluations {
		if ev.Case.Level != adapter.LevelAgent || len(ev.Results) == 0 {
			continue
		}
		if full == nil {
			full = map[pcommon.SpanID]*adapter.Case{}
			cases, _ := adapter.AdaptWith(spans, adapter.Options{AgentCases: true, Attributes: true})
			for i := range cases {
				full[cases[i].SpanID] = &cases[i]
			}
		}
		c := full[ev.Case.SpanID]
		if c == nil {
			c = ev.Case
		}
		if !selected(ctx, cond, c, ev.Results, whereErrs) {
			continue
		}
		out = append(out, newDatasetCase(spans, c, ev.Results, red))
	}
	return out
}

func selected(ctx context.Context, cond *evaluators.RunIf, c *adapter.Case, results []evaluators.Result, whereErrs map[string]int) bool {
	if cond == nil {
		return slices.ContainsFunc(results, func(r evaluators.Result) bool { return r.Status == evaluators.StatusFailed })
	}
	byName := make(map[string]evaluators.Result, len(results))
	for _, r := range results {
		byName[r.Name] = r
	}
	ok, reason := cond.Eval(ctx, c, byName)
	if !ok && reason != "run_if" {
		whereErrs[strings.TrimPrefix(reason, "run_if: ")]++
	}
	return ok
}

// newDatasetCase builds the case file of c: its user messages, calls and
// output redacted in one session (a value gets the same placeholder
// wherever it appears in the case), its id from what was redacted.
func newDatasetCase(spans []adapter.SpanRef, c *adapter.Case, results []evaluators.Result, red *redact.Redactor) *dataset.Case {
	sess := red.NewSession()
	dc := &dataset.Case{Source: dataset.Source{
		TraceID: c.TraceID.String(), SpanID: c.SpanID.String(), Service: c.ServiceName,
		StartTime: traceStart(spans), Agent: c.AgentName,
	}}
	for _, m := range c.Messages {
		if m.Role == "user" && m.Content != "" {
			dc.Input = append(dc.Input, dataset.Message{Role: "user", Content: sess.Text(m.Content)})
		}
	}
	if len(dc.Input) == 0 && c.Input != "" {
		dc.Input = append(dc.Input, dataset.Message{Role: "user", Content: sess.Text(c.Input)})
	}
	for _, tc := range c.ToolCalls {
		dc.Observed.ToolCalls = append(dc.Observed.ToolCalls, dataset.Call{Name: tc.Name, Arguments: redactedArgs(sess, tc)})
	}
	dc.Observed.Output = sess.Text(c.Output)
	for _, r := range results {
		dr := dataset.Result{Name: r.Name, Type: r.Type, Status: string(r.Status), Version: r.Version, Reason: r.Reason}
		if r.Scored() {
			s := r.Score
			dr.Score = &s
		}
		dc.Results = append(dc.Results, dr)
	}
	dc.ID = dataset.CaseID(dc.Input, dc.Observed.ToolCalls)
	return dc
}

// redactedArgs is a call's arguments with their strings redacted; the
// raw text (redacted) under "_raw" when they were not a JSON object.
func redactedArgs(sess *redact.Session, tc adapter.ToolCall) map[string]any {
	if tc.Arguments == nil {
		if strings.TrimSpace(tc.RawArguments) == "" {
			return map[string]any{}
		}
		return map[string]any{"_raw": sess.Text(tc.RawArguments)}
	}
	b, err := json.Marshal(tc.Arguments)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if json.Unmarshal(sess.JSON(b), &out) != nil || out == nil {
		return map[string]any{}
	}
	return out
}

// traceStart is the start of the trace's earliest span, RFC 3339 UTC.
func traceStart(spans []adapter.SpanRef) string {
	var first pcommon.Timestamp
	for _, s := range spans {
		if t := s.Span.StartTimestamp(); t != 0 && (first == 0 || t < first) {
			first = t
		}
	}
	if first == 0 {
		return ""
	}
	return first.AsTime().UTC().Format(time.RFC3339Nano)
}

func writeAddReport(w io.Writer, format, dir string, ds *dataset.Dataset, got []captured) int {
	added, dups := []string{}, []string{}
	for _, c := range got {
		if c.duplicate {
			dups = append(dups, c.id)
		} else {
			added = append(added, c.id)
		}
	}
	pinned := 0
	for _, c := range ds.Cases {
		if c.Pinned() {
			pinned++
		}
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{
			"dataset": dir, "added": len(added), "duplicates": len(dups), "added_ids": added, "duplicate_ids": dups,
			"cases": len(ds.Cases), "pinned": pinned,
		})
		return exitOK
	}
	for _, c := range got {
		what := "added    "
		if c.duplicate {
			what = "duplicate"
		}
		fmt.Fprintf(w, "%s %s  trace %s  failed: %s\n", what, c.id, c.traceID, orNone(c.failed))
	}
	fmt.Fprintf(w, "added %d case(s), %d duplicate(s); %s holds %d case(s), %d pinned\n", len(added), len(dups), dir, len(ds.Cases), pinned)
	return exitOK
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

type datasetListFlags struct {
	fs                       *flag.FlagSet
	asJSON, pinned, unpinned *bool
	failed, service          *string
}

func newDatasetListFlags() datasetListFlags {
	fs := flag.NewFlagSet("evalctl dataset list", flag.ContinueOnError)
	return datasetListFlags{
		fs:       fs,
		asJSON:   fs.Bool("json", false, "print the cases as a JSON array"),
		pinned:   fs.Bool("pinned", false, "only the pinned cases"),
		unpinned: fs.Bool("unpinned", false, "only the cases not pinned yet"),
		failed:   fs.String("failed", "", "only the cases in which evaluator `NAME` failed at capture"),
		service:  fs.String("service", "", "only the cases captured from service `S`"),
	}
}

// listedCase is a row of `dataset list --json`.
type listedCase struct {
	ID        string   `json:"id"`
	Pinned    bool     `json:"pinned"`
	TraceID   string   `json:"trace_id"`
	Service   string   `json:"service"`
	StartTime string   `json:"start_time"`
	Failed    []string `json:"failed"`
	Input     string   `json:"input"`
	ToolCalls []string `json:"tool_calls"`
}

func datasetListCmd(args []string, stdout, stderr io.Writer) int {
	f := newDatasetListFlags()
	f.fs.SetOutput(stderr)
	pos, err := parseInterleaved(f.fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 || (*f.pinned && *f.unpinned) {
		fmt.Fprintln(stderr, "evalctl dataset list: usage: evalctl dataset list DIR [--json] [--pinned | --unpinned] [--failed NAME] [--service S]")
		return exitUsage
	}
	ds, err := dataset.Open(pos[0], false)
	if err != nil {
		fmt.Fprintf(stderr, "evalctl dataset list: %v\n", err)
		return exitUsage
	}
	rows := []listedCase{}
	for _, c := range ds.Cases {
		switch {
		case *f.pinned && !c.Pinned(), *f.unpinned && c.Pinned():
			continue
		case *f.failed != "" && !slices.Contains(c.Failed(), *f.failed):
			continue
		case *f.service != "" && c.Source.Service != *f.service:
			continue
		}
		row := listedCase{ID: c.ID, Pinned: c.Pinned(), TraceID: c.Source.TraceID, Service: c.Source.Service,
			StartTime: c.Source.StartTime, Failed: c.Failed(), Input: c.Prompt(), ToolCalls: []string{}}
		if row.Failed == nil {
			row.Failed = []string{}
		}
		for _, tc := range c.Observed.ToolCalls {
			row.ToolCalls = append(row.ToolCalls, tc.Name)
		}
		rows = append(rows, row)
	}
	if *f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return exitUsage
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPINNED\tSERVICE\tSTART\tFAILED AT CAPTURE\tTOOL CALLS\tINPUT")
	for _, r := range rows {
		pinned := "no"
		if r.Pinned {
			pinned = "yes"
		}
		start := r.StartTime
		if t, err := time.Parse(time.RFC3339Nano, start); err == nil {
			start = t.UTC().Format("2006-01-02 15:04:05") // the file keeps the nanoseconds
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, pinned, orDash(r.Service), orDash(start), orNone(r.Failed),
			textutil.Ellipsis(orNone(r.ToolCalls), 48), textutil.Ellipsis(strings.Join(strings.Fields(r.Input), " "), 60))
	}
	if err := tw.Flush(); err != nil {
		return exitUsage
	}
	fmt.Fprintf(stdout, "%d case(s) of %d\n", len(rows), len(ds.Cases))
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type datasetPinFlags struct {
	fs                               *flag.FlagSet
	toolCalls, output, from, traceID *string
	outputSet                        *bool
}

func newDatasetPinFlags() datasetPinFlags {
	fs := flag.NewFlagSet("evalctl dataset pin", flag.ContinueOnError)
	f := datasetPinFlags{fs: fs, outputSet: new(bool)}
	f.toolCalls = fs.String("tool-calls", "", "the expected tool calls: a JSON array of {\"name\", \"arguments\"} objects or of names (§3)")
	f.output = new(string)
	fs.Func("output", "the expected final output `TEXT`", func(v string) error {
		*f.output, *f.outputSet = v, true
		return nil
	})
	f.from = fs.String("from", "", "take the expected tool calls from a good run in `FILE` (OTLP/JSON or Jaeger JSON; with --trace-id)")
	f.traceID = fs.String("trace-id", "", "the good run's trace id `T` in --from")
	return f
}

func datasetPinCmd(args []string, stdout, stderr io.Writer) int {
	f := newDatasetPinFlags()
	f.fs.SetOutput(stderr)
	pos, err := parseInterleaved(f.fs, args)
	if err != nil {
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "evalctl dataset pin: "+format+"\n", a...)
		return exitUsage
	}
	hasCalls := *f.toolCalls != ""
	switch {
	case len(pos) != 2:
		return fail("usage: evalctl dataset pin DIR ID (--tool-calls JSON [--output TEXT] | --output TEXT | --from FILE --trace-id T)")
	case (*f.from == "") != (*f.traceID == ""):
		return fail("--from and --trace-id go together")
	case *f.from != "" && hasCalls:
		return fail("--from takes the tool calls of a run: give it or --tool-calls, not both")
	case *f.from == "" && !hasCalls && !*f.outputSet:
		return fail("nothing to pin: give --tool-calls, --output or --from with --trace-id")
	}
	ds, err := dataset.Open(pos[0], false)
	if err != nil {
		return fail("%v", err)
	}
	c := ds.Get(pos[1])
	if c == nil {
		return fail("dataset %s has no case %q (evalctl dataset list %s shows the ids)", pos[0], pos[1], pos[0])
	}
	var calls, output []byte
	if hasCalls {
		calls = []byte(*f.toolCalls)
	}
	if *f.from != "" {
		if calls, err = toolCallsOfRun(*f.from, *f.traceID); err != nil {
			return fail("%v", err)
		}
	}
	if *f.outputSet {
		output, _ = json.Marshal(*f.output)
	}
	exp, err := dataset.ParseExpected(calls, output)
	if err != nil {
		return fail("case %s: %v", c.ID, err)
	}
	if err := pinCase(ds, c, exp); err != nil {
		return fail("%v", err)
	}
	b, _ := json.Marshal(c.Expected)
	fmt.Fprintf(stdout, "pinned %s: expected %s\n", c.ID, b)
	return exitOK
}

// pinCase sets the parts of c's expectation that exp gives (a pin of the
// output keeps pinned tool calls, and the other way round) and saves c.
func pinCase(ds *dataset.Dataset, c *dataset.Case, exp *dataset.Expected) error {
	merged := *exp
	if c.Expected != nil {
		if len(merged.ToolCalls) == 0 {
			merged.ToolCalls = c.Expected.ToolCalls
		}
		if len(merged.Output) == 0 {
			merged.Output = c.Expected.Output
		}
	}
	old := c.Expected
	c.Expected = &merged
	if err := ds.Save(c); err != nil {
		c.Expected = old
		return err
	}
	return nil
}

// toolCallsOfRun reads the agent run of trace traceID in file and returns
// its tool calls as a §3 expectation (name and arguments, in order).
func toolCallsOfRun(file, traceID string) ([]byte, error) {
	docs, err := readInputs([]string{file}, nil)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	want := strings.ToLower(strings.TrimSpace(traceID))
	for _, spans := range tracesInOrder(docs) {
		if spans[0].Span.TraceID().String() != want {
			continue
		}
		cases, _ := adapter.AdaptWith(spans, adapter.Options{AgentCases: true})
		if len(cases) == 0 {
			return nil, fmt.Errorf("--from %s: trace %s has no agent run (no agent, LLM or tool span)", file, traceID)
		}
		type call struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		calls := []call{}
		for _, tc := range cases[0].ToolCalls {
			args := tc.Arguments
			if args == nil {
				args = map[string]any{}
			}
			calls = append(calls, call{tc.Name, args})
		}
		return json.Marshal(calls)
	}
	return nil, errors.New("--from " + file + ": no trace " + traceID)
}

func newDatasetHistoryFlags() (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("evalctl dataset history", flag.ContinueOnError)
	return fs, fs.Bool("json", false, "print the entries as JSON lines, as history.jsonl holds them")
}

// datasetHistoryCmd prints one case's recorded outcomes, oldest first.
func datasetHistoryCmd(args []string, stdout, stderr io.Writer) int {
	fs, asJSON := newDatasetHistoryFlags()
	fs.SetOutput(stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "evalctl dataset history: usage: evalctl dataset history DIR ID [--json]")
		return exitUsage
	}
	ds, err := dataset.Open(pos[0], false)
	if err == nil && ds.Get(pos[1]) == nil {
		err = fmt.Errorf("dataset %s has no case %q", pos[0], pos[1])
	}
	var entries []dataset.HistoryEntry
	if err == nil {
		entries, err = dataset.History(pos[0], pos[1])
	}
	if err != nil {
		fmt.Fprintf(stderr, "evalctl dataset history: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range entries {
			_ = enc.Encode(e)
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSTATUS\tRESULTS (name@version status score)")
	for _, e := range entries {
		var parts []string
		for _, r := range e.Results {
			score := "-"
			if r.Score != nil {
				score = fmt.Sprintf("%.3g", *r.Score)
			}
			parts = append(parts, fmt.Sprintf("%s@%s %s %s", r.Name, orDash(r.Version), r.Status, score))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Time, e.Status, strings.Join(parts, "; "))
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "%d run(s) recorded for case %s\n", len(entries), pos[1])
	return exitOK
}
