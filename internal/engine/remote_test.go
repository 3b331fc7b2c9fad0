package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/evalbridge/evalbridge/evaluators"
)

// remoteServer answers by evaluator name: good scores, fails 500s, garbage
// answers something that is not a score, hangs waits for release.
func remoteServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Evaluator string         `json:"evaluator"`
			Case      map[string]any `json:"case"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch body.Evaluator {
		case "good":
			_, _ = io.WriteString(w, `{"score": 0.9, "reason": "agent `+body.Case["agent_name"].(string)+` ok"}`)
		case "fails":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "garbage":
			_, _ = io.WriteString(w, "<html>hello</html>")
		case "hangs":
			select {
			case <-release:
				_, _ = io.WriteString(w, `{"score": 0.2, "reason": "late but sure"}`)
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func remoteEvaluator(name, endpoint string, extra ...any) map[string]any {
	m := map[string]any{"type": "remote", "name": name, "endpoint": endpoint,
		"retry": map[string]any{"max_attempts": 2, "initial_backoff": "1ms", "max_backoff": "1ms"}}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestRemoteFailuresDoNotStopTheTrace(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := remoteServer(t, release)
	e := newEngine(t, map[string]any{"evaluators": []any{
		remoteEvaluator("good", srv.URL),
		remoteEvaluator("fails", srv.URL),
		remoteEvaluator("garbage", srv.URL),
		remoteEvaluator("hangs", srv.URL, "timeout", "100ms"),
		map[string]any{"type": "cel", "name": "few_calls", "expression": `case.llm_calls <= 3 && case.tool_calls.size() == 2`},
		map[string]any{"type": "tool_error"},
	}})
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	spans := loadTrace(t, "../../examples/traces/travel-agent-semconv.json")
	got := results(e.ScoreTrace(context.Background(), spans))
	for name, w := range map[string]struct {
		st     evaluators.Status
		reason string
	}{
		"good":       {evaluators.StatusPassed, "agent travel_agent ok"},
		"fails":      {evaluators.StatusError, "HTTP 500"},
		"garbage":    {evaluators.StatusError, "not {\"score\""},
		"hangs":      {evaluators.StatusTimeout, "within the `timeout` of 100ms"},
		"few_calls":  {evaluators.StatusPassed, "expression is true"},
		"tool_error": {evaluators.StatusPassed, ""},
	} {
		if r := got[name]; r.Status != w.st || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: %s %q, want %s with %q", name, r.Status, r.Reason, w.st, w.reason)
		}
	}
	// The results are on the agent span, which goes on with them.
	attrs := findSpan(spans, "invoke_agent travel_agent").Attributes().AsRaw()
	if attrs["eval.good.score"] != 0.9 || attrs["eval.fails.status"] != "error" || attrs["eval.hangs.status"] != "timeout" ||
		attrs["eval.few_calls.passed"] != true {
		t.Fatalf("agent span attributes: %v", attrs)
	}
}

func TestRemoteRunsInTheBackgroundWithLateResults(t *testing.T) {
	release := make(chan struct{})
	srv := remoteServer(t, release)
	y := map[string]any{"timeout": "5s", "evaluators": []any{
		remoteEvaluator("hangs", srv.URL, "timeout", "1m"),
		map[string]any{"type": "cel", "name": "few_calls", "expression": `case.llm_calls <= 3`},
	}}
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	defer func() { _ = e.Shutdown(context.Background()) }()

	spans := loadTrace(t, "../../examples/traces/travel-agent-semconv.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { done <- r })
	// The remote endpoint has not answered: the trace is not finished, and
	// ScoreTraceAsync did not wait for it.
	select {
	case <-done:
		t.Fatal("the trace finished before its remote evaluator answered")
	default:
	}
	cancel() // the trace's time is up
	rep := <-done
	got := results(rep)
	if r := got["hangs"]; r.Status != evaluators.StatusTimeout || !strings.Contains(r.Reason, "the remote evaluator did not answer") ||
		!strings.Contains(r.Reason, "late result follows") {
		t.Fatalf("on the trace: %+v", r)
	}
	if got["few_calls"].Status != evaluators.StatusPassed {
		t.Fatalf("cel: %+v", got["few_calls"])
	}
	close(release)
	sp := sink.firstSpan(t)
	if a := sp.Attributes().AsRaw(); a["eval.hangs.score"] != 0.2 || a["eval.late"] != true {
		t.Fatalf("late span attributes: %v", a)
	}
}
