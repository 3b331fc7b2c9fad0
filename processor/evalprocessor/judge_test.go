package evalprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// withJudge configures a judge on srv and an llm_judge that runs only on
// agents named slow_agent, next to tool_error on every agent.
// heldJudge is a judge that answers content once release is closed.
func heldJudge(t *testing.T, content string) (*judgetest.Server, chan struct{}) {
	release := make(chan struct{})
	return judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-release
		return judgetest.Reply{Content: content}
	}), release
}

func withJudge(srv *judgetest.Server) func(*Config) {
	return func(c *Config) {
		jc := judge.NewDefaultConfig()
		jc.Endpoint = srv.Endpoint()
		jc.Model = "judge"
		jc.MaxConcurrency = 2
		c.Judges = map[string]judge.Config{"default": jc}
		c.Evaluators = []evaluators.Config{
			{Type: "tool_error"},
			{Type: "llm_judge", Name: "helpful", Judge: "default",
				When:    []string{`attributes["gen_ai.agent.name"] == "slow_agent"`},
				Options: map[string]any{"criteria": "Is the answer helpful?"}},
		}
	}
}

func slowAgentTrace(b *batch, tr byte) {
	agentTrace(b, tr, false)
	// Rename the agent so that the judge evaluator selects it.
	spans := b.td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		if s := spans.At(i); s.TraceID() == tid(tr) && s.Name() == "invoke_agent travel_agent" {
			s.Attributes().PutStr("gen_ai.agent.name", "slow_agent")
		}
	}
}

// A trace waiting for a judge does not hold up a trace that needs none, even
// with a single worker.
func TestJudgedTraceDoesNotBlockOthers(t *testing.T) {
	srv, release := heldJudge(t, `{"score": 0.9, "reason": "fine"}`)
	h := newHarness(t, func(c *Config) { withJudge(srv)(c); c.Workers = 1 }, nil, nil)

	b := newBatch()
	slowAgentTrace(b, 1)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 5*time.Second, time.Millisecond)

	b = newBatch()
	agentTrace(b, 2, true)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5) // trace 2 is out while trace 1 still waits for its judge
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 2)[1], "eval.tool_error.status"))
	assert.Empty(t, spansOf(h.sink, 1))

	close(release)
	h.waitSpans(10)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 1)[1], "eval.helpful.status"))
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
	_, judged := spansOf(h.sink, 2)[1].Attributes().Get("eval.helpful.status")
	assert.False(t, judged, "the `when` condition keeps the judge off travel_agent")
}

// A judge that answers after the trace's timeout: the trace goes on with
// `timeout`, and the answer follows as a span linked to the agent span.
func TestLateJudgeResultIsForwarded(t *testing.T) {
	srv, release := heldJudge(t, `{"score": 0.2, "reason": "unhelpful"}`)
	h := newHarness(t, func(c *Config) { withJudge(srv)(c); c.Timeout = 50 * time.Millisecond }, nil, nil)
	b := newBatch()
	slowAgentTrace(b, 1)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5)
	agentSpan := spansOf(h.sink, 1)[1]
	assert.Equal(t, "timeout", strAttr(agentSpan, "eval.helpful.status"))
	assert.Equal(t, "passed", strAttr(agentSpan, "eval.tool_error.status"))

	close(release)
	h.waitSpans(6)
	var late ptrace.Span
	for _, td := range h.sink.AllTraces() {
		rs := td.ResourceSpans()
		for i := 0; i < rs.Len(); i++ {
			if rs.At(i).ScopeSpans().At(0).Scope().Name() == engine.LateScopeName {
				late = rs.At(i).ScopeSpans().At(0).Spans().At(0)
			}
		}
	}
	require.NotEqual(t, ptrace.Span{}, late, "no late-result span")
	assert.Equal(t, agentSpan.SpanID(), late.ParentSpanID())
	assert.Equal(t, agentSpan.SpanID(), late.Links().At(0).SpanID())
	assert.Equal(t, "failed", strAttr(late, "eval.helpful.status"))
	assert.Equal(t, int64(1), h.counter(metricLateResults))
}

// Shutdown with a trace still waiting for its judge forwards the trace (the
// judge's evaluation marked timeout) and leaves no goroutine behind (goleak).
func TestShutdownWithPendingJudge(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-block
		return judgetest.Reply{Content: `{"score": 1}`}
	})
	h := newHarness(t, withJudge(srv), nil, nil)
	b := newBatch()
	slowAgentTrace(b, 1)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	h.shutdown(ctx)
	assert.Equal(t, 5, h.sink.SpanCount(), "nothing dropped")
	assert.Equal(t, "timeout", strAttr(spansOf(h.sink, 1)[1], "eval.helpful.status"))
}

// With eval in two traces pipelines, a late judge result goes through the
// pipeline its evaluated span went (contract §17), not the first one.
func TestLateJudgeResultGoesWhereItsSpanWent(t *testing.T) {
	srv, release := heldJudge(t, `{"score": 0.2, "reason": "unhelpful"}`)
	other := new(consumertest.TracesSink)
	var second route
	h := newHarnessWith(t, func(c *Config) { withJudge(srv)(c); c.Timeout = 50 * time.Millisecond }, nil, nil,
		func(p *evalProcessor) {
			p.routes.traces = []consumer.Traces{p.next}
			var err error
			second, err = p.routes.addTraces(other)
			require.NoError(t, err)
		})
	b := newBatch()
	slowAgentTrace(b, 1)
	require.NoError(t, h.p.consumeTraces(context.Background(), b.td, second))
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return other.SpanCount() == 5 }, 10*time.Second, time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return other.SpanCount() == 6 }, 10*time.Second, time.Millisecond,
		"the late-result span follows its trace")
	assert.Zero(t, h.sink.SpanCount(), "nothing through the first pipeline")
}
