package evaluators

import (
	"context"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/adapter"
)

// benchCase is a realistic agent run: 4 tool calls with arguments, three
// tool definitions with schemas, an expectation, documents, output, usage.
func benchCase() *adapter.Case {
	hotelSchema := map[string]any{"type": "object", "properties": map[string]any{
		"city":   map[string]any{"type": "string", "description": "city"},
		"nights": map[string]any{"type": "integer", "description": "nights"},
	}, "required": []any{"city", "nights"}}
	return &adapter.Case{
		Level:  adapter.LevelAgent,
		Output: `{"flight": "AF006", "hotel": {"city": "Paris", "nights": 5}}`,
		ToolCalls: []adapter.ToolCall{
			{Name: "search_flights", Arguments: obj("origin", "JFK", "destination", "CDG", "passengers", 2.0), HasResult: true, Result: `{"flights": ["AF006"]}`},
			{Name: "search_flights", Arguments: obj("origin", "JFK", "destination", "CDG", "passengers", 2.0), HasResult: true, Result: `{"flights": ["AF006"]}`},
			{Name: "book_hotel", Arguments: obj("city", "Paris", "nights", 5.0), HasResult: true, Result: `{"error": "sold out"}`},
			{Name: "book_hotel", Arguments: obj("city", "Paris", "nights", 5.0), HasResult: true, Result: `{"booking": "H1"}`},
		},
		ToolDefinitions: []adapter.ToolDefinition{
			{Name: "search_flights", Description: "Search flights", Parameters: flightSchema},
			{Name: "book_hotel", Description: "Book a hotel", Parameters: hotelSchema},
			{Name: "get_weather_via_api", Description: "Weather", Parameters: closedSchema},
		},
		Documents: []adapter.Document{{ID: "doc_1", Content: "Paris hotels"}, {ID: "doc_2", Content: "Flights"}},
		Usage:     adapter.Usage{InputTokens: 1200, OutputTokens: 300, HasInputTokens: true, HasOutputTokens: true},
		Expected: adapter.Expectations{
			ToolCalls:    []adapter.ExpectedCall{exp("search_flights", obj("origin", "JFK", "destination", "CDG")), exp("book_hotel", obj("city", "paris", "nights", 5))},
			HasToolCalls: true,
			Output:       map[string]any{"flight": "AF006", "hotel": map[string]any{"city": "Paris", "nights": 5.0}},
			HasOutput:    true,
			Documents:    []any{"doc_1"}, HasDocuments: true,
		},
		Latency: 1500e6,
	}
}

func BenchmarkEvaluators(b *testing.B) {
	args := obj("mode", "subset", "case_insensitive", true)
	cfgs := []Config{
		{Type: "tool_call_validity"},
		{Type: "tool_correctness", Options: obj("mode", "names_and_args", "arguments", args)},
		{Type: "tool_trajectory", Options: obj("arguments", args)},
		{Type: "tool_trajectory", Name: "traj_f1", Options: obj("mode", "f1", "arguments", args)},
		{Type: "tool_call_accuracy"},
		{Type: "tool_error"},
		{Type: "tool_efficiency"},
		{Type: "tool_name_reliability"},
		{Type: "tool_description_reliability"},
		{Type: "structural_match"},
		{Type: "retrieval_precision", Options: obj("field", "id")},
		{Type: "retrieval_recall", Options: obj("field", "id")},
		{Type: "latency", Options: obj("max", "2s")},
		{Type: "token_usage", Options: obj("max_total", 2000)},
	}
	insts, err := Build(cfgs, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	c := benchCase()
	ctx := context.Background()
	for _, in := range insts {
		if r := in.Evaluate(ctx, c); r.Status == StatusError || r.Status == StatusSkipped {
			b.Fatalf("%s: %s %s", in.Name, r.Status, r.Reason)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, in := range insts {
			in.Evaluate(ctx, c)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
}

// BenchmarkCELvsBuiltin runs a CEL evaluator and the built-in evaluator it
// is equivalent to on the same case, so their ratio comes from one run.
// CEL pays for building the `case` view (maps of every field) per
// evaluation; the expression itself is compiled once.
func BenchmarkCELvsBuiltin(b *testing.B) {
	pairs := []struct {
		name          string
		builtin, expr Config
	}{
		{"token_usage",
			Config{Type: "token_usage", Options: obj("max_total", 2000)},
			Config{Type: "cel", Options: obj("expression", `case.usage.total_tokens <= 2000`)}},
		{"tool_error",
			Config{Type: "tool_error", Options: obj("treat_blank_as_error", false, "detect_json_error_field", false)},
			Config{Type: "cel", Options: obj("expression",
				`case.tool_calls.size() == 0 ? 1.0 : double(case.tool_calls.filter(t, !t.errored).size()) / double(case.tool_calls.size())`)}},
	}
	c := benchCase()
	c.ToolCalls[2].Errored = true
	ctx := context.Background()
	for _, p := range pairs {
		insts, err := Build([]Config{p.builtin, p.expr}, Deps{})
		if err != nil {
			b.Fatal(err)
		}
		want := insts[0].Evaluate(ctx, c)
		if got := insts[1].Evaluate(ctx, c); got.Score != want.Score || got.Status != want.Status {
			b.Fatalf("%s: cel %v %s, built-in %v %s", p.name, got.Score, got.Reason, want.Score, want.Reason)
		}
		// Interleaved, so a load change on a shared machine hits both sides.
		b.Run(p.name, func(b *testing.B) {
			var builtin, expr time.Duration
			for b.Loop() {
				t0 := time.Now()
				insts[0].Evaluate(ctx, c)
				t1 := time.Now()
				insts[1].Evaluate(ctx, c)
				expr += time.Since(t1)
				builtin += t1.Sub(t0)
			}
			n := float64(b.N)
			b.ReportMetric(float64(builtin.Nanoseconds())/n, "builtin-ns/op")
			b.ReportMetric(float64(expr.Nanoseconds())/n, "cel-ns/op")
			b.ReportMetric(float64(expr)/float64(builtin), "cel/builtin")
		})
	}
}
