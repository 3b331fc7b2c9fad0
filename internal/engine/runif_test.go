package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// bookingFlow is examples/evalctl.yaml's check: it passes on
// travel-agent-semconv.json and fails on travel-agent-wrong-order.json.
var bookingFlow = map[string]any{"type": "tool_trajectory", "name": "booking_flow", "mode": "in_order",
	"arguments": map[string]any{"mode": "subset", "case_insensitive": true}}

// The cascade: the judge runs only on the trace whose deterministic check
// failed; on the other it is skipped with the reason "run_if".
func TestRunIfCascade(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{"score": 0.2, "reason": "booked before searching"}`))
	e := newEngine(t, judgeYAML(srv.Endpoint(), 2, bookingFlow,
		map[string]any{"type": "llm_judge", "name": "explain", "judge": "default", "criteria": "Did the agent book correctly?",
			"run_if": `results.booking_flow.status == "failed" && case.agent_name != ""`},
		// A second judge of the case on the pool at the same time, reading
		// the same results (run with -race).
		map[string]any{"type": "llm_judge", "name": "explain_again", "judge": "default", "criteria": "Again?",
			"run_if": `results.booking_flow.status == "failed"`}))
	started(t, e)

	good := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	assert.Equal(t, evaluators.StatusPassed, good["booking_flow"].Status)
	assert.Equal(t, evaluators.StatusSkipped, good["explain"].Status)
	assert.Equal(t, "run_if", good["explain"].Reason)
	assert.Empty(t, srv.Requests(), "no judge call behind a passing check")

	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	bad := results(e.ScoreTrace(context.Background(), spans))
	assert.Equal(t, evaluators.StatusFailed, bad["booking_flow"].Status)
	assert.Equal(t, evaluators.StatusFailed, bad["explain"].Status, bad["explain"].Reason)
	assert.Equal(t, evaluators.StatusFailed, bad["explain_again"].Status, bad["explain_again"].Reason)
	assert.Len(t, srv.Requests(), 2)
	// The skip is a result like the others (§4), on the span.
	attrs := findSpan(loadTraceAnnotated(t, e, semconvTrace), "invoke_agent travel_agent").Attributes().AsRaw()
	assert.Equal(t, "skipped", attrs["eval.explain.status"])
	assert.Equal(t, "run_if", attrs["eval.explain.reason"])
}

func loadTraceAnnotated(t *testing.T, e *Engine, path string) []adapter.SpanRef {
	spans := loadTrace(t, path)
	e.ScoreTrace(context.Background(), spans)
	return spans
}

// Behind a judge, a deterministic check and another judge wait for its
// answer, whatever the pool's order: they see its result.
func TestRunIfBehindAJudgeWaits(t *testing.T) {
	srv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		if strings.Contains(r.System(), "first criterion") {
			return judgetest.Reply{Delay: 100 * time.Millisecond, Content: `{"score": 0.1, "reason": "bad"}`}
		}
		return judgetest.Reply{Content: `{"score": 1, "reason": "fine"}`}
	})
	e := newEngine(t, judgeYAML(srv.Endpoint(), 4,
		map[string]any{"type": "llm_judge", "name": "first", "judge": "default", "criteria": "first criterion"},
		map[string]any{"type": "cel", "name": "after_first", "expression": "true", "run_if": `results.first.passed == false`},
		map[string]any{"type": "llm_judge", "name": "second", "judge": "default", "criteria": "second criterion",
			"run_if": `has(results.after_first.score) && results.first.score < 0.5`},
		map[string]any{"type": "cel", "name": "not_after_pass", "expression": "true", "run_if": `results.first.passed`},
	))
	started(t, e)
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	assert.Equal(t, evaluators.StatusFailed, got["first"].Status)
	assert.Equal(t, evaluators.StatusPassed, got["after_first"].Status)
	assert.Equal(t, evaluators.StatusPassed, got["second"].Status)
	assert.Equal(t, evaluators.StatusSkipped, got["not_after_pass"].Status)
	assert.Equal(t, "run_if", got["not_after_pass"].Reason)
	assert.Len(t, srv.Requests(), 2)
}

// run_if on an evaluator that did not run on the case (when, sample_rate)
// fails to evaluate: skipped, saying why; has() tests for it.
func TestRunIfOnAnEvaluatorThatDidNotRun(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_error", "name": "never", "when": []any{`attributes["no.such"] == "x"`}},
		map[string]any{"type": "tool_error", "name": "reads", "run_if": `results.never.status == "failed"`},
		map[string]any{"type": "tool_error", "name": "guarded", "run_if": `!has(results.never)`},
	}})
	got := results(e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace)))
	assert.NotContains(t, got, "never")
	assert.Equal(t, evaluators.StatusSkipped, got["reads"].Status)
	assert.Contains(t, got["reads"].Reason, "run_if: ")
	assert.Contains(t, got["reads"].Reason, "never")
	assert.Equal(t, evaluators.StatusPassed, got["guarded"].Status)
}

func TestRunIfConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []any
		want []string
	}{
		{"unknown", []any{bookingFlow, map[string]any{"type": "tool_error", "run_if": `results.nope.passed`}},
			[]string{`evaluator "tool_error": run_if reads results.nope`, `no evaluator is named "nope"`, "booking_flow"}},
		{"later", []any{map[string]any{"type": "tool_error", "run_if": `results.booking_flow.passed`}, bookingFlow},
			[]string{`"booking_flow" is defined after "tool_error"`}},
		{"own", []any{map[string]any{"type": "tool_error", "run_if": `results.tool_error.passed`}},
			[]string{"reads its own results"}},
		{"level", []any{map[string]any{"type": "token_usage", "case": "llm", "max_total": 10},
			map[string]any{"type": "tool_error", "run_if": `results.token_usage.passed`}},
			[]string{`"token_usage" scores llm cases and "tool_error" scores agent cases`}},
		{"cycle", []any{
			map[string]any{"type": "tool_error", "name": "a", "run_if": `results.b.passed`},
			map[string]any{"type": "tool_error", "name": "b", "run_if": `results.a.passed`}},
			[]string{"cycle: a -> b -> a"}},
		{"compile", []any{map[string]any{"type": "tool_error", "run_if": `results.x.passed +`}},
			[]string{`evaluator "tool_error": run_if: ERROR`}},
		{"not bool", []any{map[string]any{"type": "tool_error", "run_if": `1 + 2`}},
			[]string{"must return a bool"}},
		{"whole map", []any{bookingFlow, map[string]any{"type": "tool_error", "run_if": `size(results) > 0`}},
			[]string{"results.<name>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			require.NoError(t, confmap.NewFromStringMap(map[string]any{"evaluators": tc.evs}).Unmarshal(&cfg))
			err := confmap.Validate(&cfg)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Session evaluators read the session's earlier results.
func TestRunIfOnSessions(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{"score": 0.3, "reason": "incomplete"}`))
	e := newEngine(t, judgeYAML(srv.Endpoint(), 2,
		map[string]any{"type": "tool_error", "name": "session_errors", "case": "session"},
		map[string]any{"type": "llm_judge", "name": "why", "case": "session", "judge": "default", "criteria": "x",
			"run_if": `results.session_errors.status == "failed" && size(case.turns) == 3`},
		map[string]any{"type": "cel", "name": "only_on_pass", "case": "session", "expression": "true",
			"run_if": `results.session_errors.passed`},
	))
	started(t, e)
	store := sessions.NewStore(sessions.NewDefaultConfig(), e.MaxFieldBytes())
	var mu sync.Mutex
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		mu.Lock()
		defer mu.Unlock()
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	})
	for n, tool := range []string{"search", "search", "book"} {
		e.ScoreTrace(context.Background(), turnTrace(byte(n+1), "conv-1", tool, n == 2))
	}
	snaps := store.Drain()
	require.Len(t, snaps, 1)
	res := results(scoreSession(t, e, &snaps[0]).Report)
	assert.Equal(t, evaluators.StatusFailed, res["session_errors"].Status)
	assert.Equal(t, evaluators.StatusFailed, res["why"].Status, res["why"].Reason)
	assert.Equal(t, evaluators.StatusSkipped, res["only_on_pass"].Status)
	assert.Equal(t, "run_if", res["only_on_pass"].Reason)
	assert.Len(t, srv.Requests(), 1)
}
