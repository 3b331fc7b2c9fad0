package evalprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// A trace whose judge is still out keeps the span references its results
// are written through, while the same worker scores other traces: with a
// sample_rate most traces finish on the worker, and the worker reuses its
// reference list for the next one. Once it lent that list to a trace that
// went on waiting for its judge, the next trace overwrote (and cleared) it,
// and the judge's answer built its result records from cleared references
// (issue 34: a nil pointer dereference in refOf from judgeJob.done).
func TestJudgedTraceKeepsItsSpansWhileTheWorkerGoesOn(t *testing.T) {
	srv, release := heldJudge(t, `{"score": 0.9, "reason": "fine"}`)
	logs := new(consumertest.LogsSink)
	h := startHarness(t, func(c *Config) { withJudge(srv)(c); c.Workers = 1 }, nil, nil, logs)

	score := func(tr byte, judged bool, spans int) {
		t.Helper()
		b := newBatch()
		if judged {
			slowAgentTrace(b, tr)
		} else {
			agentTrace(b, tr, true)
		}
		h.consume(b.td)
		h.clk.advance(time.Second)
		if spans > 0 {
			h.waitSpans(spans)
		}
	}
	score(1, false, 5) // finishes on the worker: its list is kept for reuse
	score(2, true, 0)  // goes on waiting for the judge with that list
	require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 5*time.Second, time.Millisecond)
	score(3, false, 10) // scored on the same worker while trace 2 waits

	close(release)
	h.waitSpans(15)
	agent2 := spansOf(h.sink, 2)[1]
	assert.Equal(t, "passed", strAttr(agent2, "eval.helpful.status"))
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 3)[1], "eval.tool_error.status"))
	_, onOther := spansOf(h.sink, 3)[1].Attributes().Get("eval.helpful.status")
	assert.False(t, onOther, "trace 2's judge result landed on trace 3's agent span")

	// Trace 2's result records refer to trace 2's agent span.
	require.Eventually(t, func() bool { return judgedRecords(logs.AllLogs()) > 0 }, 5*time.Second, time.Millisecond)
	for _, ld := range logs.AllLogs() {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			lrs := rls.At(i).ScopeLogs().At(0).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if name, _ := lr.Attributes().Get("gen_ai.evaluation.name"); name.Str() == "helpful" {
					assert.Equal(t, tid(2), lr.TraceID())
					assert.Equal(t, agent2.SpanID(), lr.SpanID())
				}
			}
		}
	}
}

func judgedRecords(lds []plog.Logs) int {
	n := 0
	for _, ld := range lds {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			sls := rls.At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					if name, _ := lrs.At(k).Attributes().Get("gen_ai.evaluation.name"); name.Str() == "helpful" {
						n++
					}
				}
			}
		}
	}
	return n
}
