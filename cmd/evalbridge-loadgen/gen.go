package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Attributes the load generator puts on its spans so the sink can recognise
// them whatever the collector did to ids (hostile traces share or zero them).
const (
	attrSeq  = "loadgen.seq"  // int: unique number of the span in this run
	attrKind = "loadgen.kind" // string on every span: the trace's kind
)

// Kinds of traces. A kind's name is what the report prints.
const (
	kindPass  = "pass"  // an agent run that every evaluator of the suite passes
	kindFail  = "fail"  // an agent run with the tools in the wrong order (tool_trajectory fails)
	kindPlain = "plain" // an HTTP service's trace without GenAI spans: passes straight through
)

// Hostile kinds: bad input a production collector will see. Each must be
// forwarded, never stall the collector, never pass a check it should not.
var hostileKinds = []string{
	"invalid_json",      // invalid JSON in every JSON-carrying attribute
	"huge_value",        // a 10 MB output message
	"deep_nesting",      // 10k-deep nesting in a JSON string and in an attribute value
	"invalid_utf8",      // invalid UTF-8 in names, attributes and JSON
	"huge_trace",        // one trace of 100k spans, sent in many requests
	"parent_cycle",      // spans that are their own ancestors
	"bad_tokens",        // negative, overflowing, NaN and infinite token counts
	"zero_trace_id",     // two agent runs with the all-zero trace id
	"many_calls",        // 10k tool calls expected on the span, 10k made (any_order)
	"many_calls_50k",    // 50k tool calls (tool_efficiency)
	"duplicate_span_id", // the agent span and a tool span share one span id
}

// spanInfo is what the generator remembers of one span it made.
type spanInfo struct {
	trace   int32 // index into gen.traces
	agent   bool  // the trace's agent span, where the results go
	reqSent int64 // unix nanos: first time a request carrying it was sent (0: never)
	acked   bool  // a request carrying it was acknowledged by the collector
}

// traceInfo is what the generator remembers of one trace it made.
type traceInfo struct {
	kind       string
	expectPass bool  // designed to pass every evaluator of the suite's configs
	agentSeq   int64 // seq of the agent span, -1 when none
}

// chunk is part of one trace's spans, sent at offset after the trace starts:
// an SDK exports a run's spans over several requests as they end.
type chunk struct {
	due   time.Time
	spans ptrace.ResourceSpans
	n     int
	alone bool // sent in a request of its own (hostile: a refusal takes nothing else with it)
}

// generator builds traces. Not safe for concurrent use: the scheduler owns it.
type generator struct {
	rng     *rand.Rand
	spans   []spanInfo
	traces  []traceInfo
	scale   float64 // hostile sizes are multiplied by it (the short suite uses < 1)
	service string
	// conversations > 0 gives agent runs a gen_ai.conversation.id, one of
	// that many, by trace (sessions).
	conversations int
}

func newGenerator(seed uint64, scale float64) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), scale: scale, service: "travel-agent"}
}

// resource sets the resource attributes an OTel SDK sends with the
// service's spans (what the collector carries along with every span).
func (g *generator) resource(m pcommon.Map) {
	m.PutStr("service.name", g.service)
	m.PutStr("service.version", "2.4.1")
	m.PutStr("service.instance.id", "6f1c2a7e-0b9d-4c3e-9a51-2f0d8c7b4e11")
	m.PutStr("deployment.environment.name", "production")
	m.PutStr("telemetry.sdk.language", "python")
	m.PutStr("telemetry.sdk.name", "opentelemetry")
	m.PutStr("telemetry.sdk.version", "1.38.0")
	m.PutStr("host.name", "travel-agent-7d9f8c6b5-x2kqp")
	m.PutStr("os.type", "linux")
	m.PutInt("process.pid", 7)
	m.PutStr("process.runtime.name", "cpython")
	m.PutStr("process.runtime.version", "3.12.7")
}

func (g *generator) traceID() pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], g.rng.Uint64()|1)
	binary.BigEndian.PutUint64(id[8:], g.rng.Uint64())
	return id
}

func (g *generator) spanID() pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], g.rng.Uint64()|1)
	return id
}

// builder accumulates the spans of one trace.
type builder struct {
	g       *generator
	trace   int32
	kind    string
	traceID pcommon.TraceID
	spans   []ptrace.Span
	clock   time.Time
}

func (g *generator) newTrace(kind string, expectPass bool, start time.Time) *builder {
	g.traces = append(g.traces, traceInfo{kind: kind, expectPass: expectPass, agentSeq: -1})
	return &builder{g: g, trace: int32(len(g.traces) - 1), kind: kind, traceID: g.traceID(), clock: start}
}

// span adds a span with a fresh id under parent (empty: a root).
func (b *builder) span(name string, parent pcommon.SpanID, kind ptrace.SpanKind, d time.Duration) ptrace.Span {
	s := ptrace.NewSpan()
	s.SetTraceID(b.traceID)
	s.SetSpanID(b.g.spanID())
	s.SetParentSpanID(parent)
	s.SetName(name)
	s.SetKind(kind)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.clock))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.clock.Add(d)))
	// The run's steps follow each other; evaluators order calls by time.
	if parent.IsEmpty() {
		b.clock = b.clock.Add(time.Millisecond)
	} else {
		b.clock = b.clock.Add(d + time.Millisecond)
	}
	seq := int64(len(b.g.spans))
	b.g.spans = append(b.g.spans, spanInfo{trace: b.trace})
	s.Attributes().PutInt(attrSeq, seq)
	s.Attributes().PutStr(attrKind, b.kind)
	b.spans = append(b.spans, s)
	return s
}

// markAgent records s as the span that carries the trace's results.
func (b *builder) markAgent(s ptrace.Span) {
	seq, _ := s.Attributes().Get(attrSeq)
	b.g.spans[seq.Int()].agent = true
	b.g.traces[b.trace].agentSeq = seq.Int()
}

// chunks splits the trace into about parts requests, gap apart, children
// before the root (the root span ends last, so an SDK exports it last).
// maxSpans bounds the spans of one chunk.
func (b *builder) chunks(start time.Time, parts int, gap time.Duration, maxSpans int) []chunk {
	spans := b.spans
	// The builder adds the root first; it ends after its children, and
	// goes last.
	if len(spans) > 0 && spans[0].ParentSpanID().IsEmpty() {
		spans[0].SetEndTimestamp(pcommon.NewTimestampFromTime(b.clock))
	}
	if len(spans) > 1 {
		spans = append(append([]ptrace.Span{}, spans[1:]...), spans[0])
	}
	if parts < 1 {
		parts = 1
	}
	per := (len(spans) + parts - 1) / parts
	if maxSpans > 0 && per > maxSpans {
		per = maxSpans
	}
	var out []chunk
	for i := 0; i < len(spans); i += per {
		j := min(i+per, len(spans))
		rs := ptrace.NewResourceSpans()
		b.g.resource(rs.Resource().Attributes())
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("evalbridge-loadgen")
		for _, s := range spans[i:j] {
			s.MoveTo(ss.Spans().AppendEmpty())
		}
		out = append(out, chunk{due: start.Add(time.Duration(len(out)) * gap), spans: rs, n: j - i})
	}
	return out
}

// Tools of the simulated travel agent and a correct run's calls.
var (
	travelTools = mustJSON([]map[string]any{
		toolDef("search_flights", "Search direct flights between two airports on a date.", "origin", "destination", "date"),
		toolDef("book_flight", "Book a seat on a flight found by search_flights.", "flight_id"),
		toolDef("book_hotel", "Book a hotel room in a city.", "city"),
	})
	travelCalls = []call{
		{"search_flights", `{"origin":"SFO","destination":"LIS","date":"2026-06-12"}`, `{"flights":[{"flight_id":"TP236"}]}`},
		{"book_flight", `{"flight_id":"TP236"}`, `{"confirmation":"QX7K2P"}`},
		{"book_hotel", `{"city":"Lisbon"}`, `{"confirmation":"H-99812"}`},
	}
	travelExpected = `[{"name":"search_flights"},{"name":"book_flight"},{"name":"book_hotel"}]`
)

type call struct{ name, args, result string }

func toolDef(name, desc string, required ...string) map[string]any {
	props := map[string]any{}
	for _, r := range required {
		props[r] = map[string]any{"type": "string", "description": r}
	}
	return map[string]any{"type": "function", "name": name, "description": desc, "parameters": map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false}}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// agentOpts shapes one agent run.
type agentOpts struct {
	calls    []call
	expected string // eval.expected.tool_calls; "" for none
	tokens   []any  // per chat span: input token count (int64 or float64); nil for 100
}

// agentRun adds an invoke_agent root with a chat span before each tool call
// and a final chat span, and returns the root.
func (b *builder) agentRun(o agentOpts) ptrace.Span {
	root := b.span("invoke_agent travel_agent", pcommon.NewSpanIDEmpty(), ptrace.SpanKindInternal, time.Second)
	ra := root.Attributes()
	ra.PutStr("gen_ai.operation.name", "invoke_agent")
	ra.PutStr("gen_ai.agent.name", "travel_agent")
	if n := b.g.conversations; n > 0 {
		ra.PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d", int(b.trace)%n))
	}
	ra.PutStr("gen_ai.provider.name", "openai")
	ra.PutStr("gen_ai.request.model", "gpt-4o")
	if o.expected != "" {
		ra.PutStr(adapter.AttrExpectedToolCalls, o.expected)
	}
	// The prompt differs per run so a judge's cache does not answer for it.
	ra.PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"Book me a flight to Lisbon and a hotel (request %d)."}]}]`, b.trace))
	ra.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Booked flight TP236 and Casa do Rio."}],"finish_reason":"stop"}]`)
	b.markAgent(root)
	chatN := 0
	chat := func() {
		s := b.span("chat gpt-4o", root.SpanID(), ptrace.SpanKindClient, 800*time.Millisecond)
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.provider.name", "openai")
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutStr("gen_ai.tool.definitions", travelTools)
		var tok any = int64(100)
		if chatN < len(o.tokens) {
			tok = o.tokens[chatN]
		}
		switch v := tok.(type) {
		case int64:
			a.PutInt("gen_ai.usage.input_tokens", v)
		case float64:
			a.PutDouble("gen_ai.usage.input_tokens", v)
		}
		a.PutInt("gen_ai.usage.output_tokens", 20)
		chatN++
	}
	for i, c := range o.calls {
		chat()
		s := b.span("execute_tool "+c.name, root.SpanID(), ptrace.SpanKindInternal, 100*time.Millisecond)
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", c.name)
		a.PutStr("gen_ai.tool.type", "function")
		a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i))
		a.PutStr("gen_ai.tool.call.arguments", c.args)
		a.PutStr("gen_ai.tool.call.result", c.result)
	}
	chat()
	return root
}

// plainTrace adds a non-GenAI trace: an HTTP server span and two DB spans.
func (b *builder) plainTrace() {
	root := b.span("GET /api/orders", pcommon.NewSpanIDEmpty(), ptrace.SpanKindServer, 30*time.Millisecond)
	root.Attributes().PutStr("http.request.method", "GET")
	root.Attributes().PutInt("http.response.status_code", 200)
	for i := 0; i < 2; i++ {
		s := b.span("SELECT orders", root.SpanID(), ptrace.SpanKindClient, 5*time.Millisecond)
		s.Attributes().PutStr("db.system.name", "postgresql")
		s.Attributes().PutStr("db.query.text", fmt.Sprintf("SELECT * FROM orders WHERE id = %d", i))
	}
}

// normal returns the chunks of one trace of the normal mix: GenAI runs
// (passing and failing) and plain traces, plainShare of them plain.
func (g *generator) normal(start time.Time, plainShare, failShare float64, parts int, gap time.Duration) []chunk {
	switch r := g.rng.Float64(); {
	case r < plainShare:
		b := g.newTrace(kindPlain, false, start)
		b.plainTrace()
		return b.chunks(start, 1, gap, 0)
	case r < plainShare+failShare:
		b := g.newTrace(kindFail, false, start)
		b.agentRun(agentOpts{calls: []call{travelCalls[2], travelCalls[0], travelCalls[1]}, expected: travelExpected})
		return b.chunks(start, parts, gap, 0)
	default:
		b := g.newTrace(kindPass, true, start)
		b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected})
		return b.chunks(start, parts, gap, 0)
	}
}

func (g *generator) scaled(n int) int {
	return max(1, int(float64(n)*g.scale))
}

// manyCalls is n calls with distinct arguments and their expectation.
func manyCalls(n int) ([]call, string) {
	calls := make([]call, n)
	var exp strings.Builder
	exp.WriteByte('[')
	for i := range calls {
		name := travelCalls[i%3].name
		calls[i] = call{name, fmt.Sprintf(`{"n":%d}`, i), `{"ok":true}`}
		if i > 0 {
			exp.WriteByte(',')
		}
		fmt.Fprintf(&exp, `{"name":%q}`, name)
	}
	exp.WriteByte(']')
	return calls, exp.String()
}

// hostile returns the chunks of one hostile trace (or two, for kinds that
// need a pair), at most maxSpans spans per chunk.
func (g *generator) hostile(kind string, start time.Time, gap time.Duration) []chunk {
	cs := g.hostile1(kind, start, gap)
	for i := range cs {
		cs[i].alone = true
	}
	return cs
}

func (g *generator) hostile1(kind string, start time.Time, gap time.Duration) []chunk {
	const maxSpans = 5000
	k := "hostile:" + kind
	switch kind {
	case "invalid_json":
		b := g.newTrace(k, false, start)
		root := b.agentRun(agentOpts{calls: []call{{"search_flights", `{"origin":`, `{"flights":[`}}, expected: `[{"name":"search_flights"`})
		root.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":`)
		root.Attributes().PutStr("gen_ai.output.messages", `{{{{`)
		return b.chunks(start, 2, gap, maxSpans)
	case "huge_value":
		b := g.newTrace(k, false, start)
		root := b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected})
		big := strings.Repeat("x", g.scaled(10<<20))
		root.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+big+`"}]}]`)
		root.Attributes().PutStr("gen_ai.tool.call.result", big)
		return b.chunks(start, 1, gap, maxSpans)
	case "deep_nesting":
		b := g.newTrace(k, false, start)
		n := g.scaled(10000)
		deep := strings.Repeat("[", n) + strings.Repeat("]", n)
		root := b.agentRun(agentOpts{calls: []call{{"search_flights", strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n), deep}}, expected: deep})
		root.Attributes().PutStr("gen_ai.input.messages", deep)
		// As an attribute value, nesting is bounded by the OTLP decoder
		// (a deeper request is refused whole, "exceeded max recursion
		// depth", pdata allows 100 messages deep): 25 levels.
		v := root.Attributes().PutEmptyMap("gen_ai.output.messages")
		for i := 0; i < 25; i++ {
			v = v.PutEmptyMap("m")
		}
		return b.chunks(start, 1, gap, maxSpans)
	case "invalid_utf8":
		b := g.newTrace(k, false, start)
		bad := "\xff\xfe\xc3\x28 \xed\xa0\x80"
		root := b.agentRun(agentOpts{calls: []call{{"search_flights" + bad, `{"origin":"` + bad + `"}`, bad}}, expected: `[{"name":"search_flights` + bad + `"}]`})
		root.SetName("invoke_agent " + bad)
		root.Attributes().PutStr("gen_ai.agent.name", bad)
		root.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"`+bad+`"}]}]`)
		return b.chunks(start, 2, gap, maxSpans)
	case "endless_trace":
		// A trace that keeps getting spans (a long conversation kept in
		// one trace): 40 requests 250 ms apart, each under `wait`.
		b := g.newTrace(k, false, start)
		root := b.span("invoke_agent travel_agent", pcommon.NewSpanIDEmpty(), ptrace.SpanKindInternal, time.Second)
		root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		b.markAgent(root)
		for i := 0; i < 200; i++ {
			s := b.span("chat gpt-4o", root.SpanID(), ptrace.SpanKindClient, time.Millisecond)
			s.Attributes().PutStr("gen_ai.operation.name", "chat")
		}
		return b.chunks(start, 40, 250*time.Millisecond, maxSpans)
	case "huge_trace":
		b := g.newTrace(k, false, start)
		root := b.span("invoke_agent travel_agent", pcommon.NewSpanIDEmpty(), ptrace.SpanKindInternal, time.Second)
		root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		b.markAgent(root)
		for i := g.scaled(100000) - 1; i > 0; i-- {
			s := b.span("chat gpt-4o", root.SpanID(), ptrace.SpanKindClient, time.Millisecond)
			s.Attributes().PutStr("gen_ai.operation.name", "chat")
			s.Attributes().PutInt("gen_ai.usage.input_tokens", 10)
		}
		return b.chunks(start, 20, gap/4, maxSpans)
	case "parent_cycle":
		b := g.newTrace(k, false, start)
		root := b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected})
		// The root's parent is its last child, whose parent is the root; a
		// tool span is its own parent.
		last := b.spans[len(b.spans)-1]
		root.SetParentSpanID(last.SpanID())
		b.spans[2].SetParentSpanID(b.spans[2].SpanID())
		return b.chunks(start, 2, gap, maxSpans)
	case "bad_tokens":
		// token_usage (max_total 100000) must not pass on any of these.
		var out []chunk
		for _, toks := range [][]any{
			{int64(math.MaxInt64), int64(math.MaxInt64)}, // the sum overflows
			{int64(-5), int64(-1000)},
			{math.NaN(), float64(10)},
			{math.Inf(1), float64(10)},
		} {
			b := g.newTrace(k, false, start)
			b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected, tokens: toks})
			out = append(out, b.chunks(start, 2, gap, maxSpans)...)
		}
		return out
	case "zero_trace_id":
		// Two separate runs that would each pass; merged into one trace they
		// have every call twice and fail.
		var out []chunk
		for i := 0; i < 2; i++ {
			b := g.newTrace(k, true, start)
			b.traceID = pcommon.NewTraceIDEmpty()
			b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected})
			for _, s := range b.spans {
				s.SetTraceID(pcommon.NewTraceIDEmpty())
			}
			out = append(out, b.chunks(start, 2, gap, maxSpans)...)
		}
		return out
	case "many_calls", "many_calls_50k":
		n := g.scaled(10000)
		if kind == "many_calls_50k" {
			n = g.scaled(50000)
		}
		calls, exp := manyCalls(n)
		b := g.newTrace(k, false, start)
		b.agentRun(agentOpts{calls: calls, expected: exp})
		return b.chunks(start, 4, gap, maxSpans)
	case "duplicate_span_id":
		// Not designed to pass: which calls a case made is ambiguous when
		// ids collide. What must hold is where the results go.
		b := g.newTrace(k, false, start)
		root := b.agentRun(agentOpts{calls: travelCalls, expected: travelExpected})
		// The last tool span takes the agent span's id: both must arrive,
		// and the results must stay on the agent span.
		for i := len(b.spans) - 1; i > 0; i-- {
			if strings.HasPrefix(b.spans[i].Name(), "execute_tool") {
				b.spans[i].SetSpanID(root.SpanID())
				break
			}
		}
		return b.chunks(start, 2, gap, maxSpans)
	}
	panic("unknown hostile kind " + kind)
}
