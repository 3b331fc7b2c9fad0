package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// scoring is what run and estimate both take: --config, --summary and
// the inputs (files, or the Jaeger query of the --jaeger flags).
type scoring struct {
	cmd           string // the command, for messages ("evalctl run")
	configPath    string
	summaryFormat string
	jaeger        *jaegerSource
	inputs        []string
	// leading is how many positional arguments come before the inputs
	// (`dataset add DIR INPUT...`: 1); parse puts them in lead.
	leading int
	lead    []string
}

// addScoringFlags declares the flags of scoring on fs.
func addScoringFlags(fs *flag.FlagSet, summaryUsage string) *scoring {
	s := &scoring{cmd: fs.Name()}
	fs.StringVar(&s.configPath, "config", "", "the evaluation config `FILE` (the YAML of the eval processor's block)")
	fs.StringVar(&s.summaryFormat, "summary", "text", summaryUsage)
	s.jaeger = addJaegerFlags(fs)
	return s
}

// parse parses args (flags may come before, between or after the inputs),
// checks them (a --config, inputs that agree with --jaeger, a --summary
// format) and loads the config. On failure it says why on stderr and
// returns nil.
func (s *scoring) parse(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) *engine.Config {
	inputs, err := parseInterleaved(fs, args)
	if err != nil {
		return nil
	}
	if len(inputs) < s.leading {
		fmt.Fprintf(stderr, "%s: missing argument (see -h)\n", s.cmd)
		return nil
	}
	s.lead, s.inputs = inputs[:s.leading], inputs[s.leading:]
	inputs = s.inputs
	switch {
	case s.configPath == "":
		err = errors.New("--config is required")
	case s.jaeger.checkInputs(inputs) != nil:
		err = s.jaeger.checkInputs(inputs)
	case s.summaryFormat != "text" && s.summaryFormat != "json":
		err = fmt.Errorf("--summary %q: want text or json", s.summaryFormat)
	}
	var cfg *engine.Config
	if err == nil {
		cfg, err = loadConfig(ctx, s.configPath, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", s.cmd, err)
		return nil
	}
	return cfg
}

// parseInterleaved parses flags that may appear before, between or after the
// positional arguments (`evalctl run in.json --config c.yaml` works too).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func validateCmd(ctx context.Context, args []string, stderr, stdout io.Writer) int {
	fs := flag.NewFlagSet("evalctl validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the evaluation config `FILE` (the YAML of the eval processor's block)")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if *configPath == "" || len(rest) > 0 {
		fmt.Fprintln(stderr, "evalctl validate: usage: evalctl validate --config FILE")
		return exitUsage
	}
	cfg, err := loadConfig(ctx, *configPath, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "evalctl validate: %v\n", err)
		return exitUsage
	}
	eng, err := engine.New(cfg, telemetry(zap.NewNop()))
	if err != nil {
		fmt.Fprintf(stderr, "evalctl validate: config %s: %v\n", *configPath, err)
		return exitUsage
	}
	_ = eng.Shutdown(ctx) // built only to check the config; nothing was started
	fmt.Fprintf(stdout, "%s: valid (%d evaluators)\n", *configPath, len(cfg.Evaluators))
	return exitOK
}

func runCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evalctl run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sc := addScoringFlags(fs, "summary format: text or json")
	outPath := fs.String("out", "", "write the annotated traces as JSON Lines of OTLP/JSON to FILE, or - for stdout")
	var gates gateSet
	fs.Var(&gates.minPass, "min-pass-rate", "gate: NAME=R fails when the 95% interval of NAME's pass rate lies wholly below R (repeatable)")
	fs.StringVar(&gates.baselinePath, "baseline", "", "gate: an earlier --summary json; fails when a pass rate dropped and the intervals do not overlap")
	record := fs.Bool("record", false, "with --dataset: append each pinned case's outcome and results (with evaluator versions) to DIR/history.jsonl")
	fs.StringVar(&gates.datasetDir, "dataset", "", "gate: score the traces tagged eval.dataset.case_id against the pinned cases of the dataset in `DIR`; fails unless every pinned case ran and passed")
	fs.BoolVar(&gates.allowVersionChange, "allow-version-change", false, "with --baseline: compare an evaluator whose version changed since the baseline instead of failing its gate as not comparable")
	junitPath := fs.String("junit", "", "write JUnit XML to FILE: one test case per (evaluator, case)")
	reportPath := fs.String("report", "", "write a self-contained HTML report to FILE")
	traceURL := fs.String("trace-url", "", "link template for traces in --report and --junit, with {trace_id} and {span_id} placeholders")
	allowUnscored := fs.Bool("allow-unscored", false, "exit 0 even when an evaluator scored no case, its errors and timeouts outnumber its scored cases, or an input holds no case")
	cfg := sc.parse(ctx, fs, args, stderr)
	if cfg == nil {
		return exitUsage
	}
	var err error
	var replays *datasetRun
	if gates.datasetDir != "" {
		if replays, err = openDatasetRun(gates.datasetDir); err != nil {
			fmt.Fprintf(stderr, "evalctl run: --dataset: %v\n", err)
			return exitUsage
		}
	}
	if gates.baselinePath != "" {
		// Read before scoring: a bad baseline should not cost a judge bill.
		if gates.baseline, err = readBaseline(gates.baselinePath); err != nil {
			fmt.Fprintf(stderr, "evalctl run: %v\n", err)
			return exitUsage
		}
	}
	logger := newLogger(stderr)
	eng, err := engine.New(cfg, telemetry(logger))
	if err != nil {
		fmt.Fprintf(stderr, "evalctl run: config %s: %v\n", sc.configPath, err)
		return exitUsage
	}
	sum := newSummary(eng.Instances())
	sum.setExpectations(cfg.Evaluators)
	if err := gates.checkNames(sum); err != nil {
		_ = eng.Shutdown(ctx)
		fmt.Fprintf(stderr, "evalctl run: %v\n", err)
		return exitUsage
	}
	// Logs alone score nothing, and a gate over nothing would pass.
	docs, traces, ok := startScoring(ctx, eng, sc, stdin, stderr,
		"no trace in the inputs (log records are joined to the spans of their traces)")
	if !ok {
		return exitUsage
	}
	defer func() { _ = eng.Shutdown(ctx) }()
	if replays != nil {
		replays.probeReaders(eng.Instances())
		replays.prepare(traces, stderr)
		sum.observe = replays.observe
	}
	docs = scoreInputs(ctx, eng, cfg, docs, traces, sum, stderr)
	if replays != nil {
		sum.dataset = replays.summary()
		if *record {
			if err := replays.record(sum.dataset, time.Now()); err != nil {
				fmt.Fprintf(stderr, "evalctl run: --record: %v\n", err)
				return exitUsage
			}
		}
	}
	sum.setSpend(eng.JudgeSpend())

	// Traces to stdout keep it machine-readable: the summary then goes to stderr.
	summaryOut := stdout
	if *outPath != "" {
		w, file := stdout, (*os.File)(nil)
		if *outPath == "-" {
			summaryOut = stderr
		} else {
			f, err := os.Create(*outPath)
			if err != nil {
				fmt.Fprintf(stderr, "evalctl run: --out %s: %v\n", *outPath, err)
				return exitUsage
			}
			defer f.Close() // on the error paths; a successful write checks Close below
			w, file = f, f
		}
		err := writeDocuments(w, docs)
		if err == nil && file != nil {
			// A file's write errors may surface only at Close (NFS, quotas).
			err = file.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "evalctl run: --out %s: %v\n", *outPath, err)
			return exitUsage
		}
	}
	var verdicts []gateResult
	if gates.active() {
		verdicts = append([]gateResult{}, gates.evaluate(sum)...)
	}
	if *junitPath != "" {
		if err := writeFileWith(*junitPath, func(w io.Writer) error { return writeJUnit(w, sum, *traceURL) }); err != nil {
			fmt.Fprintf(stderr, "evalctl run: --junit %s: %v\n", *junitPath, err)
			return exitUsage
		}
	}
	if *reportPath != "" {
		if err := writeFileWith(*reportPath, func(w io.Writer) error { return writeReport(w, sum, verdicts, *traceURL) }); err != nil {
			fmt.Fprintf(stderr, "evalctl run: --report %s: %v\n", *reportPath, err)
			return exitUsage
		}
	}
	if sc.summaryFormat == "json" {
		err = sum.writeJSON(summaryOut, verdicts)
		// stdout stays JSON; a CI log still shows why the gate failed.
		for _, g := range verdicts {
			if !g.OK {
				fmt.Fprintf(stderr, "evalctl: gate %s failed: %s\n", g.Gate, g.Message)
			}
		}
	} else {
		err = sum.writeText(summaryOut, verdicts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "evalctl run: summary: %v\n", err)
		return exitUsage
	}
	// Nothing scored is no green: a judge that is down, or a file without
	// GenAI spans, must not pass a CI gate.
	unscored := sum.unscored()
	for _, m := range unscored {
		fmt.Fprintf(stderr, "evalctl: not scored: %s\n", m)
	}
	if len(unscored) > 0 && !*allowUnscored {
		fmt.Fprintln(stderr, "evalctl: failing: some results say nothing (--allow-unscored accepts this)")
		return exitFailed
	}
	// With a gate option the gates decide; single failures are expected noise.
	if gates.active() {
		if gatesFailed(verdicts) > 0 {
			return exitFailed
		}
		return exitOK
	}
	if sum.anyFailed() {
		return exitFailed
	}
	return exitOK
}

// writeFileWith creates path and writes it with write, reporting the error
// of Close too (a file's write errors may surface only there).
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		_ = f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// tracesInOrder groups the spans of all documents by trace id — a trace may
// be split across documents and files — in order of first appearance, so
// the output and the summary are the same from run to run.
func tracesInOrder(docs []document) [][]adapter.SpanRef {
	index := map[pcommon.TraceID]int{}
	var out [][]adapter.SpanRef
	for _, d := range docs {
		if d.isLogs {
			continue
		}
		adapter.ForEachSpan(d.traces, func(r adapter.SpanRef) {
			id := r.Span.TraceID()
			at, seen := index[id]
			if !seen {
				at = len(out)
				index[id] = at
				out = append(out, nil)
			}
			out[at] = append(out[at], r)
		})
	}
	return out
}

// inputsWithoutCase names the input files whose spans gave no case that an
// evaluator scored (no LLM, agent or tool span, or none an evaluator's
// `case` and `when` select).
func inputsWithoutCase(docs []document, withCase map[pcommon.TraceID]bool) []string {
	type count struct {
		spans   int
		traces  map[pcommon.TraceID]bool
		hasCase bool
	}
	var order []string
	files := map[string]*count{}
	for _, d := range docs {
		if d.isLogs {
			continue
		}
		c := files[d.file]
		if c == nil {
			c = &count{traces: map[pcommon.TraceID]bool{}}
			files[d.file] = c
			order = append(order, d.file)
		}
		adapter.ForEachSpan(d.traces, func(r adapter.SpanRef) {
			id := r.Span.TraceID()
			c.spans++
			c.traces[id] = true
			c.hasCase = c.hasCase || withCase[id]
		})
	}
	var out []string
	for _, f := range order {
		if c := files[f]; c.spans > 0 && !c.hasCase {
			out = append(out, fmt.Sprintf("input %s: %d span(s) in %d trace(s), but no case was scored: no LLM, agent or tool span "+
				"(or none an evaluator's `case` and `when` select)", f, c.spans, len(c.traces)))
		}
	}
	return out
}

// logsByTrace groups the log records of every logs document by trace id.
func logsByTrace(docs []document) map[pcommon.TraceID][]plog.LogRecord {
	out := map[pcommon.TraceID][]plog.LogRecord{}
	for _, d := range docs {
		if !d.isLogs {
			continue
		}
		for id, recs := range adapter.GroupLogsByTrace(d.logs) {
			out[id] = append(out[id], recs...)
		}
	}
	return out
}

// newLogger writes warnings and errors to w, readable in a CI log.
func newLogger(w io.Writer) *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.WarnLevel))
}

func telemetry(l *zap.Logger) component.TelemetrySettings {
	set := componenttest.NewNopTelemetrySettings()
	set.Logger = l
	return set
}
