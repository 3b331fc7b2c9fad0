package evalprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// A conversation that goes on long after max_hold scored its trace: its
// spans keep going on as late spans for as long as they keep coming, and
// the trace never gets a second result (docs/contract.md §26, §17), also
// once more time has passed than a released trace id is remembered after
// its last span (wait + timeout + a minute).
func TestStreamModeLongConversationScoredOnce(t *testing.T) {
	for _, mode := range []string{engine.ModeHold, engine.ModeStream} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Mode = mode
				c.Wait = 2 * time.Second
				c.Timeout = time.Second
				c.MaxHold = 10 * time.Second
			}, nil, nil)
			b := newBatch()
			agentTrace(b, 1, true)
			h.consume(b.td)
			results := func() int {
				n := 0
				for _, td := range h.sink.AllTraces() {
					adapter.ForEachSpan(td, func(r adapter.SpanRef) {
						if _, ok := r.Span.Attributes().Get("eval.tool_error.status"); ok {
							n++
						}
					})
				}
				return n
			}
			// A new turn every second for five minutes: max_hold scores
			// the trace after ten, with the turns it has.
			scored := 0
			for i := 0; i < 300; i++ {
				h.clk.advance(time.Second)
				turn := newBatch()
				turn.span(1, 0, 1, "invoke_agent travel_agent", map[string]any{
					"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"}).SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 2, byte(i >> 8), byte(i)})
				h.consume(turn.td)
				if i == 20 {
					require.Eventually(t, func() bool { return results() > 0 }, 10*time.Second, time.Millisecond, "scored at max_hold")
					scored = results()
				}
			}
			h.clk.advance(time.Minute)
			h.clk.advance(time.Minute)
			h.shutdown(t.Context())
			assert.Equal(t, scored, results(), "results for the turns max_hold scored, none for the later ones, however long the trace goes on")
		})
	}
}
