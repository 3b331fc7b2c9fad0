package evalprocessor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// BenchmarkStreamKept reports what stream mode keeps of a GenAI trace
// (kept-B/trace) against its OTLP protobuf size (otlp-B/trace) and their
// ratio (kept/otlp; docs/contract.md §26 asks for at most 0.5): on the
// traces real instrumentation libraries sent (interop/testdata) and on an
// agent run with HTTP spans under its tools.
//
//	go test -run '^$' -bench StreamKept ./processor/evalprocessor
func BenchmarkStreamKept(b *testing.B) {
	files, err := filepath.Glob("../../interop/testdata/*.json")
	require.NoError(b, err)
	require.NotEmpty(b, files)
	var captured []ptrace.Traces
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(b, err)
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(b, err, f)
		captured = append(captured, td)
	}
	b.Run("captured", func(b *testing.B) { benchKept(b, captured) })
	b.Run("agent_http", func(b *testing.B) {
		var tds []ptrace.Traces
		for tr := byte(1); tr <= 20; tr++ {
			tds = append(tds, agentWithHTTP(tr))
		}
		benchKept(b, tds)
	})
}

// agentWithHTTP is agentTrace with two HTTP client spans under each tool
// call, each with a dozen attributes.
func agentWithHTTP(tr byte) ptrace.Traces {
	bt := newBatch()
	agentTrace(bt, tr, false)
	id := byte(10)
	for _, tool := range []byte{3, 4} {
		for k := 0; k < 2; k++ {
			s := bt.plain(tr, id, tool)
			s.Attributes().PutStr("url.full", "https://api.example.com/v2/flights/search?from=BER&to=CDG&date=2026-12-01")
			s.Attributes().PutInt("http.response.status_code", 200)
			s.Attributes().PutStr("server.address", "api.example.com")
			s.Attributes().PutInt("server.port", 443)
			s.Attributes().PutStr("user_agent.original", "python-httpx/0.27.0")
			s.Attributes().PutStr("network.peer.address", "93.184.216.34")
			s.Attributes().PutInt("http.response.body.size", 18234)
			s.Attributes().PutStr("http.request.body", strings.Repeat(`{"q":"paris"}`, 8))
			id++
		}
	}
	return bt.td
}

func benchKept(b *testing.B, tds []ptrace.Traces) {
	otlp, kept, traces := 0, 0, 0
	for i := 0; i < b.N; i++ {
		otlp, kept, traces = 0, 0, 0
		for _, td := range tds {
			raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			require.NoError(b, err)
			otlp += len(raw)
			dec := map[pcommon.TraceID]decision{}
			adapter.ForEachSpan(td, func(r adapter.SpanRef) { dec[r.Span.TraceID()] = decHoldNew })
			byTrace := map[pcommon.TraceID]*heldTrace{}
			chunks := keepSpans(td, dec, 0)
			packAll(chunks)
			for _, c := range chunks {
				t := byTrace[c.id]
				if t == nil {
					t = &heldTrace{id: c.id}
					byTrace[c.id] = t
				}
				t.keep(c)
			}
			for _, t := range byTrace {
				kept += t.keptBytes()
			}
			traces += len(byTrace)
		}
	}
	b.ReportMetric(float64(otlp)/float64(traces), "otlp-B/trace")
	b.ReportMetric(float64(kept)/float64(traces), "kept-B/trace")
	b.ReportMetric(float64(kept)/float64(otlp), "kept/otlp")
}
