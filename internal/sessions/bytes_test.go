package sessions

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
)

// typicalTurn is an agent turn as instrumentations report it: a question,
// an answer, two tool calls with JSON arguments and a result.
func typicalTurn(i int) *adapter.Case {
	return &adapter.Case{
		Level: adapter.LevelAgent, TraceID: pcommon.TraceID{byte(i), byte(i >> 8), 1}, SpanID: pcommon.SpanID{byte(i), byte(i >> 8)},
		ServiceName: "travel", ConversationID: fmt.Sprintf("conv-%d", i%50), AgentName: "travel_agent", Model: "gpt-4o",
		Input:  strings.Repeat("I need a flight from SFO to Lisbon on June 12, then a hotel. ", 4),
		Output: strings.Repeat("Booked TP236 departing 18:05, and the Hotel Avenida for five nights. ", 8),
		ToolCalls: []adapter.ToolCall{
			{Name: "search_flights", ID: "call_1", RawArguments: `{"origin":"SFO","destination":"LIS","date":"2026-06-12"}`,
				Result: strings.Repeat(`{"flight":"TP236","price":612},`, 12), HasResult: true},
			{Name: "book_flight", ID: "call_2", RawArguments: `{"flight_id":"TP236"}`, Result: `{"status":"ok","pnr":"X7K2QZ"}`, HasResult: true},
		},
	}
}

// worstTurn has every field far beyond every bound: 200 tool calls whose
// arguments, results and errors are 20 KB each, 1 KB names.
func worstTurn(i int) *adapter.Case {
	big := strings.Repeat("x", 20<<10)
	c := typicalTurn(i)
	c.Input, c.Output, c.AgentName = big, big, strings.Repeat("a", 1024)
	c.ToolCalls = make([]adapter.ToolCall, 200)
	for k := range c.ToolCalls {
		c.ToolCalls[k] = adapter.ToolCall{Name: strings.Repeat("n", 1024), ID: strings.Repeat("i", 1024),
			RawArguments: `{"q":"` + big + `"}`, Result: big, ErrorMessage: big, Errored: true, HasResult: true}
	}
	return c
}

// heldPerTurn records n turns and returns the heap they hold, per turn.
func heldPerTurn(cfg Config, fieldLimit, n int, mk func(int) *adapter.Case) float64 {
	cases := make([]*adapter.Case, n)
	for i := range cases {
		cases[i] = mk(i)
	}
	r := pcommon.NewResource()
	r.Attributes().PutStr("service.name", "travel")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := NewStore(cfg, fieldLimit)
	for _, c := range cases {
		st.Record(t0, c, t0, r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(st)
	runtime.KeepAlive(cases)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

func bigConfig() Config {
	cfg := NewDefaultConfig()
	cfg.MaxTurns = 1000
	return cfg
}

// The bytes a turn holds in the store: typical, and the worst case that
// max_turn_bytes bounds (without it, a turn could hold 128 tool calls of
// three 8 KB texts each: about 3.2 MB).
func TestTurnBytesAreBounded(t *testing.T) {
	typical := heldPerTurn(bigConfig(), 0, 200, typicalTurn)
	worst := heldPerTurn(bigConfig(), 0, 20, worstTurn)
	unbounded := bigConfig()
	unbounded.MaxTurnBytes = 1 << 30
	before := heldPerTurn(unbounded, 0, 5, worstTurn)
	t.Logf("bytes per turn: typical %.0f, worst case %.0f (max_turn_bytes %d), worst case without the turn budget %.0f",
		typical, worst, DefaultMaxTurnBytes, before)
	assert.Less(t, typical, 4096.0)
	// The budget, plus 128 names and ids of 256 bytes, plus the records.
	assert.Less(t, worst, float64(DefaultMaxTurnBytes+128*512+128*300))
	assert.Greater(t, before, 3e6, "the field and call bounds alone allow ~3.2 MB")
}

// BenchmarkTurnBytes reports the bytes a turn holds (B/turn) and the cost
// of recording it.
func BenchmarkTurnBytes(b *testing.B) {
	for _, tc := range []struct {
		name string
		mk   func(int) *adapter.Case
		n    int
	}{{"typical", typicalTurn, 200}, {"worst", worstTurn, 20}} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for range b.N {
				per = heldPerTurn(bigConfig(), 0, tc.n, tc.mk)
			}
			b.ReportMetric(per, "B/turn")
		})
	}
}
