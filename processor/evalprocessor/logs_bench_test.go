package evalprocessor

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/processor/processortest"
)

// contentRecords is the content log records of one chat call of trace
// tr, span sp, as the JS @opentelemetry/instrumentation-openai writes them
// (event.name attribute, structured bodies): system, user, choice; ~1.5 KB.
func contentRecords(lrs plog.LogRecordSlice, tr pcommon.TraceID, sp pcommon.SpanID) {
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 8)
	add := func(name string, body map[string]any) {
		lr := lrs.AppendEmpty()
		lr.SetTraceID(tr)
		lr.SetSpanID(sp)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Unix(1_700_000_000, 0)))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.Attributes().PutStr("event.name", name)
		lr.Attributes().PutStr("gen_ai.system", "openai")
		if err := lr.Body().FromRaw(body); err != nil {
			panic(err)
		}
	}
	add("gen_ai.system.message", map[string]any{"content": "You are a travel agent. " + filler})
	add("gen_ai.user.message", map[string]any{"content": "Book a flight to Paris and a hotel. " + filler})
	add("gen_ai.choice", map[string]any{"index": int64(0), "finish_reason": "stop",
		"message": map[string]any{"role": "assistant", "content": filler}})
}

// BenchmarkHeldLogRecordBytes holds a realistic mix — agent traces whose
// three chat calls have their content in log records — and reports the heap
// held per held log record against the OTLP (protobuf) bytes of that record,
// measured in the same run. Nothing is released while it measures.
func BenchmarkHeldLogRecordBytes(b *testing.B) {
	const traces = 2000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := createDefaultConfig()
		cfg.Wait = time.Hour
		cfg.MaxTraces = traces * 2
		cfg.Evaluators = toolErrorOnly()
		clk := newFakeClock()
		set := processortest.NewNopSettings(Type)
		p, err := newProcessor(set, cfg, new(consumertest.TracesSink), clk.clock())
		require.NoError(b, err)
		p.nextLogs = new(consumertest.LogsSink)
		require.NoError(b, p.Start(context.Background(), nil))
		<-clk.got

		// the requests to send, as a receiver gets them (OTLP bytes), built
		// before measuring; each is decoded in the measured part, so what
		// the processor keeps of it is all that stays on the heap.
		var batches [][]byte
		otlpBytes, records := 0, 0
		for t := 0; t < traces; t++ {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "travel-app")
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("@opentelemetry/instrumentation-openai")
			id := pcommon.TraceID{byte(t), byte(t >> 8), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
			for c := byte(0); c < 3; c++ {
				contentRecords(sl.LogRecords(), id, pcommon.SpanID{1, c})
			}
			raw, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
			require.NoError(b, err)
			otlpBytes += len(raw)
			records += ld.LogRecordCount()
			batches = append(batches, raw)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for _, raw := range batches {
			req := plogotlp.NewExportRequest()
			require.NoError(b, req.UnmarshalProto(raw))
			require.NoError(b, p.ConsumeLogs(context.Background(), req.Logs()))
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(batches) // alive in both readings: not counted
		held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(held/float64(records), "heap-B/held-record")
		b.ReportMetric(float64(otlpBytes)/float64(records), "otlp-B/record")
		b.ReportMetric(held/float64(otlpBytes), "held/otlp")
		require.NoError(b, p.Shutdown(context.Background()))
	}
}
