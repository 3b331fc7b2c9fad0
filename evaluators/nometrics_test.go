package evaluators

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/adapter"
)

// Built with Deps.NoMetrics (what the engine does), the tool-call and token
// evaluators give the same results but for Metrics, which is nil; without
// it, Metrics is there.
func TestNoMetricsChangesOnlyMetrics(t *testing.T) {
	failed := call("book_hotel", obj("city", "Paris"))
	failed.Errored, failed.ErrorMessage = true, "span status ERROR"
	made := []adapter.ToolCall{call("search_flights", obj("q", "paris")), call("search_flights", obj("q", "paris")), failed}
	c := caseWith(exps("search_flights", "book_hotel", "pay"), made)
	c.Usage = adapter.Usage{InputTokens: 900, HasInputTokens: true, OutputTokens: 120, HasOutputTokens: true}
	c.ToolDefinitions = []adapter.ToolDefinition{{Name: "search_flights", Parameters: obj("type", "object",
		"properties", obj("q", obj("type", "string")), "required", []any{"q"})}}
	cfgs := []Config{
		{Type: "tool_trajectory"}, {Type: "tool_trajectory", Options: map[string]any{"mode": "strict"}},
		{Type: "tool_trajectory", Options: map[string]any{"mode": "f1"}},
		{Type: "tool_correctness"}, {Type: "tool_call_accuracy"},
		{Type: "tool_call_validity"}, {Type: "tool_error"}, {Type: "tool_efficiency"},
		{Type: "token_usage", Options: map[string]any{"max_total": 1000}},
		{Type: "token_usage", Options: map[string]any{"max_input": 100}},
	}
	for i := range cfgs {
		cfgs[i].Name = cfgs[i].InstanceName() + string(rune('a'+i))
		require.NoError(t, cfgs[i].Validate())
	}
	with, err := Build(cfgs, Deps{})
	require.NoError(t, err)
	without, err := Build(cfgs, Deps{NoMetrics: true})
	require.NoError(t, err)
	for i := range cfgs {
		a := with[i].Evaluate(context.Background(), c)
		b := without[i].Evaluate(context.Background(), c)
		require.True(t, a.Scored(), "%s: %+v", cfgs[i].Type, a)
		require.NotEmpty(t, a.Metrics, cfgs[i].Type)
		require.Nil(t, b.Metrics, cfgs[i].Type)
		a.Metrics = nil
		require.Equal(t, a, b, cfgs[i].Type)
	}
}
