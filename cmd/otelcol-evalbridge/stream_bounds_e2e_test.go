package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// Stream mode's bounds black-box (docs/contract.md §26, §17): the real
// collector, the Go SDK exporting each span as it ends, and an OTLP backend
// reached with no queue in between, so a span is at the backend when its
// export returns. What is asserted is order and presence, never how long
// anything took.

// streamConfig is testdata/stream-bounds.yaml for these settings, and
// the URL of the collector's own metrics.
func streamConfig(t *testing.T, otlp, backend, mode, wait, maxHold, maxTraceSpans string) (config, metrics string) {
	prom := testkit.FreeAddr(t)
	return testkit.Config(t, "testdata/stream-bounds.yaml", map[string]string{
		"OTLP": otlp, "Backend": backend, "Mode": mode,
		"Wait": wait, "MaxHold": maxHold, "MaxTraceSpans": maxTraceSpans,
		"PromPort": prom[strings.LastIndex(prom, ":")+1:],
	}), "http://" + prom + "/metrics"
}

// conversation is one long agent conversation in one trace: a root request
// span that stays open, and under it one turn after another (an
// invoke_agent span with a chat and a tool span), each turn's spans
// exported as they end, children first.
type conversation struct {
	t     *testing.T
	be    *testkit.Sink
	tr    trace.Tracer
	ctx   context.Context
	root  trace.Span
	turns []pcommon.SpanID // the turns' agent spans, in order
	names map[pcommon.SpanID]string
}

func startConversation(t *testing.T, be *testkit.Sink, tr trace.Tracer) *conversation {
	ctx, root := tr.Start(context.Background(), "POST /chat", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "POST")))
	return &conversation{t: t, be: be, tr: tr, ctx: ctx, root: root, names: map[pcommon.SpanID]string{}}
}

func (c *conversation) traceID() pcommon.TraceID {
	return pcommon.TraceID(c.root.SpanContext().TraceID())
}

// turn sends turn i's three spans (its tool failed when failTool); after
// each, check runs with the span just exported.
func (c *conversation) turn(i int, failTool bool, check func(pcommon.SpanID, string)) {
	name := fmt.Sprintf("invoke_agent travel_agent turn %d", i)
	ctx, agent := c.tr.Start(c.ctx, name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "travel_agent")))
	tool := "search_flights"
	_, chat := c.tr.Start(ctx, fmt.Sprintf("chat gpt-4o turn %d", i), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "gpt-4o"),
			attribute.String("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"turn %d: fly me to Lisbon"}]}]`, i)),
			attribute.String("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%d","name":%q,"arguments":{}}]}]`, i, tool))))
	c.end(chat, check)
	_, ts := c.tr.Start(ctx, fmt.Sprintf("execute_tool %s turn %d", tool, i), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", tool),
		attribute.String("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)),
		attribute.String("gen_ai.tool.call.result", `{"status":"ok"}`)))
	if failTool {
		ts.SetStatus(codes.Error, "upstream down")
	}
	c.end(ts, check)
	c.end(agent, check)
	id := pcommon.SpanID(agent.SpanContext().SpanID())
	c.turns = append(c.turns, id)
	c.names[id] = name
}

// end ends s (the SDK exports it before End returns) and checks it.
func (c *conversation) end(s trace.Span, check func(pcommon.SpanID, string)) {
	s.End()
	ro, _ := s.(interface{ Name() string })
	name := ""
	if ro != nil {
		name = ro.Name()
	}
	check(pcommon.SpanID(s.SpanContext().SpanID()), name)
}

// spanAt is the backend's copies of span id of trace tid.
func spanAt(be *testkit.Sink, tid pcommon.TraceID, id pcommon.SpanID) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range be.Spans() {
		if s.TraceID() == tid && s.SpanID() == id {
			out = append(out, s)
		}
	}
	return out
}

// resultSpansOf is the backend's result spans of trace tid.
func resultSpansOf(be *testkit.Sink, tid pcommon.TraceID) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range be.Spans() {
		if s.TraceID() == tid && generated(s) {
			out = append(out, s)
		}
	}
	return out
}

// passedOn asserts span id is at the backend once, as it was sent (no
// eval.* attribute: stream mode writes nothing onto it).
func passedOn(t *testing.T, be *testkit.Sink, tid pcommon.TraceID, id pcommon.SpanID, name string) {
	t.Helper()
	got := spanAt(be, tid, id)
	if len(got) != 1 {
		t.Fatalf("span %q is %d times at the backend when its export returned, want once", name, len(got))
	}
	got[0].Attributes().Range(func(k string, _ pcommon.Value) bool {
		if strings.HasPrefix(k, "eval.") {
			t.Errorf("span %q went on with %s: stream mode must forward it unchanged", name, k)
		}
		return true
	})
}

// TestStreamModeBoundsLongConversation: a conversation whose turns keep
// coming after its trace was scored, by max_hold and by max_trace_spans.
// Every span is at the backend when its export returns, the ones before
// scoring with no result span of the trace yet; the trace is scored once,
// with one result span per turn seen (a child of its agent span, same
// trace, eval.generated, eval.target.span_name) and one result record per
// result; the turns after it go on unchanged and bring no second result,
// not even when shutdown flushes what is kept.
func TestStreamModeBoundsLongConversation(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		wait, maxHold, maxTraceSpans string
		trigger                      string
	}{
		// max_hold: the first three turns (9 spans) are sent at once, well
		// within 3s; the trace is scored 3s after its first span while
		// the root stays open, however long spans keep coming.
		{name: "max_hold", wait: "1h", maxHold: "3s", maxTraceSpans: "100000", trigger: "max_hold"},
		// max_trace_spans: the 9th span seen (turn 3's agent span) scores
		// the trace at once, with that span.
		{name: "max_trace_spans", wait: "1h", maxHold: "1h", maxTraceSpans: "9", trigger: "the 9th span"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := testkit.NewSink(t)
			grpcAddr := freeAddr(t)
			var c *conversation
			t.Run("run", func(t *testing.T) { // the collector stops when this ends
				config, metrics := streamConfig(t, grpcAddr, be.URL, "stream", tc.wait, tc.maxHold, tc.maxTraceSpans)
				startCollector(t, config)
				tp := newSDK(t, grpcAddr, "concierge")
				defer func() { _ = tp.Shutdown(context.Background()) }()
				c = startConversation(t, be, tp.Tracer("stream-bounds"))
				tid := c.traceID()

				// Before scoring: each span at the backend, no result yet.
				sent := 0
				before := func(id pcommon.SpanID, name string) {
					sent++
					passedOn(t, be, tid, id, name)
					if tc.name == "max_trace_spans" && sent == 9 {
						return // this one triggers scoring
					}
					if n := len(resultSpansOf(be, tid)); n > 0 {
						t.Fatalf("span %d (%q) is at the backend after %d result spans of its trace: scored before %s", sent, name, n, tc.trigger)
					}
				}
				for i := 1; i <= 3; i++ {
					c.turn(i, i == 2, before)
				}
				waitFor(t, 30*time.Second, "result spans at "+tc.trigger, func() bool { return len(resultSpansOf(be, tid)) >= 3 })

				// After scoring: more turns, then the root; each goes on
				// unchanged.
				after := func(id pcommon.SpanID, name string) { passedOn(t, be, tid, id, name) }
				for i := 4; i <= 5; i++ {
					c.turn(i, false, after)
				}
				c.end(c.root, after)

				// The bound is counted once, and the seven spans after it
				// as late (docs/contract.md §17).
				m := testkit.Scrape(t, metrics)
				if n := m.Total("otelcol_processor_eval_traces_released_early", map[string]string{"reason": tc.name}); n != 1 {
					t.Errorf("otelcol_processor_eval_traces_released_early{reason=%q} = %v, want 1", tc.name, n)
				}
				if n := m.Total("otelcol_processor_eval_spans_late", nil); n != 7 {
					t.Errorf("otelcol_processor_eval_spans_late = %v, want 7 (turns 4 and 5, the root)", n)
				}
			})
			if c == nil || t.Failed() {
				return
			}
			// The collector has shut down: whatever it still kept was
			// scored and sent.
			tid := c.traceID()
			checkOneResultPerTurn(t, be, tid, c.turns[:3], c.turns[3:], c.names)
			originals := 0
			for _, s := range be.Spans() {
				if s.TraceID() == tid && !generated(s) {
					originals++
				}
			}
			if originals != 16 {
				t.Errorf("the backend has %d of the conversation's 16 spans", originals)
			}
		})
	}
}

// checkOneResultPerTurn: each of scored has exactly one result span and one
// result record per evaluator; none of unscored has any; turn 2 (its tool
// failed) failed tool_error.
func checkOneResultPerTurn(t *testing.T, be *testkit.Sink, tid pcommon.TraceID, scored, unscored []pcommon.SpanID, names map[pcommon.SpanID]string) {
	t.Helper()
	byParent := map[pcommon.SpanID][]ptrace.Span{}
	for _, r := range resultSpansOf(be, tid) {
		byParent[r.ParentSpanID()] = append(byParent[r.ParentSpanID()], r)
	}
	records := map[pcommon.SpanID][]string{}
	for _, ld := range be.Logs() {
		testkit.ForEachLogRecord(ld, func(lr plog.LogRecord) {
			if n, ok := lr.Attributes().Get("gen_ai.evaluation.name"); ok && lr.TraceID() == tid {
				records[lr.SpanID()] = append(records[lr.SpanID()], n.Str())
			}
		})
	}
	wantRecords := []string{"booking_flow", "tool_efficiency", "tool_error"}
	for i, id := range scored {
		rs := byParent[id]
		if len(rs) != 1 {
			t.Errorf("%q has %d result spans, want one", names[id], len(rs))
			continue
		}
		r := rs[0]
		attrs := r.Attributes()
		if n, _ := attrs.Get("eval.target.span_name"); n.Str() != names[id] || r.Name() != "evaluation" {
			t.Errorf("result span %q of %q names %q", r.Name(), names[id], n.Str())
		}
		want := "passed"
		if i == 1 {
			want = "failed"
		}
		if st, _ := attrs.Get("eval.tool_error.status"); st.Str() != want {
			t.Errorf("%q: tool_error %q, want %q", names[id], st.Str(), want)
		}
		got := records[id]
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(wantRecords, ",") {
			t.Errorf("%q has result records %v, want one each of %v", names[id], got, wantRecords)
		}
	}
	for _, id := range unscored {
		if len(byParent[id]) > 0 || len(records[id]) > 0 {
			t.Errorf("%q came after its trace was scored and got %d result spans and records %v: a second result", names[id], len(byParent[id]), records[id])
		}
	}
	for parent, rs := range byParent {
		if _, ok := names[parent]; !ok {
			t.Errorf("%d result spans under span %s, which is no turn's agent span", len(rs), parent)
		}
	}
}

// TestStreamModeOutOfOrderTrace: one agent run whose spans arrive in
// separate requests, children before parents and out of their start order
// (book_flight and an HTTP call under it first, search_flights later under
// an HTTP span of the agent's, the agent span last). Stream mode scores it as one agent case anchored on the
// agent span, with the tool calls in the order they were made, and its
// results equal hold mode's for the same trace (docs/contract.md §26).
func TestStreamModeOutOfOrderTrace(t *testing.T) {
	results := map[string]map[string]string{}
	for _, mode := range []string{"hold", "stream"} {
		t.Run(mode, func(t *testing.T) {
			be := testkit.NewSink(t)
			grpcAddr := freeAddr(t)
			var tid pcommon.TraceID
			var agentID pcommon.SpanID
			ids := map[pcommon.SpanID]string{}
			t.Run("run", func(t *testing.T) {
				config, _ := streamConfig(t, grpcAddr, be.URL, mode, "2s", "1h", "100000")
				startCollector(t, config)
				tp := newSDK(t, grpcAddr, "concierge")
				defer func() { _ = tp.Shutdown(context.Background()) }()
				tr := tp.Tracer("out-of-order")
				t0 := time.Now().Add(-time.Minute)
				at := func(ms int) trace.SpanStartEventOption {
					return trace.WithTimestamp(t0.Add(time.Duration(ms) * time.Millisecond))
				}
				end := func(s trace.Span, ms int) {
					s.End(trace.WithTimestamp(t0.Add(time.Duration(ms) * time.Millisecond)))
					id := pcommon.SpanID(s.SpanContext().SpanID())
					ids[id] = s.(interface{ Name() string }).Name()
					if mode == "stream" {
						passedOn(t, be, tid, id, ids[id])
					}
				}
				ctx, agent := tr.Start(context.Background(), "invoke_agent travel_agent", at(0), trace.WithAttributes(
					attribute.String("gen_ai.operation.name", "invoke_agent"),
					attribute.String("gen_ai.agent.name", "travel_agent")))
				tid, agentID = pcommon.TraceID(agent.SpanContext().TraceID()), pcommon.SpanID(agent.SpanContext().SpanID())
				chat := func(i, from int, output string) trace.Span {
					_, s := tr.Start(ctx, fmt.Sprintf("chat gpt-4o %d", i), at(from), trace.WithSpanKind(trace.SpanKindClient),
						trace.WithAttributes(
							attribute.String("gen_ai.operation.name", "chat"),
							attribute.String("gen_ai.request.model", "gpt-4o"),
							attribute.String("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Fly me from SFO to Lisbon"}]}]`),
							attribute.String("gen_ai.output.messages", output)))
					return s
				}
				tool := func(parent context.Context, name string, i, from int) (context.Context, trace.Span) {
					return tr.Start(parent, "execute_tool "+name, at(from), trace.WithAttributes(
						attribute.String("gen_ai.operation.name", "execute_tool"),
						attribute.String("gen_ai.tool.name", name),
						attribute.String("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)),
						attribute.String("gen_ai.tool.call.result", `{"status":"ok"}`)))
				}
				call := func(i int, name string) string {
					return fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%d","name":%q,"arguments":{}}]}]`, i, name)
				}
				chat0 := chat(0, 2, call(0, "search_flights"))
				// search_flights runs in a tool server: under an HTTP
				// span of the agent's, which stream mode keeps as ids only.
				mwCtx, mw := tr.Start(ctx, "POST /tools", at(9), trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(attribute.String("http.request.method", "POST")))
				_, search := tool(mwCtx, "search_flights", 0, 10)
				chat1 := chat(1, 22, call(1, "book_flight"))
				bookCtx, book := tool(ctx, "book_flight", 1, 30)
				_, http := tr.Start(bookCtx, "POST /bookings", at(31), trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(attribute.String("http.request.method", "POST")))
				chat2 := chat(2, 50, `[{"role":"assistant","parts":[{"type":"text","content":"Booked."}]}]`)
				book.SetStatus(codes.Error, "payment declined")

				end(http, 39) // a grandchild first
				end(book, 40)
				end(chat2, 60)
				end(search, 20)
				end(mw, 21) // after its child
				end(chat1, 28)
				end(chat0, 8)
				if mode == "stream" && len(resultSpansOf(be, tid)) > 0 {
					t.Fatal("the trace was scored before its agent span came")
				}
				end(agent, 70)
				if mode == "stream" {
					waitFor(t, 30*time.Second, "the result span", func() bool { return len(resultSpansOf(be, tid)) > 0 })
				} else {
					waitFor(t, 30*time.Second, "the scored trace", func() bool { return len(spanAt(be, tid, agentID)) > 0 })
				}
			})
			if t.Failed() {
				return
			}
			// The collector has shut down.
			for id, name := range ids {
				if n := len(spanAt(be, tid, id)); n != 1 {
					t.Errorf("%q is %d times at the backend, want once", name, n)
				}
			}
			scored := spanAt(be, tid, agentID)[0]
			if mode == "stream" {
				rs := resultSpansOf(be, tid)
				if len(rs) != 1 || rs[0].ParentSpanID() != agentID {
					var parents []string
					for _, r := range rs {
						parents = append(parents, ids[r.ParentSpanID()])
					}
					t.Fatalf("result spans under %q, want one under the agent span", parents)
				}
				scored = rs[0]
			}
			got := map[string]string{}
			scored.Attributes().Range(func(k string, v pcommon.Value) bool {
				if strings.HasPrefix(k, "eval.") && k != "eval.generated" && k != "eval.target.span_name" {
					got[k] = v.AsString()
				}
				return true
			})
			for k, want := range map[string]string{
				"eval.booking_flow.status": "passed", // in start order, not arrival order
				"eval.tool_error.status":   "failed",
				"eval.tool_error.score":    "0.5",
			} {
				if got[k] != want {
					t.Errorf("%s = %q, want %q (results %v)", k, got[k], want, got)
				}
			}
			t.Logf("%s: %v", mode, got)
			results[mode] = got
		})
	}
	if h, s := results["hold"], results["stream"]; h != nil && s != nil && fmt.Sprint(h) != fmt.Sprint(s) {
		t.Errorf("stream mode's results differ from hold mode's for the same trace:\nhold   %v\nstream %v", h, s)
	}
}
