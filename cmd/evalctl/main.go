// Command evalctl runs the evalbridge engine offline over exported trace
// files: a CI gate that scores agent runs exactly as the `eval` processor
// does in a collector (docs/contract.md §7).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Exit codes (docs/contract.md §7).
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `evalctl scores LLM agent traces offline, as the evalbridge collector does.

Usage:
  evalctl run --config FILE [--out FILE|-] [--summary text|json]
              [--min-pass-rate NAME=R]... [--baseline SUMMARY.json] [--dataset DIR]
              [--allow-version-change] [--junit FILE.xml] [--report FILE.html]
              [--trace-url TEMPLATE]
              [--allow-unscored]
              (INPUT... | --jaeger URL [--service S] [--operation O]
               [--tags K=V]... [--lookback 24h] [--limit N] [--max-answer-bytes B])
  evalctl estimate --config FILE [--summary text|json]
              (INPUT... | --jaeger URL [--service S] [--operation O]
               [--tags K=V]... [--lookback 24h] [--limit N] [--max-answer-bytes B])
  evalctl calibrate --config FILE --labels LABELS... [--min-kappa 0.6]
              [--summary text|json] [--report FILE.html] [--trace-url TEMPLATE]
              (INPUT... | --jaeger URL ...)
  evalctl validate --config FILE
  evalctl dataset (add | list | pin) DIR ...   (evalctl dataset -h)
  evalctl review DIR [--listen 127.0.0.1:8899] [--name NAME]

estimate reads the inputs as run does and reports the judge calls each
evaluator would make (the deterministic evaluators run, so run_if, when and
sample_rate apply), their input tokens, an upper bound of their output
tokens and, for judges with a price, the cost; no judge is called.

calibrate scores the inputs as run does and compares each evaluator with
human labels of the same spans (JSON Lines {"trace_id", "span_id", "name",
"label"}, or OTLP/JSON logs of human gen_ai.evaluation.result records):
pairs, accuracy, Cohen's kappa with its 95% bootstrap interval, the share
of human failures caught and of human passes passed, the confusion matrix,
and the threshold that maximises kappa. An evaluator is fit to gate when
kappa's lower bound is at least --min-kappa; exit 1 when one with labels
is not.

INPUT is OTLP/JSON (one export request per document, or JSON Lines of them:
what the collector's file exporter writes) or a Jaeger JSON export
({"data": [{"traceID", "spans", "processes"}]}), detected per document;
"-" reads stdin.

Gates: --min-pass-rate NAME=R fails when the 95% Wilson interval of NAME's
pass rate lies wholly below R; --baseline fails when a pass rate dropped and
its interval lies wholly below the baseline's, and for an evaluator whose
version differs from the baseline's ("not comparable") unless
--allow-version-change. An evaluator with no scored case has no pass rate,
and a gate on it fails.

Exit status: without a gate option, 0 when nothing failed, 1 when any
evaluation failed; with one, 0 when all gates hold, 1 when a gate failed.
2 for bad usage, config or input. No false green: 1 also when an evaluator
scored no case, when its errors and timeouts outnumber its scored cases, or
when an input's spans give no case, unless --allow-unscored.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdin, stdout, stderr)
	case "estimate":
		return estimateCmd(ctx, args[1:], stdin, stdout, stderr)
	case "calibrate":
		return calibrateCmd(ctx, args[1:], stdin, stdout, stderr)
	case "validate":
		return validateCmd(ctx, args[1:], stderr, stdout)
	case "dataset":
		return datasetCmd(ctx, args[1:], stdin, stdout, stderr)
	case "review":
		return reviewCmd(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "evalctl: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
