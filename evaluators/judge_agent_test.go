package evaluators

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

func agentCase() *adapter.Case {
	c := qa("Book a flight to Paris for 2 people on May 3 and a hotel for 5 nights", "Booked flight AF12 and Hotel Lumiere.")
	c.ToolCalls = []adapter.ToolCall{
		{Name: "search_flights", Arguments: map[string]any{"to": "Paris", "date": "May 3"}, HasResult: true, Result: `[{"id":"AF12"}]`},
		{Name: "search_flights", Arguments: map[string]any{"to": "Paris", "date": "May 3"}, HasResult: true, Result: `[{"id":"AF12"}]`},
		{Name: "book_flight", Arguments: map[string]any{"id": "AF12", "passengers": 2}, Errored: true, ErrorMessage: "timeout"},
		{Name: "book_hotel", Arguments: map[string]any{"nights": 5}, HasResult: true, Result: `{"ok":true}`},
	}
	c.Messages = []adapter.Message{
		{Role: "user", Content: "I'm vegetarian and I live in Berlin."},
		{Role: "assistant", Content: "Noted."},
		{Role: "user", Content: c.Input},
	}
	return c
}

func TestJudgeAgentFormulas(t *testing.T) {
	steps := func(oks ...bool) string {
		var parts []string
		for i, ok := range oks {
			parts = append(parts, `{"step":`+string(rune('1'+i))+`,"ok":`+map[bool]string{true: "true", false: `false,"reason":"invented"`}[ok]+`}`)
		}
		return `{"steps":[` + strings.Join(parts, ",") + `]}`
	}
	for _, tc := range []struct {
		typ    string
		opts   map[string]any
		edit   func(*adapter.Case)
		reply  string
		score  float64
		metric string
		mval   float64
		reason string
	}{
		{"tool_argument_hallucination", nil, nil, steps(true, true, false, true), 0.75, "grounded", 3, "step 3 book_flight (invented)"},
		{"tool_argument_accuracy", map[string]any{"max_calls": 2}, nil, steps(true, false), 0.5, "judged", 2, "the first 2 of 4 judged"},
		{"tool_call_necessity", nil, nil, steps(true, false, true, true), 0.75, "necessary", 3, "step 2 search_flights"},
		{"step_faithfulness", nil, nil, steps(true, true, true, true), 1, "faithful", 4, "4 of 4 calls faithful"},
		{"plan_quality", nil, nil, `{"completeness":5,"logical_order":5,"efficiency":3}`, (1 + 1 + 0.5) / 3, "efficiency", 3, "efficiency 3/5"},
		// 4 steps: step 2 redundant, step 3 errored and not recovered: 2/4 - 0.2
		{"trajectory_efficiency", nil, nil, `{"redundant_steps":[2],"unrecovered_errors":[3,4]}`, 0.3, "unrecovered_errors", 1, "2 of 4 steps useful"},
		{"task_completion", nil, func(c *adapter.Case) {
			c.Expected.Tasks, c.Expected.HasTasks = []string{"book flight", "book hotel"}, true
		}, `{"tasks":[{"task":1,"completed":false},{"task":2,"completed":true}]}`, 0.5, "tasks_completed", 1, `not completed: "book flight"`},
		{"task_completion", map[string]any{"tasks": []any{"a", "b"}, "constraints": "under 500 EUR"}, nil,
			`{"tasks":[{"task":1,"completed":true},{"task":2,"completed":true}],"constraints_honoured":false}`, 0, "constraints_honoured", 0, "constraints violated"},
		{"task_completion", nil, nil, `{"accomplished":true,"complete":false,"grounded":true,"failed_or_errored":false}`, 2.0 / 3, "complete", 0, "not complete"},
		{"task_completion", nil, nil, `{"accomplished":true,"complete":true,"grounded":true,"failed_or_errored":true}`, 0, "failed_or_errored", 1, "failed or errored"},
		{"agent_memory", map[string]any{"context": []any{"vegetarian", "lives in Berlin", "likes jazz"}}, nil,
			`{"facts":[{"fact":1,"verdict":"used"},{"fact":2,"verdict":"ignored"},{"fact":3,"verdict":"not_relevant"}]}`, 0.5, "relevant", 2, `ignored "lives in Berlin"`},
		// conversation: user, assistant, user, assistant(output) -> assistant turns 2 and 4
		{"knowledge_retention", nil, nil, `{"turns":[{"turn":2,"ok":true},{"turn":4,"ok":false,"reason":"asked the city again"}]}`, 0.5, "retaining", 1, "turn 4 (asked the city again)"},
		{"turn_relevancy", nil, nil, `{"turns":[{"turn":2,"ok":true},{"turn":4,"ok":true}]}`, 1, "turns", 2, "2 of 2"},
		{"conversation_completeness", map[string]any{"goal": "travel booked"}, nil,
			`{"intentions":[{"intention":"travel booked","satisfied":true},{"intention":"vegetarian meal","satisfied":false},{"intention":"hotel","satisfied":true}]}`,
			2.0 / 3, "goal_satisfied", 1, `unsatisfied: "vegetarian meal"`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			c := agentCase()
			if tc.edit != nil {
				tc.edit(c)
			}
			r, srv := runJudgeEval(t, tc.typ, tc.opts, c, always(tc.reply))
			expectJudged(t, r, srv, tc.score, tc.metric, tc.mval, tc.reason)
		})
	}
}

func TestJudgeAgentEdgeCases(t *testing.T) {
	noCalls := qa("hello", "hi")
	for _, tc := range []struct {
		typ    string
		c      *adapter.Case
		status Status
		reason string
	}{
		{"tool_call_necessity", &adapter.Case{Level: adapter.LevelAgent}, StatusPassed, "no tool calls"},
		{"tool_argument_hallucination", noCalls, StatusPassed, "no tool calls"},
		{"tool_argument_accuracy", noCalls, StatusPassed, "no tool calls"},
		{"step_faithfulness", noCalls, StatusSkipped, "no steps"},
		{"trajectory_efficiency", noCalls, StatusSkipped, "no steps"},
		{"plan_quality", noCalls, StatusSkipped, "no plan"},
		{"agent_memory", noCalls, StatusSkipped, "eval.context"},
		{"task_completion", &adapter.Case{Level: adapter.LevelAgent, Output: "x"}, StatusSkipped, "no tasks"},
		{"knowledge_retention", noCalls, StatusPassed, ""},
		{"turn_relevancy", &adapter.Case{Level: adapter.LevelAgent, Output: "x"}, StatusSkipped, "user turn"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			r, srv := runJudgeEval(t, tc.typ, nil, tc.c, always(`{"turns":[{"turn":2,"ok":true}]}`))
			expectStatus(t, r, tc.status, tc.reason)
			if tc.status != StatusPassed || tc.typ == "knowledge_retention" {
				return
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d judge calls for a case that needs none", n)
			}
		})
	}
	// a missing per-step verdict is an error
	r, _ := runJudgeEval(t, "tool_call_necessity", nil, agentCase(), always(`{"steps":[{"step":1,"ok":true}]}`))
	expectStatus(t, r, StatusError, "no verdict for step 2 of 4")
	// options are per type
	cfg := Config{Type: "plan_quality", Judge: "default", Options: map[string]any{"max_calls": 3}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "max_calls") {
		t.Errorf("err = %v", err)
	}
}
