package evalprocessor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/testkit"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
)

// BenchmarkDurableConcurrentCallers is BenchmarkGenAIEndToEnd's eval and
// eval_storage with the batches sent by 4 callers at once (a receiver
// with several connections, or Kafka partitions): what group commit is for.
// It reports the storage transactions that wrote held data per request.
// stream and stream_storage are the same in mode: stream (§26), the clock
// stopped once Shutdown has scored what is still kept and forwarded the
// results (the spans themselves go on in the calls).
func BenchmarkDurableConcurrentCallers(b *testing.B) {
	const callers = 4
	for _, v := range []struct {
		name        string
		mode        string
		withStorage bool
	}{{"eval", engine.ModeHold, false}, {"eval_storage", engine.ModeHold, true},
		{"stream", engine.ModeStream, false}, {"stream_storage", engine.ModeStream, true}} {
		withStorage := v.withStorage
		b.Run(v.name, func(b *testing.B) {
			sink := &countSink{}
			cfg := benchEvalConfig(10 * time.Millisecond)
			cfg.Mode = v.mode
			host := component.Host(componenttest.NewNopHost())
			var writes atomic.Int64
			if withStorage {
				id := storageID
				cfg.Storage = &id
				st := startFileStorageB(b, b.TempDir())
				st.onBatch = func(ops []*storage.Operation) {
					if hasOp(ops, storage.Set) {
						writes.Add(1)
					}
				}
				host = extHost{Host: host, exts: map[component.ID]component.Component{storageID: st}}
			}
			p := newEvalForBench(b, cfg, sink)
			var seq uint64
			tmpl := genAITemplate()
			batches := make(chan ptrace.Traces, b.N)
			for i := 0; i < b.N; i++ {
				batches <- makeBatch(tmpl, &seq)
			}
			close(batches)
			require.NoError(b, p.Start(context.Background(), host))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, start := testkit.ProcessCPU(), time.Now()
			var wg sync.WaitGroup
			for c := 0; c < callers; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for td := range batches {
						if err := p.ConsumeTraces(context.Background(), td); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			sink.waitFor(int64(b.N * spansPerBatch))
			stopped := false
			if v.mode == engine.ModeStream {
				require.NoError(b, p.Shutdown(context.Background()))
				stopped = true
			}
			elapsed, cpu := time.Since(start), testkit.ProcessCPU()-cpu0
			b.StopTimer()
			spans := float64(b.N * spansPerBatch)
			b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
			b.ReportMetric(cpu.Seconds()*1e6/spans, "cpu-µs/span")
			if withStorage {
				b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/request")
			}
			if !stopped {
				require.NoError(b, p.Shutdown(context.Background()))
			}
		})
	}
}

// BenchmarkDurablePersist is the store alone: each op persists the chunks
// of one request of BenchmarkGenAIEndToEnd (100 traces, 1000 spans) on
// file_storage, as ConsumeTraces does, and releases those of the request
// four before (deletes ride the writes as in the processor). It reports
// CPU per span.
func BenchmarkDurablePersist(b *testing.B) {
	s := openBenchStore(b, startFileStorageB(b, b.TempDir()))
	var seq uint64
	tmpl := genAITemplate()
	requests := make([][]*chunk, 8)
	for i := range requests {
		requests[i] = traceChunks(makeBatch(tmpl, &seq))
	}
	keys := make([][]string, len(requests))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testkit.ProcessCPU()
	for i := 0; i < b.N; i++ {
		r := i % len(requests)
		old := (i + len(requests) - 4) % len(requests)
		if i >= 4 {
			s.remove(keys[old])
		}
		require.NoError(b, s.persist(context.Background(), requests[r]))
		keys[r] = keys[r][:0]
		for _, c := range requests[r] {
			keys[r] = append(keys[r], c.key)
		}
	}
	cpu := testkit.ProcessCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N*spansPerBatch), "cpu-µs/span")
	require.NoError(b, s.close(context.Background()))
}

// BenchmarkDurableRestore measures how long Start takes to restore what
// the store holds (Start returns only once it is held again, contract
// §12): 10,000 traces of the end-to-end benchmark (100,000 spans). Each op
// is one Start on the same file; the processor is then shut down as if
// killed (nothing it deletes reaches the file).
func BenchmarkDurableRestore(b *testing.B) {
	const requests = 100
	dir := b.TempDir()
	fill := startFileStorageB(b, dir)
	s := openBenchStore(b, fill)
	var seq uint64
	tmpl := genAITemplate()
	for r := 0; r < requests; r++ {
		require.NoError(b, s.persist(context.Background(), traceChunks(makeBatch(tmpl, &seq))))
	}
	require.NoError(b, s.close(context.Background()))
	fill.stop()

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st := startFileStorageB(b, dir)
		cfg := benchEvalConfig(time.Hour)
		id := storageID
		cfg.Storage = &id
		sink := &countSink{}
		p := newEvalForBench(b, cfg, sink)
		host := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
		b.StartTimer()
		require.NoError(b, p.Start(context.Background(), host))
		b.StopTimer()
		st.dead.Store(true) // killed: what Shutdown deletes stays in the file
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(b, p.Shutdown(ctx))
		st.stop()
		b.StartTimer()
	}
}

// openBenchStore opens the hold store on st, as Start does.
func openBenchStore(b *testing.B, st *testStorage) *holdStore {
	host := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
	tel, err := newTelemetry(processortest.NewNopSettings(Type).TelemetrySettings)
	require.NoError(b, err)
	s, err := openStore(context.Background(), host, storageID, component.NewID(Type), time.Now, zap.NewNop(), tel)
	require.NoError(b, err)
	return s
}

// traceChunks is td split into one held chunk per trace, by the ingest
// path's own splitter.
func traceChunks(td ptrace.Traces) []*chunk {
	dec := map[pcommon.TraceID]decision{}
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { dec[r.Span.TraceID()] = decHold })
	_, chunks := splitTraces(td, dec, 0)
	return chunks
}
