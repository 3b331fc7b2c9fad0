// Program agent emits the OpenTelemetry GenAI traces of a few runs of a
// (simulated) travel-booking agent over OTLP/gRPC, for otelcol-evalbridge to
// score. No LLM is called: the spans are what an instrumented agent built on
// gpt-4o would export.
//
//	go run ./examples/agent                        # to localhost:4317
//	go run ./examples/agent -endpoint host:4317    # or OTEL_EXPORTER_OTLP_ENDPOINT=http://host:4317
//	go run ./examples/agent -out runs.jsonl        # OTLP/JSON lines to a file
//	go run ./examples/agent -dataset DIR [-fixed]  # replay a dataset's cases (docs/datasets.md)
//
// Runs: clean (passes everything), wrong_order, tool_error, loop and
// invalid_arguments (each fails one evaluator of the default config); with
// -fixed, the corrected agent, which passes them all.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/dataset"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.38.0"
	"go.opentelemetry.io/otel/trace"
)

const (
	agentName = "travel_agent"
	model     = "gpt-4o"
	provider  = "openai"
)

// toolDefinitions is gen_ai.tool.definitions: the tools offered to the model.
var toolDefinitions = []map[string]any{
	functionTool("search_flights", "Search direct flights between two airports on a date.", map[string]any{
		"origin":      stringParam("IATA code of the departure airport"),
		"destination": stringParam("IATA code of the arrival airport"),
		"date":        stringParam("Departure date, YYYY-MM-DD"),
	}, "origin", "destination", "date"),
	functionTool("book_flight", "Book a seat on a flight returned by search_flights.", map[string]any{
		"flight_id": stringParam("Flight id from search_flights"),
	}, "flight_id"),
	functionTool("book_hotel", "Book a hotel room in a city for a number of nights.", map[string]any{
		"city":   stringParam("City name"),
		"nights": map[string]any{"type": "integer", "minimum": 1, "description": "Number of nights"},
	}, "city", "nights"),
}

// functionTool is a function tool's definition: its JSON-schema parameters
// take exactly properties, the required ones named.
func functionTool(name, description string, properties map[string]any, required ...string) map[string]any {
	return map[string]any{
		"type": "function", "name": name,
		"description": description,
		"parameters": map[string]any{
			"type":                 "object",
			"properties":           properties,
			"required":             required,
			"additionalProperties": false,
		},
	}
}

func stringParam(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

// expectedToolCalls is eval.expected.tool_calls: what a correct run calls, in order.
const expectedToolCalls = `[{"name":"search_flights"},{"name":"book_flight"},{"name":"book_hotel"}]`

const systemPrompt = "You are a travel agent. Search flights before booking one, then book the hotel."

type step struct {
	tool   string
	args   map[string]any
	result string
	err    string // non-empty: the tool failed with this error
}

type agentRun struct {
	name   string
	about  string
	prompt string
	// caseID, when set, is the dataset case this run replays
	// (eval.dataset.case_id on the agent span).
	caseID string
}

// The demo runs: each prompt trips one of the agent's bugs (plan), so
// each fails one evaluator of the default config; with -fixed none does.
var runs = []agentRun{
	{name: "clean", about: "searches, books the flight, books the hotel",
		prompt: "Book me a flight from San Francisco to Lisbon on June 12 and a hotel for 5 nights."},
	{name: "wrong_order", about: "books the hotel before searching and booking the flight",
		prompt: "I need a hotel in Lisbon for 5 nights and a flight there from SFO on June 12."},
	{name: "tool_error", about: "book_hotel fails (span status Error)",
		prompt: "Book me a flight from San Francisco to Lisbon on June 12 and a hotel in Lisboa for 5 nights."},
	{name: "loop", about: "calls search_flights 3 times in a row with the same arguments",
		prompt: "Book me the cheapest flight from San Francisco to Lisbon on June 12 and a hotel for 5 nights."},
	{name: "invalid_arguments", about: "calls book_hotel with nights as a string, against its schema",
		prompt: "Book me a flight from San Francisco to Lisbon on June 12 and a hotel for five nights."},
}

var (
	search = step{tool: "search_flights",
		args:   map[string]any{"origin": "SFO", "destination": "LIS", "date": "2026-06-12"},
		result: `{"flights":[{"flight_id":"TP236","departs":"2026-06-12T15:10","price_usd":742}]}`}
	bookFlight = step{tool: "book_flight",
		args:   map[string]any{"flight_id": "TP236"},
		result: `{"confirmation":"QX7K2P","status":"confirmed"}`}
	numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
	nightsRE    = regexp.MustCompile(`(?i)\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten) nights?\b`)
)

// plan is what the (simulated) agent does with a prompt: the tool calls it
// makes and its answer. The agent as shipped has four bugs, each tripped
// by something in the prompt; fixed is the corrected agent:
//   - a prompt that names the hotel before the flight: it books the hotel first;
//   - "Lisboa": it passes the city as written, and book_hotel finds no rooms;
//   - "cheapest": it searches three times with the same arguments (a loop);
//   - nights in words ("five nights"): it passes the word, against the schema.
func plan(prompt string, fixed bool) ([]step, string) {
	lower := strings.ToLower(prompt)
	city := "Lisbon"
	if strings.Contains(lower, "lisboa") && !fixed {
		city = "Lisboa"
	}
	var nights any = 1
	if m := nightsRE.FindStringSubmatch(prompt); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			nights = n
		} else if fixed {
			nights = numberWords[strings.ToLower(m[1])]
		} else {
			nights = m[1]
		}
	}
	hotel := step{tool: "book_hotel", args: map[string]any{"city": city, "nights": nights},
		result: `{"confirmation":"H-99812","hotel":"Casa do Rio","status":"confirmed"}`}
	if _, isWord := nights.(string); isWord {
		hotel.result = `{"confirmation":"H-99813","hotel":"Casa do Rio","status":"confirmed"}`
	}
	if city != "Lisbon" {
		hotel.result = `{"error":"no rooms available for 2026-06-12..2026-06-17"}`
		hotel.err = "no rooms available"
	}
	searches := []step{search}
	if strings.Contains(lower, "cheapest") && !fixed {
		searches = []step{search, search, search}
	}
	steps := append(searches, bookFlight, hotel)
	h, f := strings.Index(lower, "hotel"), strings.Index(lower, "flight")
	if h >= 0 && f >= 0 && h < f && !fixed {
		steps = append([]step{hotel}, append(searches, bookFlight)...)
	}
	answer := fmt.Sprintf("Done: flight TP236 on June 12 (confirmation QX7K2P) and %v nights at Casa do Rio.", nights)
	if hotel.err != "" {
		answer = "Your flight TP236 is booked (QX7K2P), but I could not find a hotel room in " + city + " for those dates."
	}
	return steps, answer
}

func main() {
	endpoint := flag.String("endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		"OTLP/gRPC endpoint, host:port or http(s)://host:port (default localhost:4317; env OTEL_EXPORTER_OTLP_ENDPOINT)")
	out := flag.String("out", "", "write the spans as OTLP/JSON lines to `FILE` (what a collector's file exporter writes) instead of sending them")
	datasetDir := flag.String("dataset", "", "replay the input of every case of the dataset in `DIR`, tagging each run with eval.dataset.case_id")
	fixed := flag.Bool("fixed", false, "run the corrected agent instead of the one with the bugs")
	flag.Parse()
	if *endpoint == "" {
		*endpoint = "localhost:4317"
	}
	todo, what := runs, "travel_agent runs"
	if *datasetDir != "" {
		var err error
		if todo, err = replays(*datasetDir); err != nil {
			log.Fatalf("agent: %v", err)
		}
		what = "replays of the cases in " + *datasetDir
	}
	if *fixed {
		what += " (the fixed agent)"
	}

	ctx := context.Background()
	dest := *endpoint
	var exp sdktrace.SpanExporter
	var err error
	if *out != "" {
		dest = *out
		exp, err = newFileExporter(ctx, *out)
	} else {
		exp, err = newExporter(ctx, *endpoint)
	}
	if err != nil {
		log.Fatalf("agent: %v", err)
	}
	checked := &checkedExporter{SpanExporter: exp}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(checked), sdktrace.WithResource(demoResource()))
	tracer := tp.Tracer("github.com/evalbridge/evalbridge/examples/agent")

	fmt.Printf("sending %d %s to %s\n", len(todo), what, dest)
	start := time.Now().Add(-time.Minute) // the runs happened during the last minute
	for i, r := range todo {
		steps, answer := plan(r.prompt, *fixed)
		traceID := emitRun(ctx, tracer, r, steps, answer, start.Add(time.Duration(i)*10*time.Second))
		about := r.about
		if *fixed || about == "" {
			about = callNames(steps)
		}
		fmt.Printf("  %-18s trace_id=%s  (%s)\n", r.name, traceID, about)
	}

	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(shutdownCtx); err != nil { // flushes the batch
		log.Fatalf("agent: flushing spans to %s: %v", dest, err)
	}
	if err := checked.failed(); err != nil {
		log.Fatalf("agent: spans were not delivered to %s: %v", dest, err)
	}
	if *out != "" {
		fmt.Printf("wrote %s\n", *out)
		return
	}
	fmt.Println("flushed; the collector scores each run a few seconds after its last span")
}

// replays are the runs that replay the cases of a dataset, in its order.
func replays(dir string) ([]agentRun, error) {
	ds, err := dataset.Open(dir, false)
	if err != nil {
		return nil, err
	}
	if len(ds.Cases) == 0 {
		return nil, fmt.Errorf("dataset %s has no case", dir)
	}
	var out []agentRun
	for _, c := range ds.Cases {
		if c.Prompt() == "" {
			return nil, fmt.Errorf("dataset %s: case %s has no user message to replay", dir, c.ID)
		}
		out = append(out, agentRun{name: c.ID, prompt: c.Prompt(), caseID: c.ID})
	}
	return out, nil
}

func callNames(steps []step) string {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.tool
	}
	return strings.Join(names, ", ")
}

// checkedExporter remembers the first export error: the batch span
// processor hands it only to the global error handler and its Shutdown
// returns nil, so without this a run whose spans never arrived would say
// "flushed" and exit 0.
type checkedExporter struct {
	sdktrace.SpanExporter
	mu  sync.Mutex
	err error
}

func (e *checkedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
	return err
}

func (e *checkedExporter) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func newExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(5 * time.Second)}
	if strings.Contains(endpoint, "://") {
		if _, err := url.Parse(endpoint); err != nil {
			return nil, fmt.Errorf("bad endpoint %q: %w", endpoint, err)
		}
		opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
	} else {
		opts = append(opts, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	}
	return otlptracegrpc.New(ctx, opts...)
}

// message is one entry of gen_ai.input.messages / gen_ai.output.messages.
type message struct {
	Role         string           `json:"role"`
	Parts        []map[string]any `json:"parts"`
	FinishReason string           `json:"finish_reason,omitempty"`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// startSpan starts the span of a GenAI operation ("chat", "execute_tool" …)
// on target (a model, a tool …) at t: named "<operation> <target>", with
// gen_ai.operation.name and attrs.
func startSpan(ctx context.Context, tracer trace.Tracer, operation, target string, kind trace.SpanKind, t time.Time,
	attrs ...attribute.KeyValue,
) (context.Context, trace.Span) {
	return tracer.Start(ctx, operation+" "+target, trace.WithSpanKind(kind), trace.WithTimestamp(t),
		trace.WithAttributes(append([]attribute.KeyValue{semconv.GenAIOperationNameKey.String(operation)}, attrs...)...))
}

// emitRun writes the spans of one agent run starting at t and returns its trace id.
func emitRun(ctx context.Context, tracer trace.Tracer, r agentRun, steps []step, answer string, t time.Time) string {
	conversationID := "conv-" + r.name
	ctx, agent := startSpan(ctx, tracer, "invoke_agent", agentName, trace.SpanKindInternal, t,
		semconv.GenAIAgentNameKey.String(agentName),
		semconv.GenAIAgentIDKey.String("agt_travel_01"),
		semconv.GenAIConversationIDKey.String(conversationID),
		semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIRequestModelKey.String(model),
		attribute.String(adapter.AttrExpectedToolCalls, expectedToolCalls),
		attribute.String("demo.run", r.name),
	)
	if r.caseID != "" {
		agent.SetAttributes(attribute.String(dataset.AttrCaseID, r.caseID))
	}

	conv := []message{{Role: "user", Parts: []map[string]any{{"type": "text", "content": r.prompt}}}}
	clock := t.Add(5 * time.Millisecond)
	inputTokens := 310

	chat := func(out message, finish string, i int) {
		_, span := startSpan(ctx, tracer, "chat", model, trace.SpanKindClient, clock,
			semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModelKey.String(model),
			semconv.GenAIResponseModelKey.String(model+"-2024-08-06"),
			semconv.GenAIResponseIDKey.String(fmt.Sprintf("chatcmpl-%s-%d", r.name, i)),
			semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{finish}),
			semconv.GenAIConversationIDKey.String(conversationID),
			semconv.GenAISystemInstructionsKey.String(mustJSON([]map[string]any{{"type": "text", "content": systemPrompt}})),
			semconv.GenAIToolDefinitionsKey.String(mustJSON(toolDefinitions)),
			semconv.GenAIInputMessagesKey.String(mustJSON(conv)),
			semconv.GenAIOutputMessagesKey.String(mustJSON([]message{out})),
			semconv.GenAIUsageInputTokensKey.Int(inputTokens),
			semconv.GenAIUsageOutputTokensKey.Int(24+len(out.Parts)*8),
			semconv.ServerAddressKey.String("api.openai.com"),
		)
		clock = clock.Add(850 * time.Millisecond)
		span.End(trace.WithTimestamp(clock))
		clock = clock.Add(2 * time.Millisecond)
		inputTokens += 60
	}

	for i, s := range steps {
		callID := fmt.Sprintf("call_%s_%d", r.name, i+1)
		args := mustJSON(s.args)
		call := message{Role: "assistant", FinishReason: "tool_call", Parts: []map[string]any{{
			"type": "tool_call", "id": callID, "name": s.tool, "arguments": s.args,
		}}}
		chat(call, "tool_call", i+1)
		conv = append(conv, call)

		_, span := startSpan(ctx, tracer, "execute_tool", s.tool, trace.SpanKindInternal, clock,
			semconv.GenAIToolNameKey.String(s.tool),
			semconv.GenAIToolTypeKey.String("function"),
			semconv.GenAIToolCallIDKey.String(callID),
			semconv.GenAIToolCallArgumentsKey.String(args),
			semconv.GenAIToolCallResultKey.String(s.result),
		)
		if s.err != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String("ToolError"))
			span.SetStatus(codes.Error, s.err)
		}
		clock = clock.Add(120 * time.Millisecond)
		span.End(trace.WithTimestamp(clock))
		clock = clock.Add(2 * time.Millisecond)
		conv = append(conv, message{Role: "tool", Parts: []map[string]any{{
			"type": "tool_call_response", "id": callID, "response": s.result,
		}}})
	}
	chat(message{Role: "assistant", FinishReason: "stop",
		Parts: []map[string]any{{"type": "text", "content": answer}}}, "stop", len(steps)+1)

	agent.SetAttributes(
		semconv.GenAIInputMessagesKey.String(mustJSON(conv[:1])),
		semconv.GenAIOutputMessagesKey.String(mustJSON([]message{{Role: "assistant", FinishReason: "stop",
			Parts: []map[string]any{{"type": "text", "content": answer}}}})),
	)
	agent.End(trace.WithTimestamp(clock.Add(3 * time.Millisecond)))
	return agent.SpanContext().TraceID().String()
}
