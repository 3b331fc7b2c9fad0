package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// allSpans flattens the chunks' spans.
func allSpans(cs []chunk) []ptrace.Span {
	var out []ptrace.Span
	for _, c := range cs {
		ss := c.spans.ScopeSpans()
		for i := 0; i < ss.Len(); i++ {
			for j := 0; j < ss.At(i).Spans().Len(); j++ {
				out = append(out, ss.At(i).Spans().At(j))
			}
		}
	}
	return out
}

// A passing run is a GenAI semconv agent run the adapter reads as one agent
// case with the three expected calls in order, spread over several chunks
// with the agent span last.
func TestNormalAgentRunIsAGenAIAgentCase(t *testing.T) {
	g := newGenerator(1, 1)
	now := time.Now()
	cs := g.normal(now, 0, 0, 3, 100*time.Millisecond)
	require.Len(t, cs, 3)
	assert.Equal(t, now.Add(200*time.Millisecond), cs[2].due)
	spans := allSpans(cs)
	last := spans[len(spans)-1]
	assert.Equal(t, "invoke_agent travel_agent", last.Name())
	assert.True(t, g.spans[seqOf(last)].agent)
	assert.True(t, g.traces[0].expectPass)

	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, s := range spans {
		s.CopyTo(ss.Spans().AppendEmpty())
	}
	cases, problems := adapter.Adapt(adapter.GroupByTrace(td)[spans[0].TraceID()])
	assert.Empty(t, problems)
	var agents []adapter.Case
	for _, c := range cases {
		if c.Level == adapter.LevelAgent {
			agents = append(agents, c)
		}
	}
	require.Len(t, agents, 1)
	var names []string
	for _, c := range agents[0].ToolCalls {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"search_flights", "book_flight", "book_hotel"}, names)
}

func seqOf(s ptrace.Span) int64 {
	v, _ := s.Attributes().Get(attrSeq)
	return v.Int()
}

// Every hostile kind builds, gives each span a unique seq, and carries what
// makes it hostile.
func TestHostileKinds(t *testing.T) {
	g := newGenerator(1, 0.01)
	seen := map[int64]bool{}
	for _, k := range hostileKinds {
		cs := g.hostile(k, time.Now(), time.Millisecond)
		require.NotEmpty(t, cs, k)
		for _, c := range cs {
			assert.True(t, c.alone, k)
			assert.LessOrEqual(t, c.n, 5000, k)
		}
		for _, s := range allSpans(cs) {
			seq := seqOf(s)
			assert.False(t, seen[seq], "seq %d twice", seq)
			seen[seq] = true
			kind, _ := s.Attributes().Get(attrKind)
			assert.Equal(t, "hostile:"+k, kind.Str())
		}
	}
	assert.Len(t, seen, len(g.spans))

	g = newGenerator(2, 1)
	zero := allSpans(g.hostile("zero_trace_id", time.Now(), 0))
	for _, s := range zero {
		assert.True(t, s.TraceID().IsEmpty())
	}
	dup := allSpans(g.hostile("duplicate_span_id", time.Now(), 0))
	ids := map[pcommon.SpanID]int{}
	for _, s := range dup {
		ids[s.SpanID()]++
	}
	assert.Less(t, len(ids), len(dup), "two spans share an id")
}

// passThrough is a stand-in collector: an OTLP/gRPC receiver that writes a
// result onto each agent span (passed, or failed when fail says so), drops
// the spans drop says, and exports to the sink.
type passThrough struct {
	ptraceotlp.UnimplementedGRPCServer
	sink *sink
	drop func(seq int64) bool
	fail func(seq int64) bool
	mu   sync.Mutex
}

func (p *passThrough) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	td := ptrace.NewTraces()
	req.Traces().CopyTo(td)
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				seq := seqOf(s)
				if p.drop(seq) {
					return true
				}
				if strings.HasPrefix(s.Name(), "invoke_agent") {
					st := "passed"
					if p.fail(seq) {
						st = "failed"
						s.Attributes().PutEmptySlice(annotator.AttrFailed).AppendEmpty().SetStr("t")
					}
					s.Attributes().PutStr(annotator.StatusKey("t"), st)
				}
				return false
			})
			return false
		})
		return false
	})
	p.sink.record(td, time.Now())
	return ptraceotlp.NewExportResponse(), nil
}

// The load's accounting against a stand-in collector that drops one span
// and scores one passing run failed: lost, false failures, duplicates from
// resends and scored counts come out exact.
func TestLoadAccounting(t *testing.T) {
	s, err := newSink("127.0.0.1:0")
	require.NoError(t, err)
	defer s.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	var dropped, failedSeq int64 = -1, -1
	pt := &passThrough{sink: s,
		drop: func(seq int64) bool { return seq == dropped },
		fail: func(seq int64) bool { return seq == failedSeq },
	}
	ptraceotlp.RegisterGRPCServer(srv, pt)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	l := newLoad(loadConfig{endpoint: ln.Addr().String(), rate: 200, duration: 200 * time.Millisecond,
		plainShare: 0.3, failShare: 0, parts: 2, gap: 10 * time.Millisecond, resend: 1, retryFor: time.Second, seed: 3})
	// The first passing run's agent span is scored failed.
	l.gen.normal(time.Now(), 0, 0, 1, 0) // trace 0, consumed only to fix its agent seq
	failedSeq = l.gen.traces[0].agentSeq
	l.gen.traces[0].expectPass = true
	dropped = int64(len(l.gen.spans)) + 2 // a span of the first trace sent
	require.NoError(t, l.run(context.Background()))

	r := account("test", l, s)
	require.Greater(t, r.Traces, 10)
	// Trace 0 was generated but never sent: its spans are not acknowledged.
	assert.Equal(t, r.Spans-countSpans(l, 0), r.SpansAcked)
	assert.Equal(t, 1, r.Lost, "the dropped span")
	assert.Equal(t, 0, r.FalseFail, "trace 0 was never sent")
	assert.Equal(t, r.SpansAcked-1, r.Arrived)
	assert.Equal(t, r.Arrived, r.Duplicated, "every request was resent once")
	assert.Equal(t, int64(2*r.SpansAcked), r.CopiesAcked)
	assert.Zero(t, r.Refused)
	assert.Positive(t, r.Scored)
	assert.Zero(t, r.Unscored)
	assert.Len(t, r.failures(), 1, "only the lost span: %v", r.failures())
}

func countSpans(l *load, trace int32) int {
	n := 0
	for _, s := range l.gen.spans {
		if s.trace == trace {
			n++
		}
	}
	return n
}

// A run designed to pass that arrives with eval.failed is a false failure;
// a bad token count scored passed and results on a tool span that shares
// the agent span's id break promises too.
func TestAccountFlagsBrokenPromises(t *testing.T) {
	g := newGenerator(1, 1)
	g.normal(time.Now(), 0, 0, 1, 0)                               // trace 0: pass
	g.hostile("bad_tokens", time.Now(), 0)                         // traces 1-4
	dup := allSpans(g.hostile("duplicate_span_id", time.Now(), 0)) // trace 5
	l := &load{gen: g}
	for i := range g.spans {
		g.spans[i].acked = true
		g.spans[i].reqSent = time.Now().UnixNano()
	}
	s := newSinkState()
	for i := range g.spans {
		a := &arrival{count: 1, first: time.Now()}
		tr := g.traces[g.spans[i].trace]
		switch {
		case int64(i) == g.traces[0].agentSeq:
			a.failed, a.statuses = true, map[string]string{"tool_trajectory": "failed"}
		case tr.kind == "hostile:bad_tokens" && g.spans[i].agent:
			a.statuses = map[string]string{"token_usage": "passed"}
		}
		s.bySeq[int64(i)] = a
	}
	for _, sp := range dup {
		if strings.HasPrefix(sp.Name(), "execute_tool") {
			s.bySeq[seqOf(sp)].statuses = map[string]string{"tool_error": "passed"}
		}
	}
	delete(s.bySeq, 1) // a chat span of trace 0
	s.bySeq[2].badResource = true
	r := account("x", l, s)
	assert.Equal(t, 1, r.Lost)
	assert.Equal(t, 1, r.FalseFail)
	assert.Equal(t, 4, r.BadPasses)
	assert.Equal(t, 3, r.Misplaced)
	assert.Equal(t, 1, r.BadResource)
	assert.Len(t, r.failures(), 5)
	var buf bytes.Buffer
	table(&buf, []report{r})
	assert.Contains(t, buf.String(), "| x | ")
}

// The sink notes a generated span that arrives under another resource
// than the one it was sent under: an attribute missing, or one changed.
func TestSinkNotesAnotherResource(t *testing.T) {
	s := newSinkState()
	g := newGenerator(1, 1)
	cs := g.normal(time.Now(), 0, 0, 3, 0)
	require.Len(t, cs, 3)
	cs[1].spans.Resource().Attributes().Remove("host.name")
	cs[2].spans.Resource().Attributes().PutStr("service.version", "9")
	for _, c := range cs {
		td := ptrace.NewTraces()
		c.spans.CopyTo(td.ResourceSpans().AppendEmpty())
		s.record(td, time.Now())
	}
	bad := 0
	for _, a := range s.bySeq {
		if a.badResource {
			bad++
		}
	}
	assert.Equal(t, cs[1].n+cs[2].n, bad)
}

func TestSecretFragment(t *testing.T) {
	key := "0123456789abcdef0123456789abcdef"
	assert.Empty(t, secretFragment("the key is [REDACTED]", key))
	assert.Equal(t, "89abcdef", secretFragment("…clipped at 200: 89abcdef", key))
	assert.Empty(t, secretFragment("89abcde", key), "7 bytes are not enough")
}

func TestP99(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i))
	}
	assert.Equal(t, time.Duration(99), p99(ds))
	assert.Equal(t, time.Duration(7), p99([]time.Duration{7}))
	assert.Zero(t, p99(nil))
}

// The sink can be taken down (connections refused) and brought back on the
// same address.
func TestSinkOutage(t *testing.T) {
	s, err := newSink("127.0.0.1:0")
	require.NoError(t, err)
	defer s.close()
	post := func() error {
		body, _ := ptraceotlp.NewExportRequest().MarshalProto()
		resp, err := http.Post("http://"+s.addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, post())
	s.stop()
	require.Error(t, post())
	require.NoError(t, s.start())
	require.NoError(t, post())
	http.DefaultClient.CloseIdleConnections()
}

// A collector that ignores SIGTERM is killed after the grace, and killAll
// ends every child still tracked.
func TestChildProcessesAlwaysEnd(t *testing.T) {
	start := func(script string) *collector {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		// The script's traps are set once it says so.
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)
		track(cmd.Process)
		c := &collector{cmd: cmd, done: make(chan struct{}), stopMonitor: make(chan struct{})}
		go func() { c.exitErr = cmd.Wait(); untrack(cmd.Process); close(c.done) }()
		return c
	}
	stubborn := start(`trap "" TERM; echo ready; while :; do sleep 1; done`)
	assert.False(t, stubborn.stop(200*time.Millisecond), "killed, not exited")
	assert.True(t, stubborn.exited())

	left := start(`echo ready; exec sleep 60`)
	killAll()
	select {
	case <-left.done:
	case <-time.After(10 * time.Second):
		t.Fatal("killAll left a child running")
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, realMain(nil, &out, &errb))
	assert.Equal(t, 2, realMain([]string{"nope"}, &out, &errb))
	assert.Equal(t, 2, realMain([]string{"run", "-hostile-kinds", "nope"}, &out, &errb))
	assert.Contains(t, errb.String(), "unknown hostile kind")
}

// Stream mode's result spans carry the results of the span they are a
// child of: the sink counts them as that span's, and a result span whose
// evaluated span never arrived as foreign.
func TestSinkJoinsResultSpans(t *testing.T) {
	s := newSinkState()
	g := newGenerator(1, 1)
	cs := g.normal(time.Now(), 0, 0, 1, 0)
	td := ptrace.NewTraces()
	cs[0].spans.CopyTo(td.ResourceSpans().AppendEmpty())
	s.record(td, time.Now())
	var agent ptrace.Span
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		if r.Span.ParentSpanID().IsEmpty() {
			agent = r.Span
		}
	})
	require.NotEqual(t, ptrace.Span{}, agent)
	results := ptrace.NewTraces()
	rs := results.ResourceSpans().AppendEmpty()
	newGenerator(0, 1).resource(rs.Resource().Attributes())
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for _, parent := range []pcommon.SpanID{agent.SpanID(), {9, 9, 9, 9, 9, 9, 9, 9}} {
		r := spans.AppendEmpty()
		r.SetTraceID(agent.TraceID())
		r.SetParentSpanID(parent)
		r.SetSpanID(pcommon.SpanID{7, 7, 7, 7, 7, 7, 7, byte(len(parent))})
		r.Attributes().PutBool(adapter.AttrGenerated, true)
		r.Attributes().PutStr(annotator.StatusKey("tool_error"), "failed")
		r.Attributes().PutEmptySlice(annotator.AttrFailed).AppendEmpty().SetStr("tool_error")
	}
	s.record(results, time.Now())
	arr, received, foreign, _, _ := s.snapshot()
	assert.Equal(t, 1, foreign, "the result span of a span that never arrived")
	assert.Equal(t, 2, s.resultSpans())
	assert.Equal(t, td.SpanCount()+2, received)
	seq, _ := agent.Attributes().Get(attrSeq)
	a := arr[seq.Int()]
	assert.Equal(t, map[string]string{"tool_error": "failed"}, a.statuses)
	assert.True(t, a.failed)
	assert.Equal(t, 1, a.count, "a result span is no copy of its evaluated span")
}
