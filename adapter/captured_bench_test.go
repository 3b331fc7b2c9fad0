package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkAdaptCaptured builds the agent cases without their conversation
// (what the engine asks for with deterministic tool evaluators) of the
// traces real instrumentation libraries sent (../interop/testdata), one
// sub-benchmark per library; ns/op is per span.
func BenchmarkAdaptCaptured(b *testing.B) {
	files, err := filepath.Glob("../interop/testdata/*.json")
	if err != nil || len(files) == 0 {
		b.Skip("no captured traces")
	}
	opts := Options{AgentCases: true, SkipConversation: true}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			b.Fatal(err)
		}
		var traces [][]SpanRef
		n := 0
		for _, refs := range GroupByTrace(td) {
			traces = append(traces, refs)
			n += len(refs)
		}
		b.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for _, refs := range traces {
					AdaptWith(refs, opts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
		})
	}
}
