// Program evalbridge-loadgen sends realistic GenAI agent traces (OTel GenAI
// semconv: an invoke_agent root with eval.expected.tool_calls, chat and
// execute_tool spans, one trace's spans spread over several requests) plus a
// share of non-GenAI traffic to an otelcol-evalbridge over OTLP/gRPC, at a
// fixed rate for a bounded time. It runs the capture backend itself (an
// OTLP/HTTP traces endpoint the collector exports to) and reports what was
// sent, received, scored, duplicated and lost.
//
//	evalbridge-loadgen run   [flags]   one load against a collector you run
//	evalbridge-loadgen suite [flags]   the reliability suite: builds and runs the collector itself
//	evalbridge-loadgen cpu   [flags]   the collector's CPU per span with and without the eval processor
//	evalbridge-loadgen soak  [flags]   the example pipeline for a long time: nothing may grow
//
// It talks to loopback, or to the addresses you give it, nothing else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

const usage = `usage:
  evalbridge-loadgen run   [flags]   send a load to a running collector; report from the capture sink
  evalbridge-loadgen suite [flags]   build otelcol-evalbridge, run the reliability scenarios against it
  evalbridge-loadgen cpu   [flags]   build otelcol-evalbridge, compare its CPU per span with [batch] and [eval, batch]
  evalbridge-loadgen soak  [flags]   build otelcol-evalbridge, run the example pipeline for -duration, check RSS,
                                     goroutines, open files and the bounded maps stay flat

Run "evalbridge-loadgen run -h" or "evalbridge-loadgen suite -h" for the flags.
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	// Whatever ends this program, the collectors it started end with it.
	defer killAll()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], stdout, stderr)
	case "suite":
		err = suiteCmd(ctx, args[1:], stdout, stderr)
	case "cpu":
		err = cpuCmd(ctx, args[1:], stdout, stderr)
	case "soak":
		err = soakCmd(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "evalbridge-loadgen: %v\n", err)
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

func suiteCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := suiteOptions{out: stdout}
	fs.BoolVar(&o.short, "short", false, "smaller hostile traces (x0.2), for CI")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when a scenario loses an acknowledged span, scores a passing run failed, leaks the judge key, passes a bad token count, misplaces results, or refuses requests for good")
	fs.StringVar(&o.only, "only", "", "comma-separated scenarios to run (baseline,overload,outage,retries,hostile,shutdown,judge,stream,...: the names the suite prints); default all")
	fs.StringVar(&o.collector, "collector", "", "a prebuilt otelcol-evalbridge binary; default: go build ./cmd/otelcol-evalbridge")
	fs.BoolVar(&o.keep, "keep", false, "keep the generated configs and collector logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return runSuite(ctx, o)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := loadConfig{}
	endpoint := fs.String("endpoint", "127.0.0.1:4317", "the collector's OTLP/gRPC receiver, host:port")
	sinkAddr := fs.String("sink", "127.0.0.1:14318", "where the capture sink listens (OTLP/HTTP); export the collector's traces to http://ADDR")
	fs.Float64Var(&cfg.rate, "rate", 50, "traces started per second")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long new traces start")
	fs.Float64Var(&cfg.plainShare, "plain", 0.2, "share of non-GenAI traces (passed straight through)")
	fs.Float64Var(&cfg.failShare, "fail", 0.2, "share of agent runs designed to fail tool_trajectory (tools in the wrong order)")
	fs.IntVar(&cfg.parts, "parts", 3, "requests one trace's spans are spread over (the root span comes last)")
	fs.DurationVar(&cfg.gap, "gap", 100*time.Millisecond, "time between the requests of one trace")
	fs.Float64Var(&cfg.resend, "resend", 0, "share of acknowledged requests sent again (a client that lost the response)")
	fs.Float64Var(&cfg.hostile, "hostile", 0, "share of traces that are hostile")
	kinds := fs.String("hostile-kinds", "all", "comma-separated hostile kinds, or all: "+strings.Join(hostileKinds, ","))
	fs.Float64Var(&cfg.scale, "hostile-scale", 1, "multiplies the hostile sizes (10 MB values, 100k spans, 10k nesting, 10k/50k calls)")
	fs.DurationVar(&cfg.retryFor, "retry-for", 60*time.Second, "a request refused with a retryable code is retried with backoff for this long")
	fs.IntVar(&cfg.conns, "conns", 4, "parallel senders")
	fs.IntVar(&cfg.maxReqSpans, "max-request-spans", 512, "spans per request at most")
	seed := fs.Uint64("seed", 1, "random seed (the same seed makes the same traces)")
	drain := fs.Duration("drain", 30*time.Second, "after the load, wait this long at most for the acknowledged spans to arrive")
	idle := fs.Duration("idle", 5*time.Second, "… and stop waiting once the sink was quiet this long (above the collector's eval wait)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	cfg.endpoint = *endpoint
	cfg.seed = *seed
	if *kinds == "all" {
		cfg.hostileKinds = hostileKinds
	} else {
		for _, k := range strings.Split(*kinds, ",") {
			if !slices.Contains(hostileKinds, k) {
				fmt.Fprintf(stderr, "unknown hostile kind %q (known: %s)\n", k, strings.Join(hostileKinds, ","))
				return errUsage
			}
			cfg.hostileKinds = append(cfg.hostileKinds, k)
		}
	}
	if cfg.rate <= 0 || cfg.duration <= 0 {
		fmt.Fprintln(stderr, "-rate and -duration must be positive")
		return errUsage
	}

	s, err := newSink(*sinkAddr)
	if err != nil {
		return fmt.Errorf("capture sink on %s: %w", *sinkAddr, err)
	}
	defer s.close()
	fmt.Fprintf(stdout, "sending to %s (%s); capture sink on http://%s\n", cfg.endpoint, cfg, s.addr)
	l := newLoad(cfg)
	if err := l.run(ctx); err != nil {
		return err
	}
	ok := s.quiet(ctx, *idle, time.Now().Add(*drain), func() bool { return true })
	r := account("run", l, s)
	if !ok {
		r.Notes = append(r.Notes, fmt.Sprintf("the sink was still receiving after the %s drain", *drain))
	}
	if e := l.lastErr(); e != "" {
		r.Notes = append(r.Notes, "last client error: "+clip(e, 200))
	}
	r.print(stdout)
	return nil
}
