package evalprocessor

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// modePipelines is one eval component of mode in a traces and a logs
// pipeline built by the factory, started, with their sinks; startMode
// runs evs, or tool_error and an LLM-level token_usage.
type modePipelines struct {
	tr    processor.Traces
	lg    processor.Logs
	spans *consumertest.TracesSink
	logs  *consumertest.LogsSink
}

func startMode(t *testing.T, mode string, evs ...evaluators.Config) *modePipelines {
	t.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Wait = 20 * time.Millisecond
	cfg.Mode = mode
	cfg.Evaluators = evs
	if len(evs) == 0 {
		cfg.Evaluators = []evaluators.Config{
			{Type: "tool_error"},
			{Type: "token_usage", Name: "tokens", Case: adapter.LevelLLM, Options: map[string]any{"max_total": 100}},
		}
	}
	require.NoError(t, confmap.Validate(cfg))
	set := processortest.NewNopSettings(Type)
	m := &modePipelines{spans: new(consumertest.TracesSink), logs: new(consumertest.LogsSink)}
	var err error
	m.tr, err = f.CreateTraces(context.Background(), set, cfg, m.spans)
	require.NoError(t, err)
	m.lg, err = f.CreateLogs(context.Background(), set, cfg, m.logs)
	require.NoError(t, err)
	startAll(t, m.tr, m.lg)
	t.Cleanup(func() {
		require.NoError(t, m.tr.Shutdown(context.Background()))
		require.NoError(t, m.lg.Shutdown(context.Background()))
	})
	return m
}

// streamTrace is trace tr in two requests, as an SDK exports a run: the
// LLM call, a tool with an HTTP span under it; then the failed tool and
// the agent span (the root). The LLM span has token counts.
func streamTrace(tr byte) (first, second ptrace.Traces) {
	a := newBatch()
	llm := a.llm(tr, 2, "book me a flight")
	llm.Attributes().PutInt("gen_ai.usage.input_tokens", 40)
	llm.Attributes().PutInt("gen_ai.usage.output_tokens", 90)
	llm.Attributes().PutStr("gen_ai.response.id", "resp-1")
	a.tool(tr, 3, "search_flights", false)
	a.plain(tr, 5, 3)
	b := newBatch()
	b.tool(tr, 4, "book_hotel", true)
	b.agent(tr)
	return a.td, b.td
}

func protoOf(t *testing.T, td ptrace.Traces) []byte {
	t.Helper()
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// In stream mode every span goes on in the call that brought it, as it
// came; once the trace is complete, its results come as result spans and
// records equal to what hold mode writes for the same trace; a span of the
// trace that comes after goes on and brings no second result.
func TestStreamModeForwardsAtOnceAndEmitsHoldModesResults(t *testing.T) {
	hold := startMode(t, engine.ModeHold)
	stream := startMode(t, engine.ModeStream)
	ctx := context.Background()

	// hold mode: the reference
	h1, h2 := streamTrace(1)
	require.NoError(t, hold.tr.ConsumeTraces(ctx, h1))
	require.NoError(t, hold.tr.ConsumeTraces(ctx, h2))
	require.Eventually(t, func() bool { return hold.spans.SpanCount() == 5 && hold.logs.LogRecordCount() == 2 },
		10*time.Second, time.Millisecond)
	held := spansOf(hold.spans, 1)

	s1, s2 := streamTrace(1)
	want1, want2 := protoOf(t, s1), protoOf(t, s2)
	require.NoError(t, stream.tr.ConsumeTraces(ctx, s1))
	require.Equal(t, 3, stream.spans.SpanCount(), "the first request's spans went on in the call")
	require.NoError(t, stream.tr.ConsumeTraces(ctx, s2))
	require.Equal(t, 5, stream.spans.SpanCount(), "the second request's spans went on in the call")
	assert.Equal(t, want1, protoOf(t, stream.spans.AllTraces()[0]), "unchanged")
	assert.Equal(t, want2, protoOf(t, stream.spans.AllTraces()[1]), "unchanged")

	// the results: one result span per evaluated span (the agent span for
	// tool_error, the LLM span for tokens), and the result records
	require.Eventually(t, func() bool { return stream.spans.SpanCount() == 7 && stream.logs.LogRecordCount() == 2 },
		10*time.Second, time.Millisecond)
	results := map[byte]ptrace.Span{}
	var resultRes []pcommon.Resource
	for _, td := range stream.spans.AllTraces()[2:] {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			parent := r.Span.ParentSpanID()
			results[parent[7]] = r.Span
			resultRes = append(resultRes, r.Resource())
		})
	}
	require.Len(t, results, 2)
	for _, res := range resultRes {
		assert.Equal(t, "travel-app", res.Attributes().AsRaw()["service.name"])
	}
	for id, name := range map[byte]string{1: "invoke_agent travel_agent", 2: "chat gpt-4o"} {
		rs, ok := results[id]
		require.True(t, ok, "a result span under span %d", id)
		assert.Equal(t, tid(1), rs.TraceID())
		assert.Equal(t, name, strAttr(rs, annotator.AttrTargetSpanName))
		assert.Equal(t, "true", strAttr(rs, adapter.AttrGenerated))
		assert.Equal(t, "travel_agent", strAttr(rs, "gen_ai.agent.name"))
		assert.Equal(t, evalAttrs(held[id]), evalAttrs(rs), "span %d: the eval.* attributes hold mode writes", id)
		assert.Equal(t, resultEvents(held[id]), resultEvents(rs), "span %d: the result events hold mode writes", id)
	}
	assert.Equal(t, "failed", strAttr(results[1], "eval.tool_error.status"))
	assert.Equal(t, "failed", strAttr(results[2], "eval.tokens.status"))
	assert.Equal(t, recordsOf(hold.logs), recordsOf(stream.logs), "the result records hold mode emits")

	// a span of the scored trace goes on, and the trace is not scored again
	late := newBatch()
	late.plain(1, 9, 1)
	require.NoError(t, stream.tr.ConsumeTraces(ctx, late.td))
	require.Equal(t, 8, stream.spans.SpanCount())
	time.Sleep(200 * time.Millisecond) // 10 × wait: time for a second result, were there one
	assert.Equal(t, 8, stream.spans.SpanCount())
	assert.Equal(t, 2, stream.logs.LogRecordCount())
}

// evalAttrs is a span's eval.* attributes but the §3 inputs.
func evalAttrs(s ptrace.Span) map[string]any {
	out := map[string]any{}
	for k, v := range s.Attributes().AsRaw() {
		if strings.HasPrefix(k, annotator.AttrPrefix) && k != adapter.AttrGenerated && k != annotator.AttrTargetSpanName {
			out[k] = v
		}
	}
	return out
}

// resultEvents is a span's gen_ai.evaluation.result events' attributes.
func resultEvents(s ptrace.Span) []map[string]any {
	var out []map[string]any
	for i := 0; i < s.Events().Len(); i++ {
		if ev := s.Events().At(i); ev.Name() == annotator.EventName {
			out = append(out, ev.Attributes().AsRaw())
		}
	}
	return out
}

// recordsOf is every result record a sink got, without its time: its
// resource, ids and attributes.
func recordsOf(sink *consumertest.LogsSink) []map[string]any {
	var out []map[string]any
	for _, ld := range sink.AllLogs() {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, _ plog.ScopeLogs) {
			out = append(out, map[string]any{"event": lr.EventName(), "trace": lr.TraceID(), "span": lr.SpanID(),
				"resource": rl.Resource().Attributes().AsRaw(), "attributes": lr.Attributes().AsRaw()})
		})
	}
	return out
}

// What stream mode keeps of a GenAI trace: its GenAI spans and root
// whole, every other span by its ids alone; the HTTP spans' attributes
// are not kept, and the trace costs less than half its OTLP size.
func TestStreamModeKeepsOnlyWhatCasesRead(t *testing.T) {
	b := newBatch()
	agentTrace(b, 1, false)
	for i := byte(10); i < 40; i++ {
		s := b.plain(1, i, 3)
		s.Attributes().PutStr("http.url", strings.Repeat("https://api.example/flights?q=paris&", 4))
		s.Attributes().PutStr("http.response.body", strings.Repeat("x", 200))
	}
	b.plain(2, 1, 0) // another trace, not held
	td := b.td
	size := len(protoOf(t, td))
	chunks := keepSpans(td, map[pcommon.TraceID]decision{tid(1): decHoldNew}, 0)
	require.Len(t, chunks, 1)
	c := chunks[0]
	packAll(chunks)
	assert.Equal(t, 35, c.spans, "every span of the trace counts (max_trace_spans)")
	assert.True(t, c.root)
	require.NotNil(t, c.kept)
	assert.Len(t, c.kept.stubs, 31, "the HTTP spans by their ids")

	ht := &heldTrace{id: tid(1)}
	ht.keep(c)
	assert.Less(t, ht.keptBytes(), size/2, "kept %d bytes of a trace of %d", ht.keptBytes(), size)
	require.NoError(t, ht.unpack())
	names := map[string]int{}
	var http ptrace.Span
	for _, r := range ht.spanRefs(nil) {
		names[r.Span.Name()]++
		if r.Span.SpanID() == sid(20) {
			http = r.Span
		}
	}
	assert.Equal(t, map[string]int{"invoke_agent travel_agent": 1, "chat gpt-4o": 1, "execute_tool search_flights": 1,
		"execute_tool book_hotel": 1, "": 31}, names)
	assert.Equal(t, sid(3), http.ParentSpanID())
	assert.Equal(t, 0, http.Attributes().Len(), "nothing of an HTTP span but its ids")
}

// A root span that is no GenAI span keeps its §3 attributes, name and
// times, and its describing attributes (annotator.Describing: a case
// anchored on it reads them), not its content or long values.
func TestStreamModeKeepsTheRootsExpectations(t *testing.T) {
	b := newBatch()
	b.span(1, 9, 0, "POST /chat", map[string]any{"http.request.method": "POST", adapter.AttrExpectedOutput: "done",
		"http.request.body": strings.Repeat("b", 300), "input.value": "hi"})
	b.llm(1, 2, "hi").SetParentSpanID(sid(9))
	ht := &heldTrace{id: tid(1)}
	chunks := keepSpans(b.td, map[pcommon.TraceID]decision{tid(1): decHoldNew}, 0)
	packAll(chunks)
	for _, c := range chunks {
		ht.keep(c)
	}
	require.NoError(t, ht.unpack())
	var root ptrace.Span
	for _, r := range ht.spanRefs(nil) {
		if r.Span.SpanID() == sid(9) {
			root = r.Span
		}
	}
	assert.Equal(t, "POST /chat", root.Name())
	assert.Equal(t, map[string]any{adapter.AttrExpectedOutput: "done", "http.request.method": "POST"}, root.Attributes().AsRaw())
}

func TestStreamModeRejectsSampling(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Evaluators = toolErrorOnly()
	cfg.Mode = engine.ModeStream
	require.NoError(t, confmap.Validate(cfg))
	cfg.Sampling.Passed = 0.1
	err := confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sampling")
	cfg.Sampling = engine.NewDefaultSamplingConfig()
	cfg.Mode = "tail"
	require.ErrorContains(t, confmap.Validate(cfg), `mode: "tail" must be hold or stream`)
}

// Sessions in stream mode: each turn's trace is scored from what was kept,
// its turn recorded, and the conversation scored once idle, on an
// evaluate_session span linked to each turn's agent span.
func TestStreamModeScoresSessions(t *testing.T) {
	h := newSessionHarness(t, func(c *Config) { c.Mode = engine.ModeStream })
	for _, tr := range []byte{1, 2} {
		b := newBatch()
		b.agent(tr).Attributes().PutStr("gen_ai.conversation.id", "conv-a")
		b.llm(tr, 2, "question")
		b.tool(tr, 3, "search_flights", tr == 2)
		h.consume(b.td)
		require.Len(t, spansIn(h.sink, tr), 3, "went on in the call")
		h.clk.advance(2 * time.Second)
		// the trace's result span: tool_error on the agent span
		require.Eventually(t, func() bool { return len(spansIn(h.sink, tr)) == 4 }, 5*time.Second, time.Millisecond)
	}
	h.idleTick(2 * time.Minute)
	h.waitSessionSpans(1)
	s := sessionSpans(h.sink)[0]
	require.Equal(t, 2, s.Links().Len())
	for i, tr := range []byte{1, 2} {
		assert.Equal(t, tid(tr), s.Links().At(i).TraceID())
		assert.Equal(t, sid(1), s.Links().At(i).SpanID(), "the turn's agent span")
	}
	assert.Equal(t, "2", strAttr(s, "eval.session.turns"))
	assert.Equal(t, "failed", strAttr(s, "eval.session_errors.status"))
}

// spansIn is every span the sink got of trace tr.
func spansIn(sink *consumertest.TracesSink, tr byte) []ptrace.Span {
	var out []ptrace.Span
	for _, td := range sink.AllTraces() {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if r.Span.TraceID() == tid(tr) {
				out = append(out, r.Span)
			}
		})
	}
	return out
}

// An evaluator that outruns the deadline in stream mode: the watchdog
// takes the trace over; its spans went on long before, nothing more goes
// out for it (no result finished), and the worker is free for the next.
func TestStreamModeEvaluatorIgnoringDeadline(t *testing.T) {
	s := newStuckScorer(t)
	h := newHarnessWith(t, func(c *Config) { c.Timeout = 10 * time.Millisecond; c.Mode = engine.ModeStream }, nil, nil, func(p *evalProcessor) {
		s.install(p)
		p.pool.grace = 0
	})
	for tr := byte(1); tr <= 2; tr++ {
		b := newBatch()
		agentTrace(b, tr, false)
		h.consume(b.td)
		require.Equal(t, 5*int(tr), h.sink.SpanCount(), "went on in the call")
		h.clk.advance(time.Second)
		<-s.started
		require.Eventually(t, func() bool { return h.counter(metricTracesHeld) == 0 }, 10*time.Second, time.Millisecond)
	}
	assert.Equal(t, int64(10), h.counter(metricSpansUnscored, "reason", "timeout"))
	s.unblock <- struct{}{}
	s.unblock <- struct{}{}
	s.exited.Wait()
	assert.Equal(t, 10, h.sink.SpanCount(), "no result span from the late scorer")
}

// What keepSpans writes straight from the request is the protobuf pdata
// writes of the same spans copied: every field a GenAI span may carry
// (events, links, nested values, trace state, flags, dropped counts,
// schema URLs, scope attributes), and of a root only its kept fields.
func TestStreamKeptProtobufIsPdatas(t *testing.T) {
	b := newBatch()
	root := b.span(1, 9, 0, "POST /chat", map[string]any{"http.request.method": "POST", adapter.AttrExpectedOutput: "done",
		adapter.AttrTasks: []any{"a", "b"}})
	root.Status().SetCode(ptrace.StatusCodeError)
	root.Status().SetMessage("boom")
	llm := b.llm(1, 2, "hi")
	llm.SetParentSpanID(sid(9))
	llm.TraceState().FromRaw("k=v")
	llm.SetFlags(1)
	llm.SetKind(ptrace.SpanKindClient)
	llm.SetDroppedAttributesCount(3)
	require.NoError(t, llm.Attributes().FromRaw(map[string]any{"gen_ai.operation.name": "chat", "n": int64(-5), "f": 0.25, "ok": true,
		"nested": map[string]any{"list": []any{int64(1), "x", map[string]any{"deep": false}}}, "b": []byte{0, 1, 2}}))
	ev := llm.Events().AppendEmpty()
	ev.SetName("gen_ai.choice")
	ev.SetTimestamp(42)
	ev.Attributes().PutStr("gen_ai.system", "openai")
	ev.SetDroppedAttributesCount(1)
	ln := llm.Links().AppendEmpty()
	ln.SetTraceID(tid(7))
	ln.SetSpanID(sid(7))
	ln.TraceState().FromRaw("a=b")
	ln.SetFlags(1)
	ln.Attributes().PutInt("i", 1)
	llm.SetDroppedEventsCount(2)
	llm.SetDroppedLinksCount(4)
	b.resource("other", "scope2")
	rss := b.td.ResourceSpans()
	rss.At(1).SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	ss := rss.At(1).ScopeSpans().At(0)
	ss.SetSchemaUrl("https://example/scope")
	ss.Scope().SetVersion("1.2.3")
	ss.Scope().Attributes().PutStr("lib", "openllmetry")
	b.tool(1, 3, "search", false).SetParentSpanID(sid(2))

	var groups []keptGroup
	k := &spanKeeper{}
	adapter.ForEachSpan(b.td, func(r adapter.SpanRef) { k.add(r, r.Span.SpanID() == sid(9)) })
	groups = k.groups
	require.Len(t, groups, 2)
	a := &keptArena{}
	got := a.spans(groups)
	want, err := tracesMarshaler.MarshalTraces(copyKept(groups))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	td, err := tracesUnmarshaler.UnmarshalTraces(got)
	require.NoError(t, err)
	r := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, map[string]any{adapter.AttrExpectedOutput: "done", adapter.AttrTasks: []any{"a", "b"}, "http.request.method": "POST"}, r.Attributes().AsRaw())
	assert.Equal(t, "boom", r.Status().Message())
	assert.Equal(t, 3, td.SpanCount())
}

// keepLogs writes the GenAI content records of a held trace as pdata
// writes copies of them, by resource and scope, and leaves out the other
// records (of the trace, and of traces not held).
func TestStreamKeptLogsProtobufIsPdatas(t *testing.T) {
	ld := plog.NewLogs()
	for i, svc := range []string{"app", "worker"} {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", svc)
		rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("openai")
		sl.Scope().SetVersion("0.1." + strconv.Itoa(i))
		contentRecords(sl.LogRecords(), tid(1), sid(2))
		other := sl.LogRecords().AppendEmpty() // not a GenAI event
		other.SetTraceID(tid(1))
		other.Body().SetStr("GET /health 200")
		contentRecords(sl.LogRecords(), tid(2), sid(2)) // a trace not held
	}
	chunks := keepLogs(ld, map[pcommon.TraceID]decision{tid(1): decHoldNew}, 0)
	require.Len(t, chunks, 1)
	want := plog.NewLogs()
	for _, rl := range ld.ResourceLogs().All() {
		sl := copyScope(rl.ScopeLogs().At(0), copyResource(rl, want.ResourceLogs().AppendEmpty()).ScopeLogs().AppendEmpty())
		for _, lr := range rl.ScopeLogs().At(0).LogRecords().All() {
			if lr.TraceID() == tid(1) && adapter.IsGenAIEvent(lr) {
				lr.CopyTo(sl.LogRecords().AppendEmpty())
			}
		}
	}
	wantRaw, err := logsMarshaler.MarshalLogs(want)
	require.NoError(t, err)
	assert.Equal(t, wantRaw, chunks[0].kept.raw)
	assert.Equal(t, 6, chunks[0].count)
	packAll(chunks)
	ht := &heldTrace{id: tid(1)}
	ht.keep(chunks[0])
	require.NoError(t, ht.unpack())
	assert.Len(t, ht.records, 6)
}

// In stream mode a request the next consumer refuses keeps nothing: the
// sender resends it, its spans go on once, and its trace is scored once,
// from the resent copy.
func TestStreamModeRefusedRequestKeepsNothing(t *testing.T) {
	next := &refusingFirst{}
	h := newHarness(t, streamMode, next, nil)
	b := newBatch()
	agentTrace(b, 1, true)
	require.ErrorIs(t, h.p.ConsumeTraces(context.Background(), b.td), errQueueFull)
	assert.Zero(t, h.counter(metricTracesHeld), "nothing of the refused request is kept")
	assert.Zero(t, next.SpanCount())

	resent := newBatch()
	agentTrace(resent, 1, true)
	h.consume(resent.td)
	require.Equal(t, 5, next.SpanCount(), "the resent spans went on in the call")
	h.clk.advance(2 * time.Second)
	require.Eventually(t, func() bool { return next.SpanCount() == 6 }, 10*time.Second, time.Millisecond)
	results, others := resultSpansOf(&next.TracesSink)
	assert.Equal(t, 5, others)
	require.Len(t, results[1], 1, "one result span: the trace is scored once")
	assert.Equal(t, "failed", strAttr(results[1][0], "eval.tool_error.status"))
}
