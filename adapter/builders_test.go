package adapter

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// traceBuilder builds the spans of one trace with pdata.
type traceBuilder struct {
	t     testing.TB
	td    ptrace.Traces
	spans ptrace.SpanSlice
	tid   pcommon.TraceID
}

func newTB(t testing.TB) *traceBuilder {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-app")
	ss := rs.ScopeSpans().AppendEmpty()
	return &traceBuilder{t: t, td: td, spans: ss.Spans(), tid: pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
}

func sid(b byte) pcommon.SpanID { return pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, b} }

// span adds a span; parent 0 means root. Times are milliseconds.
func (b *traceBuilder) span(name string, id, parent byte, startMs, endMs int64, attrs map[string]any) ptrace.Span {
	sp := b.spans.AppendEmpty()
	sp.SetName(name)
	sp.SetTraceID(b.tid)
	sp.SetSpanID(sid(id))
	if parent != 0 {
		sp.SetParentSpanID(sid(parent))
	}
	base := int64(1_700_000_000_000)
	sp.SetStartTimestamp(pcommon.Timestamp((base + startMs) * 1e6))
	sp.SetEndTimestamp(pcommon.Timestamp((base + endMs) * 1e6))
	if err := sp.Attributes().FromRaw(attrs); err != nil {
		b.t.Fatalf("attrs of %s: %v", name, err)
	}
	return sp
}

func (b *traceBuilder) event(sp ptrace.Span, name string, attrs map[string]any) {
	ev := sp.Events().AppendEmpty()
	ev.SetName(name)
	if err := ev.Attributes().FromRaw(attrs); err != nil {
		b.t.Fatalf("event %s: %v", name, err)
	}
}

func (b *traceBuilder) refs() []SpanRef { return GroupByTrace(b.td)[b.tid] }

func js(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// --- the travel scenario shared by every convention ---

const (
	sysPrompt   = "You are a travel agent."
	userAsk     = "Book me a flight from NYC to Paris on May 3 and a hotel for 5 nights."
	finalAnswer = "Booked flight AF7 on May 3 and Hotel Lumiere for 5 nights (confirmation HX123)."
	flightsRes  = `{"flights":[{"id":"AF7","price":540}]}`
	hotelRes    = `{"confirmation":"HX123"}`
)

var (
	flightArgs   = map[string]any{"from": "NYC", "to": "PAR", "date": "2025-05-03"}
	hotelArgs    = map[string]any{"city": "Paris", "nights": float64(5)}
	flightSchema = map[string]any{"type": "object", "properties": map[string]any{
		"from": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"}, "date": map[string]any{"type": "string"}},
		"required": []any{"from", "to", "date"}}
	hotelSchema = map[string]any{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string"}, "nights": map[string]any{"type": "integer"}},
		"required": []any{"city", "nights"}}
	hotelDoc = map[string]any{"id": "h1", "content": "Hotel Lumiere, Paris, 4 stars", "score": 0.92}
)

const (
	flightDesc = "Search flights between two airports"
	hotelDesc  = "Book a hotel room"
)

// wantTravel is what every convention's agent case must carry.
func checkTravelAgent(t *testing.T, c Case, withIDs bool) {
	t.Helper()
	if c.Level != LevelAgent {
		t.Fatalf("level %q", c.Level)
	}
	if c.Input != userAsk {
		t.Errorf("input = %q", c.Input)
	}
	if c.Output != finalAnswer {
		t.Errorf("output = %q", c.Output)
	}
	if len(c.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", c.ToolCalls)
	}
	want := []struct {
		name, id, result string
		args             map[string]any
	}{{"search_flights", "call_1", flightsRes, flightArgs}, {"book_hotel", "call_2", hotelRes, hotelArgs}}
	for i, w := range want {
		got := c.ToolCalls[i]
		if got.Name != w.name {
			t.Errorf("call %d name %q", i, got.Name)
		}
		if !jsonEqual(got.Arguments, w.args) {
			t.Errorf("call %d args %v want %v (raw %q)", i, got.Arguments, w.args, got.RawArguments)
		}
		if got.Result != w.result || !got.HasResult {
			t.Errorf("call %d result %q (has %v)", i, got.Result, got.HasResult)
		}
		if withIDs && got.ID != w.id {
			t.Errorf("call %d id %q", i, got.ID)
		}
	}
	if len(c.ToolDefinitions) != 2 {
		t.Fatalf("tool definitions = %+v", c.ToolDefinitions)
	}
	defs := map[string]ToolDefinition{}
	for _, d := range c.ToolDefinitions {
		defs[d.Name] = d
	}
	if d := defs["search_flights"]; d.Description != flightDesc || !jsonEqual(d.Parameters, flightSchema) {
		t.Errorf("search_flights def %+v", d)
	}
	if d := defs["book_hotel"]; d.Description != hotelDesc || !jsonEqual(d.Parameters, hotelSchema) {
		t.Errorf("book_hotel def %+v", d)
	}
}

// jsonEqual compares two values by their JSON encoding (numbers by value).
func jsonEqual(a, b any) bool {
	var x, y any
	if json.Unmarshal([]byte(js(a)), &x) != nil || json.Unmarshal([]byte(js(b)), &y) != nil {
		return false
	}
	return js(x) == js(y)
}
