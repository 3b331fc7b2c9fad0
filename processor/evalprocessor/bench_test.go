package evalprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

const (
	spansPerTrace = 10
	spansPerBatch = 1000
)

// countSink counts spans and keeps nothing.
type countSink struct {
	spans   atomic.Int64
	marshal bool
}

func (s *countSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (s *countSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if s.marshal {
		// What an OTLP exporter does with every batch.
		if _, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td); err != nil {
			return err
		}
	}
	s.spans.Add(int64(td.SpanCount()))
	return nil
}

func (s *countSink) waitFor(n int64) {
	for s.spans.Load() < n {
		time.Sleep(50 * time.Microsecond)
	}
}

// messagesJSON is ~2KB of chat messages.
func messagesJSON(i int) string {
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 8)
	msgs := []any{
		map[string]any{"role": "system", "parts": []any{map[string]any{"type": "text", "content": "You are a travel agent. " + filler}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": fmt.Sprintf("Turn %d: book a flight to Paris and a hotel. %s", i, filler)}}},
		map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": filler}}},
	}
	return js(msgs)
}

var benchTools = []any{
	map[string]any{"type": "function", "name": "search_flights", "description": "Search flights",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}}},
	map[string]any{"type": "function", "name": "book_hotel", "description": "Book a hotel",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}}},
}

// genAITemplate is one agent trace of 10 spans: 1 agent, 3 LLM calls with
// ~2KB of messages each, 4 tool calls and 2 other spans.
func genAITemplate() ptrace.SpanSlice {
	b := newBatch()
	b.agent(1)
	tools := js(benchTools)
	for i := byte(0); i < 3; i++ {
		sp := b.llm(1, 2+i, "")
		sp.Attributes().PutStr("gen_ai.input.messages", messagesJSON(int(i)))
		sp.Attributes().PutStr("gen_ai.tool.definitions", tools)
		sp.Attributes().PutInt("gen_ai.usage.input_tokens", 900)
		sp.Attributes().PutInt("gen_ai.usage.output_tokens", 120)
	}
	for i, n := range []string{"search_flights", "book_hotel", "search_flights", "book_hotel"} {
		b.tool(1, byte(5+i), n, i == 3)
	}
	b.plain(1, 9, 5)
	b.plain(1, 10, 6)
	return b.spans
}

// plainTemplate is a trace of 10 spans with no GenAI span.
func plainTemplate() ptrace.SpanSlice {
	b := newBatch()
	for i := byte(1); i <= spansPerTrace; i++ {
		parent := byte(0)
		if i > 1 {
			parent = 1
		}
		sp := b.span(1, i, parent, "GET /api/orders/{id}", map[string]any{
			"http.request.method": "GET", "http.route": "/api/orders/{id}", "http.response.status_code": 200,
			"url.full": "https://shop.example.com/api/orders/12345", "server.address": "shop.example.com",
			"network.protocol.version": "1.1", "user_agent.original": "Mozilla/5.0", "db.system.name": "postgresql",
		})
		sp.SetKind(ptrace.SpanKindServer)
	}
	return b.spans
}

// makeBatch builds a batch of 100 traces from the template, trace ids from seq.
func makeBatch(tmpl ptrace.SpanSlice, seq *uint64) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-app")
	rs.Resource().Attributes().PutStr("host.name", "node-1")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("bench")
	spans := ss.Spans()
	spans.EnsureCapacity(spansPerBatch)
	for t := 0; t < spansPerBatch/spansPerTrace; t++ {
		*seq++
		var id pcommon.TraceID
		binary.BigEndian.PutUint64(id[8:], *seq)
		id[0] = 0xe1
		for k := 0; k < tmpl.Len(); k++ {
			sp := spans.AppendEmpty()
			tmpl.At(k).CopyTo(sp)
			sp.SetTraceID(id)
		}
	}
	return td
}

func benchEvalConfig(wait time.Duration) *Config {
	cfg := createDefaultConfig()
	cfg.Wait = wait
	cfg.Workers = 2
	cfg.MaxTraces = 1_000_000
	cfg.Evaluators = []evaluators.Config{
		{Type: "tool_trajectory", Options: map[string]any{"mode": "in_order", "expected": []any{
			map[string]any{"name": "search_flights"}, map[string]any{"name": "book_hotel"}}}},
		{Type: "tool_call_validity"},
		{Type: "tool_error"},
		{Type: "tool_efficiency"},
	}
	return cfg
}

func newEvalForBench(b *testing.B, cfg *Config, next consumer.Traces) processor.Traces {
	require.NoError(b, cfg.Config.Validate())
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(Type), cfg, next)
	require.NoError(b, err)
	return p
}

func newGroupByTraceForBench(b *testing.B, next consumer.Traces) processor.Traces {
	f := groupbytraceprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
	cfg.WaitDuration = 10 * time.Millisecond
	cfg.NumWorkers = 2
	cfg.NumTraces = 1_000_000
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(b, err)
	return p
}

// runEndToEnd feeds b.N batches of 1000 spans and stops the clock once every
// span has reached the sink; it reports spans/s.
func runEndToEnd(b *testing.B, p processor.Traces, sink *countSink, tmpl ptrace.SpanSlice) {
	runEndToEndOn(b, p, sink, tmpl, componenttest.NewNopHost())
}

func runEndToEndOn(b *testing.B, p processor.Traces, sink *countSink, tmpl ptrace.SpanSlice, host component.Host) {
	var seq uint64
	batches := make([]ptrace.Traces, b.N)
	for i := range batches {
		batches[i] = makeBatch(tmpl, &seq)
	}
	require.NoError(b, p.Start(context.Background(), host))
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testkit.ProcessCPU()
	start := time.Now()
	refusals := 0
	for i := range batches {
		// Back-pressure (released spans waiting for the next consumer) is
		// a retryable refusal: retried after a pause, as a client would.
		for err := p.ConsumeTraces(context.Background(), batches[i]); err != nil; err = p.ConsumeTraces(context.Background(), batches[i]) {
			if consumererror.IsPermanent(err) || refusals > 100_000 {
				b.Fatal(err)
			}
			refusals++
			time.Sleep(time.Millisecond)
		}
		batches[i] = ptrace.Traces{}
	}
	sink.waitFor(int64(b.N * spansPerBatch))
	elapsed := time.Since(start)
	cpu := testkit.ProcessCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N*spansPerBatch)/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(refusals)/float64(b.N), "refusals/op")
	// CPU time of the process per span: steadier than spans/s on a shared machine.
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N*spansPerBatch), "cpu-µs/span")
	require.NoError(b, p.Shutdown(context.Background()))
	require.Equal(b, int64(b.N*spansPerBatch), sink.spans.Load())
}

// BenchmarkGenAIEndToEnd compares the eval processor (deterministic
// evaluators) with contrib's groupbytrace (wait_duration 10ms) on agent
// traces, spans/s until every span has reached the sink.
func BenchmarkGenAIEndToEnd(b *testing.B) {
	tmpl := genAITemplate()
	b.Run("eval", func(b *testing.B) {
		sink := &countSink{}
		runEndToEnd(b, newEvalForBench(b, benchEvalConfig(10*time.Millisecond), sink), sink, tmpl)
	})
	b.Run("groupbytrace", func(b *testing.B) {
		sink := &countSink{}
		runEndToEnd(b, newGroupByTraceForBench(b, sink), sink, tmpl)
	})
	// The same eval processor with `storage:` on contrib's file_storage
	// (default settings: no fsync): the cost of durable holding.
	b.Run("eval_storage", func(b *testing.B) {
		sink := &countSink{}
		cfg := benchEvalConfig(10 * time.Millisecond)
		id := storageID
		cfg.Storage = &id
		st := startFileStorageB(b, b.TempDir())
		host := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
		runEndToEndOn(b, newEvalForBench(b, cfg, sink), sink, tmpl, host)
	})
}

// BenchmarkNonGenAIPassThrough compares the eval processor on traces with no
// GenAI span with handing the batches straight to the next consumer; with a
// consumer that does nothing, and with one that marshals to OTLP protobuf
// (what an exporter does).
func BenchmarkNonGenAIPassThrough(b *testing.B) {
	var seq uint64
	td := makeBatch(plainTemplate(), &seq)
	for _, marshal := range []bool{false, true} {
		suffix := "nop_next"
		if marshal {
			suffix = "marshal_next"
		}
		b.Run("direct/"+suffix, func(b *testing.B) {
			sink := &countSink{marshal: marshal}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := sink.ConsumeTraces(context.Background(), td); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("eval/"+suffix, func(b *testing.B) {
			benchPassThrough(b, td, marshal, false)
		})
		// In production the processor always holds some GenAI traces, so
		// every batch is also checked against the traces it holds.
		b.Run("eval_holding_traces/"+suffix, func(b *testing.B) {
			benchPassThrough(b, td, marshal, true)
		})
	}
}

func benchPassThrough(b *testing.B, td ptrace.Traces, marshal, holding bool) {
	sink := &countSink{marshal: marshal}
	p := newEvalForBench(b, benchEvalConfig(time.Hour), sink)
	require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
	if holding {
		seq := uint64(1 << 40)
		require.NoError(b, p.ConsumeTraces(context.Background(), makeBatch(genAITemplate(), &seq)))
	}
	{
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := p.ConsumeTraces(context.Background(), td); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		require.NoError(b, p.Shutdown(context.Background()))
	}
}

// BenchmarkHeldBytesPerSpan reports the heap held per buffered span of GenAI
// agent traces. The batches are unmarshaled from OTLP protobuf, as a
// receiver does, so every span owns its strings; the input is released.
// B/input_span is the protobuf size of a span, for scale.
func BenchmarkHeldBytesPerSpan(b *testing.B) {
	const traces = 2000
	var seq uint64
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(makeBatch(genAITemplate(), &seq))
	require.NoError(b, err)
	batch := func() ptrace.Traces {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(b, err)
		spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			if k%spansPerTrace == 0 {
				seq++
			}
			var id pcommon.TraceID
			binary.BigEndian.PutUint64(id[8:], seq)
			spans.At(k).SetTraceID(id)
		}
		return td
	}
	for i := 0; i < b.N; i++ {
		sink := &countSink{}
		p := newEvalForBench(b, benchEvalConfig(time.Hour), sink)
		require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		for n := 0; n < traces*spansPerTrace/spansPerBatch; n++ {
			require.NoError(b, p.ConsumeTraces(context.Background(), batch()))
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		after := ms.HeapAlloc
		require.Equal(b, int64(0), sink.spans.Load(), "all held")
		b.ReportMetric(float64(after-before)/float64(traces*spansPerTrace), "B/held_span")
		b.ReportMetric(float64(len(raw))/float64(spansPerBatch), "B/input_span")
		// The floor: the same requests kept as the receiver decoded them,
		// without the processor (pdata's own cost of holding a span).
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before = ms.HeapAlloc
		kept := make([]ptrace.Traces, 0, traces*spansPerTrace/spansPerBatch)
		for n := 0; n < cap(kept); n++ {
			kept = append(kept, batch())
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc-before)/float64(traces*spansPerTrace), "B/decoded_span")
		runtime.KeepAlive(kept)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // forward unscored: this measures holding, not scoring
		require.NoError(b, p.Shutdown(ctx))
		runtime.KeepAlive(p)
	}
}
