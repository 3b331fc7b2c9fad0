package adapter

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// logRec builds a content log record of the span id (0: none). With
// inField the event name goes into the eventName field (Python SDK >= 1.35
// Logs API), else into the `event.name` attribute (older Python, JS).
func logRec(ls plog.LogRecordSlice, tid pcommon.TraceID, span byte, name string, inField bool, body any, attrs map[string]any) plog.LogRecord {
	lr := ls.AppendEmpty()
	lr.SetTraceID(tid)
	if span != 0 {
		lr.SetSpanID(sid(span))
	}
	if inField {
		lr.SetEventName(name)
	} else {
		lr.Attributes().PutStr("event.name", name)
	}
	if attrs != nil {
		for k, v := range attrs {
			_ = lr.Attributes().PutEmpty(k).FromRaw(v)
		}
	}
	switch b := body.(type) {
	case nil:
	case string:
		lr.Body().SetStr(b)
	default:
		_ = lr.Body().FromRaw(b)
	}
	return lr
}

func recordsOf(ld plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) { out = append(out, lr) })
	return out
}

// A Python opentelemetry-instrumentation-openai-v2 chat span (no content on
// the span) and the records its default mode writes: per-message events
// with map bodies, the choice with tool_calls beside `message` (the spec's
// shape), the tool result with `id`, then a JSON-string body.
func TestJoinEventsPerMessageRecords(t *testing.T) {
	for _, inField := range []bool{false, true} {
		b := newTB(t)
		b.span("invoke_agent travel", 1, 0, 0, 100, attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"})
		b.span("chat gpt-4o", 2, 1, 1, 10, attrs{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"})
		b.span("chat gpt-4o", 3, 1, 20, 30, attrs{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"})
		b.span("execute_tool search_flights", 4, 1, 11, 19, attrs{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights", "gen_ai.tool.call.id": "call_1"})
		ld := plog.NewLogs()
		ls := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		tc := []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search_flights", "arguments": js(flightArgs)}}}
		logRec(ls, b.tid, 2, "gen_ai.system.message", inField, map[string]any{"content": sysPrompt}, attrs{"gen_ai.system": "openai"})
		logRec(ls, b.tid, 2, "gen_ai.user.message", inField, map[string]any{"content": userAsk}, nil)
		logRec(ls, b.tid, 2, "gen_ai.choice", inField, map[string]any{"index": int64(0), "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant"}, "tool_calls": tc}, nil)
		logRec(ls, b.tid, 3, "gen_ai.user.message", inField, map[string]any{"content": userAsk}, nil)
		logRec(ls, b.tid, 3, "gen_ai.assistant.message", inField, map[string]any{"tool_calls": tc}, nil)
		logRec(ls, b.tid, 3, "gen_ai.tool.message", inField, map[string]any{"id": "call_1", "content": flightsRes}, nil)
		// a JSON-string body, and the tool_calls nested in message
		logRec(ls, b.tid, 3, "gen_ai.choice", inField, js(map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": finalAnswer}}), nil)
		// not a GenAI event: ignored
		logRec(ls, b.tid, 3, "http.request", inField, "GET /", nil)

		spans := b.refs()
		recs := recordsOf(ld)
		// a client resent the whole request: the records twice
		if n := JoinEvents(spans, append(recs, recs...)); n != 0 {
			t.Fatalf("unjoined = %d", n)
		}
		cases, problems := Adapt(spans)
		if len(problems) != 0 {
			t.Fatalf("problems %q", problems)
		}
		var llm1, agent *Case
		for i := range cases {
			c := &cases[i]
			if c.Level == LevelAgent {
				agent = c
			} else if c.SpanID == sid(2) {
				llm1 = c
			}
		}
		if llm1 == nil || agent == nil {
			t.Fatalf("cases %+v", cases)
		}
		if llm1.Input != userAsk || llm1.SystemInstructions != sysPrompt {
			t.Errorf("inField=%v llm1 input %q system %q", inField, llm1.Input, llm1.SystemInstructions)
		}
		if len(llm1.ToolCalls) != 1 || llm1.ToolCalls[0].Name != "search_flights" || llm1.ToolCalls[0].ID != "call_1" {
			t.Errorf("inField=%v llm1 calls %+v", inField, llm1.ToolCalls)
		}
		if agent.Input != userAsk || agent.Output != finalAnswer {
			t.Errorf("inField=%v agent input %q output %q", inField, agent.Input, agent.Output)
		}
		var toolMsg *Message
		for i := range agent.Messages {
			if agent.Messages[i].Role == "tool" {
				toolMsg = &agent.Messages[i]
			}
		}
		if toolMsg == nil || toolMsg.ToolCallID != "call_1" || toolMsg.Content != flightsRes {
			t.Errorf("inField=%v tool message %+v", inField, toolMsg)
		}
		if len(agent.Messages) != 4 {
			t.Errorf("inField=%v: %d messages, want 4 (user, assistant call, tool, answer): resent records repeated", inField, len(agent.Messages))
		}
	}
}

// The latest-experimental mode writes gen_ai.client.inference.operation.details
// with the content in attributes; the JS Responses API splits one call into
// an input record and an output record. What the span has wins.
func TestJoinEventsOperationDetails(t *testing.T) {
	b := newTB(t)
	b.span("chat gpt-4o", 1, 0, 0, 10, attrs{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
	b.span("chat gpt-4o", 2, 0, 20, 30, attrs{"gen_ai.operation.name": "chat",
		"gen_ai.output.messages": js([]any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": "from the span"}}}})})
	ld := plog.NewLogs()
	ls := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	in := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": userAsk}}}}
	out := []any{map[string]any{"role": "assistant", "finish_reason": "stop", "parts": []any{map[string]any{"type": "text", "content": finalAnswer}}}}
	sys := []any{map[string]any{"type": "text", "content": sysPrompt}}
	defs := []any{map[string]any{"type": "function", "name": "search_flights", "parameters": flightSchema}}
	// span 1: structured values, input and output in two records
	logRec(ls, b.tid, 1, eventOperationDetails, true, nil, attrs{"gen_ai.input.messages": in, "gen_ai.system_instructions": sys, "gen_ai.tool.definitions": defs})
	logRec(ls, b.tid, 1, eventOperationDetails, true, nil, attrs{"gen_ai.output.messages": out})
	// span 2: JSON strings; its own output wins over the record's
	logRec(ls, b.tid, 2, eventOperationDetails, true, nil, attrs{"gen_ai.input.messages": js(in), "gen_ai.output.messages": js(out)})

	spans := b.refs()
	if n := JoinEvents(spans, recordsOf(ld)); n != 0 {
		t.Fatalf("unjoined = %d", n)
	}
	cases, problems := AdaptWith(spans, Options{LLMCases: true})
	if len(problems) != 0 {
		t.Fatalf("problems %q", problems)
	}
	if len(cases) != 2 {
		t.Fatalf("%d cases", len(cases))
	}
	c1, c2 := cases[0], cases[1]
	if c1.Input != userAsk || c1.Output != finalAnswer || c1.SystemInstructions != sysPrompt {
		t.Errorf("span 1: input %q output %q system %q", c1.Input, c1.Output, c1.SystemInstructions)
	}
	if len(c1.ToolDefinitions) != 1 || c1.ToolDefinitions[0].Name != "search_flights" || c1.ToolDefinitions[0].Parameters == nil {
		t.Errorf("span 1: definitions %+v", c1.ToolDefinitions)
	}
	if c2.Input != userAsk || c2.Output != "from the span" {
		t.Errorf("span 2: input %q output %q (the span's output wins)", c2.Input, c2.Output)
	}
}

// A record without a span id has only its trace: it belongs to the trace's
// LLM span when there is exactly one; otherwise it is counted as unjoined.
func TestJoinEventsWithoutSpanID(t *testing.T) {
	b := newTB(t)
	b.span("chat gpt-4o", 1, 0, 0, 10, attrs{"gen_ai.operation.name": "chat"})
	ld := plog.NewLogs()
	ls := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	logRec(ls, b.tid, 0, "gen_ai.user.message", true, map[string]any{"content": userAsk}, nil)
	logRec(ls, b.tid, 9, "gen_ai.user.message", true, map[string]any{"content": "other span"}, nil)
	spans := b.refs()
	if n := JoinEvents(spans, recordsOf(ld)); n != 1 {
		t.Fatalf("unjoined = %d, want 1 (the record of an unknown span)", n)
	}
	cases, _ := Adapt(spans)
	if len(cases) == 0 || cases[0].Input != userAsk {
		t.Fatalf("cases %+v", cases)
	}
	b.span("chat gpt-4o", 2, 0, 20, 30, attrs{"gen_ai.operation.name": "chat"})
	if n := JoinEvents(b.refs(), recordsOf(ld)); n != 2 {
		t.Fatalf("unjoined = %d, want 2 (two LLM spans: the trace-only record is ambiguous)", n)
	}
}

func TestEventName(t *testing.T) {
	lr := plog.NewLogRecord()
	if eventName(lr) != "" || IsGenAIEvent(lr) {
		t.Fatal("empty record")
	}
	lr.Attributes().PutStr("event.name", "gen_ai.choice")
	if eventName(lr) != "gen_ai.choice" || !IsGenAIEvent(lr) {
		t.Fatal("attribute")
	}
	lr.SetEventName("gen_ai.user.message")
	if eventName(lr) != "gen_ai.user.message" {
		t.Fatal("the field wins")
	}
	lr.SetEventName("gen_ai.evaluation.result")
	if IsGenAIEvent(lr) {
		t.Fatal("results are not content events")
	}
}

// BenchmarkJoinEventsOneSpan joins n content records that all name one
// span (a long conversation logged on one chat call): linear in n.
func BenchmarkJoinEventsOneSpan(b *testing.B) {
	for _, n := range []int{2000, 4000, 8000, 16000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			ss := rs.ScopeSpans().AppendEmpty()
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{1})
			sp.Attributes().PutStr("gen_ai.operation.name", "chat")
			ld := plog.NewLogs()
			lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
			for i := 0; i < n; i++ {
				lr := lrs.AppendEmpty()
				lr.SetTraceID(pcommon.TraceID{1})
				lr.SetSpanID(pcommon.SpanID{1})
				lr.SetEventName(eventUserMessage)
				lr.SetTimestamp(1_700_000_000_000_000_000)
				lr.Body().SetEmptyMap().PutStr("content", "message "+strconv.Itoa(i)+" of a long conversation")
			}
			records := make([]plog.LogRecord, n)
			for i := range records {
				records[i] = lrs.At(i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				spans := []SpanRef{{Span: sp, ResourceSpans: rs, ScopeSpans: ss}}
				if JoinEvents(spans, records) != 0 || len(spans[0].Events) != n {
					b.Fatal("not joined")
				}
			}
		})
	}
}
