package evalprocessor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkDurableConcurrentCallers is BenchmarkGenAIEndToEnd's eval and
// eval_storage with the batches sent by 4 callers at once (a receiver
// with several connections, or Kafka partitions): what group commit is for.
// It reports the storage transactions that wrote held data per request.
func BenchmarkDurableConcurrentCallers(b *testing.B) {
	const callers = 4
	for _, withStorage := range []bool{false, true} {
		name := "eval"
		if withStorage {
			name = "eval_storage"
		}
		b.Run(name, func(b *testing.B) {
			sink := &countSink{}
			cfg := benchEvalConfig(10 * time.Millisecond)
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
			cpu0, start := processCPU(), time.Now()
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
			elapsed, cpu := time.Since(start), processCPU()-cpu0
			b.StopTimer()
			spans := float64(b.N * spansPerBatch)
			b.ReportMetric(spans/elapsed.Seconds(), "spans/s")
			b.ReportMetric(cpu.Seconds()*1e6/spans, "cpu-µs/span")
			if withStorage {
				b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/request")
			}
			require.NoError(b, p.Shutdown(context.Background()))
		})
	}
}
