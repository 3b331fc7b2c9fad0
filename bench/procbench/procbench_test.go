// Package procbench is the processor benchmark that bench/compare.sh runs on
// the working tree and on an earlier commit, the same file on both sides:
// the eval processor with five deterministic evaluators against contrib's
// groupbytrace, on the same agent traces, spans/s until every span has
// reached the next consumer.
//
// It uses only what every stage has: the processor's factory and its YAML
// options (docs/contract.md §5), never the package's internals, so that it
// compiles unchanged against an earlier commit.
package procbench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/processor/evalprocessor"
)

const (
	spansPerTrace = 10
	spansPerBatch = 1000
)

// evalOptions is the `processors: eval:` block benchmarked: five
// deterministic evaluators that read the tool calls, their requests by the
// model, their schemas and the token counts.
var evalOptions = map[string]any{
	"wait":       "10ms",
	"workers":    2,
	"max_traces": 1_000_000,
	"evaluators": []any{
		map[string]any{"type": "tool_trajectory", "mode": "in_order", "expected": []any{
			map[string]any{"name": "search_flights"}, map[string]any{"name": "book_hotel"},
			map[string]any{"name": "search_flights"}, map[string]any{"name": "book_hotel"}}},
		map[string]any{"type": "tool_call_validity"},
		map[string]any{"type": "tool_error"},
		map[string]any{"type": "tool_efficiency"},
		map[string]any{"type": "token_usage", "max_total": 100000},
	},
}

// countSink counts spans and keeps nothing.
type countSink struct{ spans atomic.Int64 }

func (s *countSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (s *countSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.spans.Add(int64(td.SpanCount()))
	return nil
}

func (s *countSink) waitFor(n int64) {
	for s.spans.Load() < n {
		time.Sleep(50 * time.Microsecond)
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var filler = strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 6)

func text(role, s string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "content": s}}}
}

func toolCall(id, name string) map[string]any {
	return map[string]any{"type": "tool_call", "id": id, "name": name, "arguments": map[string]any{"q": "paris " + id}}
}

func toolResponse(id string) map[string]any {
	return map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": id, "response": `{"ok":true}`}}}
}

func toolDef(name string) map[string]any {
	return map[string]any{"type": "function", "name": name, "description": "Search or book: " + name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"q": map[string]any{"type": "string", "description": "what to look for"}}, "required": []any{"q"}}}
}

// agentTemplate is one agent run of 10 spans: an invoke_agent root, three
// chat calls (the conversation so far as input, ~2 KB; the tool calls the
// model requests as output; the tool definitions with their schemas), the
// four tool calls it requested (the last one failed) and two HTTP spans.
func agentTemplate() ptrace.SpanSlice {
	spans := ptrace.NewSpanSlice()
	t0 := int64(1_700_000_000_000_000_000)
	add := func(id, parent byte, name string, attrs map[string]any) ptrace.Span {
		return appendSpan(spans, 1, id, parent, name, 5_000_000, attrs)
	}
	root := add(1, 0, "invoke_agent travel_agent", map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"})
	root.SetEndTimestamp(pcommon.Timestamp(t0 + 200_000_000))
	tools := js([]any{toolDef("search_flights"), toolDef("book_hotel")})
	conv := []any{text("system", "You are a travel agent. "+filler), text("user", "Book a flight to Paris and a hotel. "+filler)}
	requests := [][]any{
		{toolCall("call_1", "search_flights"), toolCall("call_2", "book_hotel")},
		{toolCall("call_3", "search_flights"), toolCall("call_4", "book_hotel")},
		nil,
	}
	for i, req := range requests {
		out := []any{text("assistant", "Here is what I found. "+filler)}
		if req != nil {
			out = []any{map[string]any{"role": "assistant", "parts": req}}
		}
		add(byte(2+i), 1, "chat gpt-4o", map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.input.messages": js(conv), "gen_ai.output.messages": js(out),
			"gen_ai.tool.definitions":   tools,
			"gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 120,
		})
		conv = append(conv, out...)
		for _, c := range req {
			conv = append(conv, toolResponse(c.(map[string]any)["id"].(string)))
		}
	}
	for i, name := range []string{"search_flights", "book_hotel", "search_flights", "book_hotel"} {
		id := fmt.Sprintf("call_%d", i+1)
		sp := add(byte(5+i), 1, "execute_tool "+name, map[string]any{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": id,
			"gen_ai.tool.call.arguments": js(map[string]any{"q": "paris " + id}), "gen_ai.tool.call.result": `{"ok":true}`,
		})
		if i == 3 {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	for id := byte(9); id <= 10; id++ {
		add(id, 5, "GET /flights", map[string]any{"http.request.method": "GET", "http.route": "/flights",
			"http.response.status_code": 200, "url.full": "https://api.example.com/flights?q=paris"})
	}
	return spans
}

// appendSpan appends a span to spans: span id {0, …, group, id}, a child
// of parent (0: none), starting id×10 ms after the templates' t0 and
// lasting dur ns, with attrs.
func appendSpan(spans ptrace.SpanSlice, group, id, parent byte, name string, dur int64, attrs map[string]any) ptrace.Span {
	const t0 = int64(1_700_000_000_000_000_000)
	sp := spans.AppendEmpty()
	sp.SetName(name)
	sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, group, id})
	if parent != 0 {
		sp.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, group, parent})
	}
	sp.SetStartTimestamp(pcommon.Timestamp(t0 + int64(id)*10_000_000))
	sp.SetEndTimestamp(pcommon.Timestamp(t0 + int64(id)*10_000_000 + dur))
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return sp
}

// agentTemplateHTTP is agentTemplate as production instrumentation sends
// it (the shape of the outside acceptance benchmark's traces): two HTTP
// client spans under each tool call, and larger attribute sets, on the GenAI
// spans (request parameters, response metadata, server address: 14 more)
// and on the HTTP spans (12 each). 18 spans a trace.
func agentTemplateHTTP() ptrace.SpanSlice {
	spans := agentTemplate()
	extra := map[string]any{
		"gen_ai.system": "openai", "gen_ai.provider.name": "openai", "gen_ai.request.temperature": 0.2,
		"gen_ai.request.top_p": 0.9, "gen_ai.request.max_tokens": 1024, "gen_ai.response.model": "gpt-4o-2024-08-06",
		"gen_ai.response.id": "chatcmpl-9x8y7z", "gen_ai.response.finish_reasons": []any{"stop"},
		"server.address": "api.openai.com", "server.port": 443, "thread.id": 7, "thread.name": "worker-7",
		"code.function": "run_agent", "code.namespace": "travel.agent",
	}
	tools := 0
	for i := 0; i < spans.Len(); i++ {
		sp := spans.At(i)
		if _, ok := sp.Attributes().Get("gen_ai.operation.name"); !ok {
			continue
		}
		for k, v := range extra {
			if _, ok := sp.Attributes().Get(k); !ok {
				if err := sp.Attributes().PutEmpty(k).FromRaw(v); err != nil {
					panic(err)
				}
			}
		}
		if op, _ := sp.Attributes().Get("gen_ai.operation.name"); op.Str() == "execute_tool" {
			tools++
		}
	}
	// HTTP client spans under each tool span (ids 5-8)
	next := byte(11)
	for tool := byte(5); tool < byte(5+tools); tool++ {
		for k := 0; k < 2; k++ {
			sp := spans.AppendEmpty()
			sp.SetName("GET")
			sp.SetKind(ptrace.SpanKindClient)
			sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 1, next})
			sp.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 1, tool})
			t0 := int64(1_700_000_000_000_000_000) + int64(next)*10_000_000
			sp.SetStartTimestamp(pcommon.Timestamp(t0))
			sp.SetEndTimestamp(pcommon.Timestamp(t0 + 3_000_000))
			if err := sp.Attributes().FromRaw(map[string]any{
				"http.request.method": "GET", "http.response.status_code": 200, "url.full": "https://api.example.com/v2/flights/search?from=BER&to=CDG&date=2026-12-01",
				"url.scheme": "https", "server.address": "api.example.com", "server.port": 443, "network.protocol.version": "1.1",
				"http.request.header.content-type": []any{"application/json"}, "http.response.body.size": 18234,
				"user_agent.original": "python-httpx/0.27.0", "network.peer.address": "93.184.216.34", "http.resend_count": 0,
			}); err != nil {
				panic(err)
			}
			next++
		}
	}
	return spans
}

// agentTemplateProduction is an agent run as a production service sends
// it (what the outside acceptance benchmark's traces look like): every span
// with the attributes its instrumentation library writes (20-40), HTTP
// client spans under the chat calls (the model provider's API) and under
// the tools, database spans under one tool, and larger GenAI payloads (a
// system prompt and a conversation of 6-12 KB, six tool definitions with
// their schemas, tool results of about 1 KB). 21 spans a trace, 8 of them
// GenAI; productionResource is its resource.
func agentTemplateProduction() ptrace.SpanSlice {
	spans := ptrace.NewSpanSlice()
	t0 := int64(1_700_000_000_000_000_000)
	next := byte(1)
	add := func(parent byte, name string, kind ptrace.SpanKind, attrs map[string]any) (ptrace.Span, byte) {
		id := next
		next++
		sp := appendSpan(spans, 2, id, parent, name, 8_000_000, attrs)
		sp.SetKind(kind)
		return sp, id
	}
	with := func(base map[string]any, more map[string]any) map[string]any {
		out := make(map[string]any, len(base)+len(more))
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	// What every span of the service carries (code location, thread,
	// the instrumentation's own keys).
	common := map[string]any{
		"code.function.name": "travel.agent.run", "code.file.path": "/app/travel/agent.py", "code.line.number": 212,
		"thread.id": 140234, "thread.name": "asyncio-worker-3", "session.id": "sess-7f3a9c", "enduser.id": "user-4411",
		"app.tenant": "acme-travel", "app.request_id": "req-9b2e7c1d",
	}
	genai := with(common, map[string]any{
		"gen_ai.provider.name": "openai", "gen_ai.system": "openai", "gen_ai.conversation.id": "conv-5d0e2b",
		"gen_ai.agent.name": "travel_agent", "gen_ai.agent.id": "asst_8Hk2", "server.address": "api.openai.com", "server.port": 443,
	})
	tools := []string{"search_flights", "book_hotel", "get_weather", "convert_currency", "lookup_visa", "send_email"}
	var defs []any
	for _, name := range tools {
		d := toolDef(name)
		props := d["parameters"].(map[string]any)["properties"].(map[string]any)
		for _, p := range []string{"from", "to", "date", "passengers", "currency", "notes"} {
			props[p] = map[string]any{"type": "string", "description": "the " + p + " of the request, as the user gave it; " + filler[:80]}
		}
		defs = append(defs, d)
	}
	toolDefs := js(defs)

	root, rootID := add(0, "invoke_agent travel_agent", ptrace.SpanKindInternal, with(genai, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.description": "Books flights and hotels",
		"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 5400, "gen_ai.usage.output_tokens": 610,
	}))
	root.SetEndTimestamp(pcommon.Timestamp(t0 + 400_000_000))
	httpAttrs := func(method, host, path, query string, status, size int) map[string]any {
		return with(common, map[string]any{
			"http.request.method": method, "http.request.method_original": method, "http.response.status_code": status,
			"url.full": "https://" + host + path + "?" + query, "url.scheme": "https", "url.path": path, "url.query": query,
			"url.template": path, "server.address": host, "server.port": 443, "network.protocol.name": "http",
			"network.protocol.version": "1.1", "network.peer.address": "93.184.216.34", "network.peer.port": 443,
			"network.transport": "tcp", "network.type": "ipv4", "http.request.header.content-type": []any{"application/json"},
			"http.request.header.accept": []any{"application/json"}, "http.response.header.content-type": []any{"application/json; charset=utf-8"},
			"http.response.header.x-request-id": []any{"b3c1e0f2-77aa-4c1e-9d51-0c6f1e2a9b44"}, "http.request.body.size": 1840,
			"http.response.body.size": size, "user_agent.original": "python-httpx/0.27.0", "http.resend_count": 0,
			"otel.scope.name": "opentelemetry.instrumentation.httpx",
		})
	}
	system := text("system", "You are a travel agent for ACME Travel. Follow the booking policy. "+strings.Repeat(filler, 6))
	conv := []any{system, text("user", "Book a flight from Berlin to Paris on the 1st and a hotel for two nights. "+filler)}
	requests := [][]any{
		{toolCall("call_1", "search_flights"), toolCall("call_2", "book_hotel")},
		{toolCall("call_3", "search_flights"), toolCall("call_4", "book_hotel")},
		nil,
	}
	result := js(map[string]any{"ok": true, "offers": []any{
		map[string]any{"id": "AF1235", "price": 189.5, "currency": "EUR", "notes": filler},
		map[string]any{"id": "LH2230", "price": 204.0, "currency": "EUR", "notes": filler},
		map[string]any{"id": "U24512", "price": 99.9, "currency": "EUR", "notes": filler}}})
	call := 0
	for _, req := range requests {
		out := []any{text("assistant", "Here is what I found. "+filler)}
		if req != nil {
			out = []any{map[string]any{"role": "assistant", "parts": req}}
		}
		_, chatID := add(rootID, "chat gpt-4o", ptrace.SpanKindClient, with(genai, map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
			"gen_ai.response.id": "chatcmpl-9x8y7z", "gen_ai.response.finish_reasons": []any{"tool_calls"},
			"gen_ai.request.temperature": 0.2, "gen_ai.request.top_p": 0.9, "gen_ai.request.max_tokens": 1024,
			"gen_ai.request.frequency_penalty": 0.0, "gen_ai.request.presence_penalty": 0.0, "gen_ai.request.seed": 42,
			"gen_ai.output.type": "text", "gen_ai.openai.request.service_tier": "auto", "gen_ai.openai.response.system_fingerprint": "fp_5f0c1a",
			"gen_ai.input.messages": js(conv), "gen_ai.output.messages": js(out), "gen_ai.tool.definitions": toolDefs,
			"gen_ai.usage.input_tokens": 1800, "gen_ai.usage.output_tokens": 200, "gen_ai.usage.cache_read.input_tokens": 1024,
		}))
		add(chatID, "POST", ptrace.SpanKindClient, httpAttrs("POST", "api.openai.com", "/v1/chat/completions", "api-version=2024-10-01", 200, 2310))
		conv = append(conv, out...)
		for _, c := range req {
			call++
			name := c.(map[string]any)["name"].(string)
			id := c.(map[string]any)["id"].(string)
			conv = append(conv, toolResponse(id))
			tool, toolID := add(rootID, "execute_tool "+name, ptrace.SpanKindInternal, with(genai, map[string]any{
				"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": id,
				"gen_ai.tool.type": "function", "gen_ai.tool.description": "Search or book: " + name,
				"gen_ai.tool.call.arguments": js(map[string]any{"q": "paris " + id}), "gen_ai.tool.call.result": result,
			}))
			if call == 4 {
				tool.Status().SetCode(ptrace.StatusCodeError)
				tool.Status().SetMessage("upstream returned 503")
			}
			for k := 0; k < 2; k++ {
				add(toolID, "GET", ptrace.SpanKindClient, httpAttrs("GET", "api.example.com", "/v2/"+name, "from=BER&to=CDG&date=2026-12-01&page="+fmt.Sprint(k), 200, 18234))
			}
			if name == "book_hotel" {
				add(toolID, "INSERT bookings", ptrace.SpanKindClient, with(common, map[string]any{
					"db.system.name": "postgresql", "db.namespace": "travel", "db.collection.name": "bookings",
					"db.operation.name": "INSERT", "db.query.summary": "INSERT bookings",
					"db.query.text":           "INSERT INTO bookings (id, user_id, hotel_id, check_in, check_out, guests, price, currency, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now()) RETURNING id",
					"db.response.status_code": "00000", "db.client.connection.pool.name": "travel-pool", "server.address": "pg.internal",
					"server.port": 5432, "network.peer.address": "10.0.3.17", "network.peer.port": 5432, "network.transport": "tcp",
					"db.response.returned_rows": 1, "otel.scope.name": "opentelemetry.instrumentation.psycopg",
				}))
			}
		}
	}
	return spans
}

// productionResource is the resource of agentTemplateProduction's
// service: what the SDK's resource detectors and the Kubernetes attributes
// processor put there.
var productionResource = map[string]any{
	"service.name": "travel-agent", "service.version": "2.14.1", "service.namespace": "travel", "service.instance.id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
	"deployment.environment.name": "production", "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "python",
	"telemetry.sdk.version": "1.29.0", "telemetry.distro.name": "opentelemetry-distro", "telemetry.distro.version": "0.50b0",
	"host.name": "travel-agent-6d4b9c7f5-x2k8j", "host.arch": "amd64", "os.type": "linux", "os.description": "Debian GNU/Linux 12 (bookworm)",
	"process.pid": 1, "process.executable.name": "python3", "process.runtime.name": "cpython", "process.runtime.version": "3.12.7",
	"process.command_args": []any{"python3", "-m", "travel.agent"}, "k8s.namespace.name": "travel", "k8s.pod.name": "travel-agent-6d4b9c7f5-x2k8j",
	"k8s.pod.uid": "0c4f8a2e-1d3b-4e5f-8a9b-7c6d5e4f3a2b", "k8s.deployment.name": "travel-agent", "k8s.node.name": "node-pool-a-3",
	"container.id": "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e", "cloud.provider": "gcp", "cloud.region": "europe-west1",
}

// makeBatch is a batch of about spansPerBatch spans: whole traces made
// from tmpl, trace ids from seq.
func makeBatch(tmpl ptrace.SpanSlice, seq *uint64) ptrace.Traces {
	return makeTraces(tmpl, seq, spansPerBatch/tmpl.Len())
}

// makeTraces is a batch of n traces made from tmpl.
func makeTraces(tmpl ptrace.SpanSlice, seq *uint64, n int) ptrace.Traces {
	return makeTracesOf(map[string]any{"service.name": "travel-app", "host.name": "node-1"}, tmpl, seq, n)
}

// makeTracesOf is makeTraces under the given resource attributes.
func makeTracesOf(resource map[string]any, tmpl ptrace.SpanSlice, seq *uint64, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if err := rs.Resource().Attributes().FromRaw(resource); err != nil {
		panic(err)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("bench")
	spans := ss.Spans()
	spans.EnsureCapacity(n * tmpl.Len())
	for t := 0; t < n; t++ {
		*seq++
		var id pcommon.TraceID
		id[0] = 0xe1
		binary.BigEndian.PutUint64(id[8:], *seq)
		for k := 0; k < tmpl.Len(); k++ {
			sp := spans.AppendEmpty()
			tmpl.At(k).CopyTo(sp)
			sp.SetTraceID(id)
		}
	}
	return td
}

func newEval(tb testing.TB, next consumer.Traces) processor.Traces {
	f := evalprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(tb, confmap.NewFromStringMap(evalOptions).Unmarshal(cfg))
	require.NoError(tb, confmap.Validate(cfg))
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(tb, err)
	return p
}

func newGroupByTrace(tb testing.TB, next consumer.Traces) processor.Traces {
	f := groupbytraceprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
	cfg.WaitDuration = 10 * time.Millisecond
	cfg.NumWorkers = 2
	cfg.NumTraces = 1_000_000
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(tb, err)
	return p
}

// run feeds b.N batches of 1000 spans (built before the clock starts) and
// stops the clock once every span has reached the sink.
func run(b *testing.B, newProc func(testing.TB, consumer.Traces) processor.Traces) {
	runFrom(b, newProc, 1)
}

// runFrom is run with callers goroutines calling ConsumeTraces at once,
// as a receiver does with concurrent requests.
func runFrom(b *testing.B, newProc func(testing.TB, consumer.Traces) processor.Traces, callers int) {
	tmpl := agentTemplate()
	runOn(b, newProc, callers, func(seq *uint64) ptrace.Traces { return makeBatch(tmpl, seq) })
}

// runOn is runFrom on the batches next makes.
func runOn(b *testing.B, newProc func(testing.TB, consumer.Traces) processor.Traces, callers int, next func(seq *uint64) ptrace.Traces) {
	sink, p, batches, total, _ := startOn(b, newProc, next)
	stop := startClock(b, total)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Go(func() {
			for i := c; i < len(batches); i += callers {
				// A retryable refusal (the eval processor's back-pressure
				// while its released spans wait for the next consumer) is
				// retried after a pause, as a receiver's client would; the
				// pause counts in the throughput, and the refusals are
				// reported.
				for err := p.ConsumeTraces(context.Background(), batches[i]); err != nil; err = p.ConsumeTraces(context.Background(), batches[i]) {
					if consumererror.IsPermanent(err) || refused.Add(1) > 100_000 {
						b.Error(err)
						return
					}
					time.Sleep(time.Millisecond)
				}
				batches[i] = ptrace.Traces{}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	sink.waitFor(int64(total))
	stop()
	b.ReportMetric(float64(refused.Load())/float64(b.N), "refusals/op")
	require.NoError(b, p.Shutdown(context.Background()))
	require.Equal(b, int64(total), sink.spans.Load())
}

// startClock starts a benchmark's clock over total spans after a GC; stop
// stops it and reports spans/s and the process's CPU µs a span (on a
// shared machine the CPU a span varies less than the wall-clock
// throughput).
func startClock(b *testing.B, total int) (stop func()) {
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	return func() {
		elapsed := time.Since(start)
		cpu := cpuTime() - cpu0
		b.StopTimer()
		b.ReportMetric(float64(total)/elapsed.Seconds(), "spans/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(total), "cpu-µs/span")
	}
}

// cpuTime is the user and system CPU time of this process so far. It is
// testkit.ProcessCPU written out: compare.sh copies this file into the
// previous stage's tree, whose testkit has no such function.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompare is what bench/compare.sh runs on both sides.
func BenchmarkCompare(b *testing.B) {
	b.Run("eval", func(b *testing.B) { run(b, newEval) })
	b.Run("groupbytrace", func(b *testing.B) { run(b, newGroupByTrace) })
}

// BenchmarkCompareHTTP is BenchmarkCompare on agentTemplateHTTP's traces:
// HTTP spans under the tools, larger attribute sets.
func BenchmarkCompareHTTP(b *testing.B) {
	tmpl := agentTemplateHTTP()
	next := func(seq *uint64) ptrace.Traces { return makeBatch(tmpl, seq) }
	b.Run("eval", func(b *testing.B) { runOn(b, newEval, 1, next) })
	b.Run("groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
}

// BenchmarkCompareHTTPPerTrace is BenchmarkCompareHTTP with one trace per
// request, as an SDK's exporter sends a short agent run: the cost of each
// call counts, not only of each span.
func BenchmarkCompareHTTPPerTrace(b *testing.B) {
	tmpl := agentTemplateHTTP()
	next := func(seq *uint64) ptrace.Traces { return makeTraces(tmpl, seq, 1) }
	b.Run("eval", func(b *testing.B) { runOn(b, newEval, 1, next) })
	b.Run("groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
}

// BenchmarkCompareProduction is BenchmarkCompare on agentTemplateProduction's
// traces (21 spans, 8 GenAI, 20-40 attributes a span, larger payloads),
// about 1,000 spans a request.
func BenchmarkCompareProduction(b *testing.B) {
	tmpl := agentTemplateProduction()
	next := func(seq *uint64) ptrace.Traces {
		return makeTracesOf(productionResource, tmpl, seq, spansPerBatch/tmpl.Len())
	}
	b.Run("eval", func(b *testing.B) { runOn(b, newEval, 1, next) })
	b.Run("groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
}

// BenchmarkCompareProductionReadOnly is BenchmarkCompareProduction with
// every request marked read-only, as a fan-out that shares one request
// between consumers hands it on: eval copies the spans it holds instead of
// moving them (groupbytrace copies every span either way).
func BenchmarkCompareProductionReadOnly(b *testing.B) {
	tmpl := agentTemplateProduction()
	next := func(seq *uint64) ptrace.Traces {
		td := makeTracesOf(productionResource, tmpl, seq, spansPerBatch/tmpl.Len())
		td.MarkReadOnly()
		return td
	}
	b.Run("eval", func(b *testing.B) { runOn(b, newEval, 1, next) })
	b.Run("groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
}

// BenchmarkStream is the eval processor in mode: stream (docs/contract.md
// §26) against hold mode, groupbytrace and the result floor (what any
// stream mode must do: forward, and send the result spans), on both
// templates. Stream mode's
// time runs until its Shutdown has returned, so every trace's results are
// out too (not only the spans, which go on at once). Run it on the working
// tree alone (compare.sh's earlier stages have no stream mode):
//
//	go test -run '^$' -bench Stream -benchtime 200x ./bench/procbench
func BenchmarkStream(b *testing.B) {
	for _, tc := range []struct {
		name string
		tmpl ptrace.SpanSlice
	}{{"agent", agentTemplate()}, {"http", agentTemplateHTTP()}} {
		next := func(seq *uint64) ptrace.Traces { return makeBatch(tc.tmpl, seq) }
		b.Run(tc.name+"/stream", func(b *testing.B) { runOnUntilShutdown(b, newStreamEval, next) })
		b.Run(tc.name+"/hold", func(b *testing.B) { runOn(b, newEval, 1, next) })
		b.Run(tc.name+"/groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
		if newResultFloor != nil {
			b.Run(tc.name+"/floor", func(b *testing.B) { runOnUntilShutdown(b, newResultFloor, next) })
		}
	}
}

// newResultFloor, set in floor_test.go, is the benchmark-only resultfloor
// processor. compare.sh leaves that file out of an earlier stage's tree,
// whose packages resultfloor does not build against.
var newResultFloor func(testing.TB, consumer.Traces) processor.Traces

func newStreamEval(tb testing.TB, next consumer.Traces) processor.Traces {
	f := evalprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	opts := map[string]any{"mode": "stream"}
	for k, v := range evalOptions {
		opts[k] = v
	}
	require.NoError(tb, confmap.NewFromStringMap(opts).Unmarshal(cfg))
	require.NoError(tb, confmap.Validate(cfg))
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(tb, err)
	return p
}

// runOnUntilShutdown is runOn for stream mode: the clock stops once every
// span has reached the sink and Shutdown (which scores what is still
// kept) has returned; each trace brought at least one result span.
func runOnUntilShutdown(b *testing.B, newProc func(testing.TB, consumer.Traces) processor.Traces, next func(seq *uint64) ptrace.Traces) {
	sink, p, batches, total, seq := startOn(b, newProc, next)
	stop := startClock(b, total)
	for i := range batches {
		require.NoError(b, p.ConsumeTraces(context.Background(), batches[i]))
		batches[i] = ptrace.Traces{}
	}
	sink.waitFor(int64(total))
	require.NoError(b, p.Shutdown(context.Background()))
	stop()
	require.GreaterOrEqual(b, sink.spans.Load(), int64(total)+int64(seq), "every trace's result spans")
}

// BenchmarkCompareConcurrent is BenchmarkCompare with four goroutines
// calling ConsumeTraces at once (a receiver serving concurrent requests).
func BenchmarkCompareConcurrent(b *testing.B) {
	b.Run("eval", func(b *testing.B) { runFrom(b, newEval, 4) })
	b.Run("groupbytrace", func(b *testing.B) { runFrom(b, newGroupByTrace, 4) })
}

// BenchmarkCompareCaptured is BenchmarkCompare on the traces real
// instrumentation libraries sent (interop/testdata: OTel GenAI, OpenInference,
// OpenLLMetry, Vercel AI SDK, LangChain; 2-6 KB of OTLP JSON a span), each
// repeated under fresh trace ids, about 1,000 spans a batch.
func BenchmarkCompareCaptured(b *testing.B) {
	captured := loadCaptured(b)
	next := func(seq *uint64) ptrace.Traces { return capturedBatch(captured, seq) }
	b.Run("eval", func(b *testing.B) { runOn(b, newEval, 1, next) })
	b.Run("groupbytrace", func(b *testing.B) { runOn(b, newGroupByTrace, 1, next) })
}

// loadCaptured reads the captured traces (the working tree's: compare.sh
// runs both sides from it).
func loadCaptured(tb testing.TB) []ptrace.Traces {
	files, err := filepath.Glob("../../interop/testdata/*.json")
	require.NoError(tb, err)
	require.NotEmpty(tb, files)
	var out []ptrace.Traces
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(tb, err)
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(tb, err, f)
		out = append(out, td)
	}
	return out
}

// capturedBatch is the captured traces, each under a fresh trace id, until
// the batch has at least spansPerBatch spans.
func capturedBatch(captured []ptrace.Traces, seq *uint64) ptrace.Traces {
	td := ptrace.NewTraces()
	for n := 0; n < spansPerBatch; {
		for _, c := range captured {
			*seq++
			var id pcommon.TraceID
			id[0] = 0xc1
			binary.BigEndian.PutUint64(id[8:], *seq)
			for i := 0; i < c.ResourceSpans().Len(); i++ {
				rs := td.ResourceSpans().AppendEmpty()
				c.ResourceSpans().At(i).CopyTo(rs)
				for j := 0; j < rs.ScopeSpans().Len(); j++ {
					spans := rs.ScopeSpans().At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						spans.At(k).SetTraceID(id)
						n++
					}
				}
			}
		}
	}
	return td
}

// TestBenchmarkScores checks that the benchmark measures scoring: every
// evaluator scores every trace, and tool_trajectory and tool_call_validity
// pass while tool_error fails (the last tool call failed).
// The same holds on the production-shaped traces (the tool calls are the
// same four; HTTP and database spans under them).
func TestBenchmarkScores(t *testing.T) {
	for _, tc := range []struct {
		name string
		td   func(seq *uint64) ptrace.Traces
	}{
		{"agent", func(seq *uint64) ptrace.Traces { return makeBatch(agentTemplate(), seq) }},
		{"production", func(seq *uint64) ptrace.Traces {
			return makeTracesOf(productionResource, agentTemplateProduction(), seq, spansPerBatch/spansPerTrace)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkScores(t, tc.td) })
	}
}

func checkScores(t *testing.T, batch func(seq *uint64) ptrace.Traces) {
	sink := new(consumertest.TracesSink)
	p := newEval(t, sink)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	var seq uint64
	td := batch(&seq)
	total := td.SpanCount()
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Eventually(t, func() bool { return sink.SpanCount() >= total }, 30*time.Second, time.Millisecond)
	require.NoError(t, p.Shutdown(context.Background()))
	passed := map[string]int{}
	agents := 0
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			for j := 0; j < td.ResourceSpans().At(i).ScopeSpans().Len(); j++ {
				spans := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if !spans.At(k).ParentSpanID().IsEmpty() {
						continue
					}
					agents++
					spans.At(k).Attributes().Range(func(key string, v pcommon.Value) bool {
						if name, ok := strings.CutSuffix(key, ".passed"); ok && v.Bool() {
							passed[name]++
						} else if ok {
							passed[name] += 0
						}
						return true
					})
				}
			}
		}
	}
	require.Equal(t, int(seq), agents)
	require.Equal(t, map[string]int{
		"eval.tool_trajectory": agents, "eval.tool_call_validity": agents, "eval.tool_error": 0,
		"eval.tool_efficiency": agents, "eval.token_usage": agents,
	}, passed)
}

// startOn starts a processor from newProc on a counting sink and makes b.N
// batches with next, before any clock runs; total is their span count and
// traces the number of traces next made.
func startOn(b *testing.B, newProc func(testing.TB, consumer.Traces) processor.Traces, next func(seq *uint64) ptrace.Traces) (sink *countSink, p processor.Traces, batches []ptrace.Traces, total int, traces uint64) {
	sink = &countSink{}
	p = newProc(b, sink)
	var seq uint64
	batches = make([]ptrace.Traces, b.N)
	for i := range batches {
		batches[i] = next(&seq)
		total += batches[i].SpanCount()
	}
	require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
	return sink, p, batches, total, seq
}
