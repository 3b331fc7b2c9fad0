package main

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"gopkg.in/yaml.v3"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/testkit"
	"github.com/evalbridge/evalbridge/processor/evalprocessor"
)

// The cpu command measures the built collector; these benchmarks measure
// the eval processor alone, in process, on the same requests (the load
// generator's normal mix, as its scheduler batches them), so that the two
// can be set side by side: what the processor costs on its own, and what
// the collector around it adds.

// marshalSink marshals what it receives to OTLP protobuf, as an exporter
// does, and counts the spans.
type marshalSink struct{ spans atomic.Int64 }

func (s *marshalSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (s *marshalSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if _, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td); err != nil {
		return err
	}
	s.spans.Add(int64(td.SpanCount()))
	return nil
}

// loadRequests is n traces of the normal mix as the scheduler sends them at
// 300 traces/s (the chunks due in one 10 ms tick make a request), each
// marshalled to protobuf as the wire carries it, and their span count.
// perTraceResource sends each trace chunk under a resource of its own, the
// shape of the load generator before it sent SDK-shaped requests.
func loadRequests(n int, perTraceResource bool) ([][]byte, int) {
	const rate, tick = 300, 10 * time.Millisecond
	l := newLoad(loadConfig{rate: rate, plainShare: 0.2, failShare: 0.2, parts: 3, gap: 100 * time.Millisecond, seed: 1})
	start := time.Unix(1_700_000_000, 0)
	var all []chunk
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		all = append(all, l.gen.normal(at, l.cfg.plainShare, l.cfg.failShare, l.cfg.parts, l.cfg.gap)...)
	}
	slices.SortStableFunc(all, func(a, b chunk) int { return a.due.Compare(b.due) })
	var reqs [][]byte
	spans := 0
	for i := 0; i < len(all); {
		due := all[i].due.Truncate(tick)
		j := i
		for j < len(all) && all[j].due.Truncate(tick).Equal(due) {
			j++
		}
		var td ptrace.Traces
		if perTraceResource {
			td = ptrace.NewTraces()
			for _, c := range all[i:j] {
				c.spans.MoveTo(td.ResourceSpans().AppendEmpty())
			}
		} else {
			td = l.request(all[i:j]).req.Traces()
		}
		spans += td.SpanCount()
		raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			panic(err)
		}
		reqs = append(reqs, raw)
		i = j
	}
	return reqs, spans
}

// startEval starts the eval processor with the cpu command's evaluators and
// settings (eval, e.g. "wait: 1s") in front of next.
func startEval(b testing.TB, eval string, next consumer.Traces) processor.Traces {
	f := evalprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(eval+"\nevaluators:"+normalEvaluators), &m); err != nil {
		b.Fatal(err)
	}
	if err := confmap.NewFromStringMap(m).Unmarshal(cfg); err != nil {
		b.Fatal(err)
	}
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	return p
}

func decode(b testing.TB, raw []byte) ptrace.Traces {
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		b.Fatal(err)
	}
	return td
}

// BenchmarkLoadShape feeds 3,000 traces of requests, decoded from protobuf
// as a receiver does, either straight to a marshalling sink (direct) or
// through the eval processor (wait 20ms) to it, and reports the process's
// CPU time and the wall time per span until every span reached the sink.
// Eval minus direct is what the processor costs per span in process.
func BenchmarkLoadShape(b *testing.B) {
	for _, shape := range []string{"sdk", "per_trace_resource"} {
		reqs, spans := loadRequests(3000, shape == "per_trace_resource")
		for _, pipeline := range []string{"direct", "eval"} {
			b.Run(shape+"/"+pipeline, func(b *testing.B) {
				cpu0 := testkit.ProcessCPU()
				for i := 0; i < b.N; i++ {
					sink := &marshalSink{}
					var next consumer.Traces = sink
					var p processor.Traces
					if pipeline == "eval" {
						p = startEval(b, "wait: 20ms", sink)
						next = p
					}
					for _, raw := range reqs {
						td := decode(b, raw)
						for err := next.ConsumeTraces(context.Background(), td); err != nil; err = next.ConsumeTraces(context.Background(), td) {
							time.Sleep(time.Millisecond) // back-pressure: retried, as a client does
						}
					}
					for deadline := time.Now().Add(time.Minute); sink.spans.Load() < int64(spans); {
						if time.Now().After(deadline) {
							b.Fatalf("%d of %d spans arrived within a minute", sink.spans.Load(), spans)
						}
						time.Sleep(100 * time.Microsecond)
					}
					if p != nil {
						if err := p.Shutdown(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
				}
				n := float64(b.N * spans)
				b.ReportMetric(float64((testkit.ProcessCPU()-cpu0).Nanoseconds())/1e3/n, "cpu-µs/span")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/n, "µs/span")
			})
		}
	}
}

// BenchmarkLoadShapeHeldBytes is the eval processor package's
// BenchmarkHeldBytesPerSpan on these requests: the heap the processor holds
// per held span (wait 1h: every GenAI trace is held), in hold mode and in
// stream mode (what it keeps of them), the requests' OTLP size per span,
// and pdata's own cost, the requests kept as decoded.
//
//	go test -run '^$' -bench LoadShapeHeldBytes -benchtime 1x ./cmd/evalbridge-loadgen
func BenchmarkLoadShapeHeldBytes(b *testing.B) {
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	for _, shape := range []string{"sdk", "per_trace_resource"} {
		reqs, spans := loadRequests(3000, shape == "per_trace_resource")
		wire := 0
		for _, r := range reqs {
			wire += len(r)
		}
		heldSpans := genAITraceSpans(b, reqs) // what hold mode holds
		for _, mode := range []string{"hold", "stream"} {
			b.Run(shape+"/"+mode, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					sink := &marshalSink{}
					p := startEval(b, "wait: 1h\nmax_traces: 1000000\nmode: "+mode, sink)
					before := heap()
					for _, raw := range reqs {
						if err := p.ConsumeTraces(context.Background(), decode(b, raw)); err != nil {
							b.Fatal(err)
						}
					}
					held := heap() - before
					passed := sink.spans.Load()
					if want := map[string]int64{"hold": int64(spans) - heldSpans, "stream": int64(spans)}[mode]; passed != want {
						b.Fatalf("%s mode: %d of %d spans went on at once, want %d", mode, passed, spans, want)
					}
					b.ReportMetric(float64(held)/float64(heldSpans), "B/held_span")
					b.ReportMetric(float64(wire)/float64(spans), "B/input_span")

					before = heap()
					kept := make([]ptrace.Traces, 0, len(reqs))
					for _, raw := range reqs {
						kept = append(kept, decode(b, raw))
					}
					b.ReportMetric(float64(heap()-before)/float64(spans), "B/decoded_span")
					runtime.KeepAlive(kept)

					ctx, cancel := context.WithCancel(context.Background())
					cancel() // forward unscored: this measures holding, not scoring
					if err := p.Shutdown(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// genAITraceSpans counts the spans of reqs' traces that have a GenAI span.
func genAITraceSpans(b *testing.B, reqs [][]byte) int64 {
	perTrace := map[pcommon.TraceID]int64{}
	genAI := map[pcommon.TraceID]bool{}
	for _, raw := range reqs {
		adapter.ForEachSpan(decode(b, raw), func(r adapter.SpanRef) {
			perTrace[r.Span.TraceID()]++
			genAI[r.Span.TraceID()] = genAI[r.Span.TraceID()] || adapter.IsGenAI(r.Span)
		})
	}
	var n int64
	for id, c := range perTrace {
		if genAI[id] {
			n += c
		}
	}
	if n == 0 {
		b.Fatal("no GenAI traces in the load")
	}
	return n
}
