package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// benchTurn is a realistic chat turn n: an agent span with the
// conversation id, three LLM calls that each repeat the whole history so
// far (as the OpenAI instrumentations do), and two tool calls.
func benchTurn(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "chat")
	rs.Resource().Attributes().PutStr("telemetry.sdk.name", "opentelemetry")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("opentelemetry.instrumentation.openai_v2")
	tid := pcommon.TraceID{byte(n), byte(n >> 8), 7}
	sentence := "The traveller wants a quiet hotel near the old town with a view of the river and breakfast included. "
	var history []string
	for k := 0; k < n; k++ {
		history = append(history, fmt.Sprintf(`{"role":"user","parts":[{"type":"text","content":%q}]}`, fmt.Sprint(k)+strings.Repeat(sentence, 2)),
			fmt.Sprintf(`{"role":"assistant","parts":[{"type":"text","content":%q}]}`, strings.Repeat(sentence, 3)))
	}
	add := func(id byte, name string, attrs map[string]any) {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{id, byte(n)})
		if id != 1 {
			sp.SetParentSpanID(pcommon.SpanID{1, byte(n)})
		}
		sp.SetName(name)
		sp.SetStartTimestamp(pcommon.Timestamp(int64(n)*1e12 + int64(id)))
		sp.SetEndTimestamp(pcommon.Timestamp(int64(n)*1e12 + 1e9))
		_ = sp.Attributes().FromRaw(attrs)
	}
	add(1, "invoke_agent travel", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel",
		"gen_ai.conversation.id": "conv-bench"})
	for i := byte(0); i < 3; i++ {
		msgs := append(append([]string(nil), history...), fmt.Sprintf(`{"role":"user","parts":[{"type":"text","content":%q}]}`, "now: "+sentence))
		add(2+i, "chat gpt-4o", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 120,
			"gen_ai.input.messages":  "[" + strings.Join(msgs, ",") + "]",
			"gen_ai.output.messages": fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"text","content":%q}]}]`, strings.Repeat(sentence, 3))})
	}
	for i := byte(0); i < 2; i++ {
		add(5+i, "execute_tool search_hotels", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_hotels",
			"gen_ai.tool.call.arguments": `{"city":"Porto","nights":3,"near":"Ribeira"}`,
			"gen_ai.tool.call.result":    `{"hotels":[` + strings.Repeat(`{"name":"Casa do Rio","stars":4,"price":180},`, 8) + `{}]}`})
	}
	return td
}

func refsOf(td ptrace.Traces) []adapter.SpanRef {
	var refs []adapter.SpanRef
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { refs = append(refs, r) })
	return refs
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSessionTurnBytes: the heap a session store holds per turn
// against the OTLP (protobuf) bytes of that turn's spans, for turns 1..20
// of a conversation whose LLM calls repeat the history.
func BenchmarkSessionTurnBytes(b *testing.B) {
	const turns = 20
	var otlp int
	var cases []adapter.Case
	for n := 1; n <= turns; n++ {
		td := benchTurn(n)
		otlp += (&ptrace.ProtoMarshaler{}).TracesSize(td)
		cs, _ := adapter.AdaptWith(refsOf(td), adapter.Options{AgentCases: true})
		for _, c := range cs {
			if c.Level == adapter.LevelAgent {
				cases = append(cases, c)
			}
		}
	}
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "chat")
	const copies = 500 // sessions of 20 turns each
	var held float64
	for i := 0; i < b.N; i++ {
		store := sessions.NewStore(sessions.Config{Idle: time.Minute, MaxSessions: copies, MaxTurns: 100}, 8192)
		before := heapInUse()
		for s := 0; s < copies; s++ {
			for k := range cases {
				c := cases[k]
				c.ConversationID = fmt.Sprintf("conv-%d", s)
				store.Record(time.Unix(0, 0), &c, time.Unix(int64(k), 0), res)
			}
		}
		held = float64(heapInUse()-before) / float64(copies*len(cases))
		runtime.KeepAlive(store)
	}
	b.ReportMetric(held, "held_B/turn")
	b.ReportMetric(float64(otlp)/turns, "otlp_B/turn")
	b.ReportMetric(held/(float64(otlp)/turns), "held/otlp")
}

// BenchmarkSessionRecordVsScore: recording a turn (what the processor adds
// to each trace it scores) against scoring that turn's trace with two
// deterministic trace evaluators, and against scoring a 20-turn session with
// two deterministic session evaluators, all in the same run.
func BenchmarkSessionRecordVsScore(b *testing.B) {
	e := newEngine(b, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error"}, map[string]any{"type": "tool_efficiency"},
		map[string]any{"type": "tool_error", "name": "s_errors", "case": "session"},
		map[string]any{"type": "tool_efficiency", "name": "s_loops", "case": "session"},
	}})
	defer func() { _ = e.Shutdown(context.Background()) }()
	store := sessions.NewStore(sessions.Config{Idle: time.Minute, MaxSessions: 10, MaxTurns: 100}, 8192)
	var record, score, session time.Duration
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		t := time.Now()
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
		record += time.Since(t)
	})
	src := benchTurn(10)
	var sn *sessions.Snapshot
	for n := 1; n <= 20; n++ {
		e.ScoreTrace(context.Background(), refsOf(benchTurn(n)))
	}
	if snaps := store.Drain(); len(snaps) == 1 {
		sn = &snaps[0]
	} else {
		b.Fatal("no session")
	}
	record = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		td := ptrace.NewTraces()
		src.CopyTo(td) // the spans are written on: a fresh copy each time
		refs := refsOf(td)
		b.StartTimer()
		t := time.Now()
		e.ScoreTrace(context.Background(), refs) // includes the record
		score += time.Since(t)
		t = time.Now()
		e.ScoreSessionAsync(context.Background(), sn, nil, func(SessionReport) {})
		session += time.Since(t)
	}
	n := float64(b.N)
	b.ReportMetric(float64(record.Nanoseconds())/n, "record_ns/turn")
	b.ReportMetric(float64((score-record).Nanoseconds())/n, "score_ns/trace")
	b.ReportMetric(float64(session.Nanoseconds())/n, "score_ns/session20")
	b.ReportMetric(float64(record)/float64(score-record), "record/score")
}
