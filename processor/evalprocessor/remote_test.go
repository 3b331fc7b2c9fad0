package evalprocessor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/evaluators"
)

// Remote evaluators that 500, answer garbage or hang give error or timeout
// on the span, and the trace is forwarded with every other result.
func TestFailingRemoteEvaluatorsLetSpansThrough(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Evaluator string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch body.Evaluator {
		case "fails":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "garbage":
			_, _ = io.WriteString(w, `{"verdict": "great"}`)
		case "hangs":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	remote := func(name string, extra ...any) evaluators.Config {
		opts := map[string]any{"endpoint": srv.URL, "retry": map[string]any{"max_attempts": 1}}
		for i := 0; i+1 < len(extra); i += 2 {
			opts[extra[i].(string)] = extra[i+1]
		}
		return evaluators.Config{Type: "remote", Name: name, Options: opts}
	}
	h := newHarness(t, func(c *Config) {
		c.Evaluators = []evaluators.Config{
			{Type: "tool_error"},
			{Type: "cel", Name: "few_llm_calls", Options: map[string]any{"expression": "case.llm_calls <= 3"}},
			remote("fails"), remote("garbage"), remote("hangs", "timeout", "100ms"),
		}
	}, nil, nil)
	agent := h.scoreAgentTrace()
	require.Equal(t, "invoke_agent travel_agent", agent.Name())
	assert.Equal(t, "passed", strAttr(agent, "eval.tool_error.status"))
	assert.Equal(t, "passed", strAttr(agent, "eval.few_llm_calls.status"))
	assert.Equal(t, "error", strAttr(agent, "eval.fails.status"))
	assert.Contains(t, strAttr(agent, "eval.fails.reason"), "HTTP 500")
	assert.Equal(t, "error", strAttr(agent, "eval.garbage.status"))
	assert.Equal(t, "timeout", strAttr(agent, "eval.hangs.status"))
}
