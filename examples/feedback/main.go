// Program feedback sends user feedback on agent runs as an application
// would: a thumbs up or down, as a `gen_ai.evaluation.result` log record
// (docs/contract.md §25: gen_ai.evaluation.evaluator.type human, the name of
// the evaluation it labels, score.label thumbs_up or thumbs_down) emitted
// with the OpenTelemetry Go SDK's logs API in the trace of the run it is
// about, and exported over OTLP/gRPC to the collector, whose `evalmetrics`
// connector pairs it with the judge's result for the same run.
//
// It reads the runs examples/agent prints (`NAME trace_id=…`) and plays
// the users of the worked example (docs/agreement.md): they turn the thumb
// down when the hotel could not be booked (the tool_error run) and, on
// every fourth loop run, because the answer was slow; up otherwise.
//
//	go run ./examples/agent | go run ./examples/feedback               # to localhost:4317
//	go run ./examples/agent -out runs.jsonl | go run ./examples/feedback -out labels.jsonl
//
// -out writes the same feedback as the JSON Lines labels `evalctl
// calibrate --labels` reads, instead of sending it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.38.0"
	"go.opentelemetry.io/otel/trace"
)

// evaluation is the judge evaluator the feedback labels (its name in
// examples/agreement/judge.yaml): by default evalmetrics pairs a human
// result with the machine result of the same name.
const evaluation = "helpful"

var runLine = regexp.MustCompile(`^\s+(\w+)\s+trace_id=([0-9a-f]{32})\b`)

// feedback is one user's reaction to one run.
type feedback struct {
	Run     string
	TraceID trace.TraceID
	Label   string // thumbs_up or thumbs_down
	Comment string
}

// react plays the example's users: loopRuns counts the loop runs so far.
func react(run string, loopRuns int) (label, comment string) {
	switch {
	case run == "tool_error":
		return "thumbs_down", "no hotel: the room was not booked"
	case run == "loop" && loopRuns%4 == 0:
		return "thumbs_down", "took too long to answer"
	}
	return "thumbs_up", ""
}

// readRuns turns the agent's output into feedback, one per run line.
func readRuns(r io.Reader) ([]feedback, error) {
	var out []feedback
	loops := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := runLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		tid, err := trace.TraceIDFromHex(m[2])
		if err != nil {
			return nil, fmt.Errorf("trace_id %s: %w", m[2], err)
		}
		if m[1] == "loop" {
			loops++
		}
		label, comment := react(m[1], loops)
		out = append(out, feedback{Run: m[1], TraceID: tid, Label: label, Comment: comment})
	}
	return out, sc.Err()
}

func main() {
	endpoint := flag.String("endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		"OTLP/gRPC endpoint, host:port or http(s)://host:port (default localhost:4317; env OTEL_EXPORTER_OTLP_ENDPOINT)")
	out := flag.String("out", "", "write the feedback as JSON Lines labels to `FILE` (for evalctl calibrate --labels) instead of sending it")
	flag.Parse()
	fbs, err := readRuns(os.Stdin)
	if err != nil {
		log.Fatalf("feedback: reading runs: %v", err)
	}
	if len(fbs) == 0 {
		log.Fatal("feedback: no run on stdin (pipe in the output of go run ./examples/agent)")
	}
	if *out != "" {
		if err := writeLabels(*out, fbs); err != nil {
			log.Fatalf("feedback: %v", err)
		}
		fmt.Printf("wrote %d labels to %s\n", len(fbs), *out)
		return
	}
	if *endpoint == "" {
		*endpoint = "localhost:4317"
	}
	if err := send(context.Background(), *endpoint, fbs); err != nil {
		log.Fatalf("feedback: %v", err)
	}
}

// send emits one log record per feedback through the SDK's logs API and
// flushes them to endpoint.
func send(ctx context.Context, endpoint string, fbs []feedback) error {
	opts := []otlploggrpc.Option{otlploggrpc.WithTimeout(5 * time.Second)}
	if strings.Contains(endpoint, "://") {
		if _, err := url.Parse(endpoint); err != nil {
			return fmt.Errorf("bad endpoint %q: %w", endpoint, err)
		}
		opts = append(opts, otlploggrpc.WithEndpointURL(endpoint))
	} else {
		opts = append(opts, otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithInsecure())
	}
	exp, err := otlploggrpc.New(ctx, opts...)
	if err != nil {
		return err
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)),
		sdklog.WithResource(resource.NewSchemaless(semconv.ServiceName("travel-agent-feedback"))))
	logger := lp.Logger("github.com/evalbridge/evalbridge/examples/feedback")
	down := 0
	for _, fb := range fbs {
		// The record belongs to the run's trace: the application answers
		// feedback on a response it served, and knows its trace id. Without
		// a span id the label is for the trace's agent case.
		runCtx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: fb.TraceID}))
		var rec otellog.Record
		rec.SetEventName("gen_ai.evaluation.result")
		now := time.Now()
		rec.SetTimestamp(now)
		rec.SetObservedTimestamp(now)
		rec.SetSeverity(otellog.SeverityInfo)
		rec.AddAttributes(
			attribute.String("gen_ai.evaluation.name", evaluation),
			attribute.String("gen_ai.evaluation.evaluator.type", "human"),
			attribute.String("gen_ai.evaluation.score.label", fb.Label),
			attribute.String("gen_ai.agent.name", "travel_agent"),
		)
		if fb.Comment != "" {
			rec.AddAttributes(attribute.String("gen_ai.evaluation.explanation", fb.Comment))
		}
		logger.Emit(runCtx, rec)
		if fb.Label == "thumbs_down" {
			down++
		}
	}
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lp.Shutdown(shutdownCtx); err != nil { // flushes the batch
		return fmt.Errorf("flushing feedback to %s: %w", endpoint, err)
	}
	fmt.Printf("sent %d feedback records (%d thumbs down) to %s\n", len(fbs), down, endpoint)
	return nil
}

// writeLabels writes fbs as calibrate's JSON Lines labels.
func writeLabels(path string, fbs []feedback) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, fb := range fbs {
		if err := enc.Encode(map[string]string{"trace_id": fb.TraceID.String(), "name": evaluation, "label": fb.Label,
			"critique": fb.Comment, "run": fb.Run}); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}
