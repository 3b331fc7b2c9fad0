package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

type monitorNote struct {
	Monitor        string            `json:"monitor"`
	State          string            `json:"state"`
	Group          map[string]string `json:"group"`
	Cases          int               `json:"cases"`
	Failed         int               `json:"failed"`
	PassRate       float64           `json:"pass_rate"`
	Time           string            `json:"time"`
	SampleTraceIDs []string          `json:"sample_trace_ids"`
	SampleURLs     []string          `json:"sample_trace_urls"`
}

// monitorReceiver verifies each request's signature and keeps the
// notifications in arrival order.
type monitorReceiver struct {
	t     *testing.T
	mu    sync.Mutex
	notes []monitorNote
}

func (m *monitorReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := signedBody(m.t, r, "e2e-monitor-secret")
	var p struct {
		Alerts   []any         `json:"alerts"`
		Monitors []monitorNote `json:"monitors"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		m.t.Errorf("payload is not JSON: %v: %s", err, body)
	}
	if len(p.Alerts) > 0 {
		m.t.Errorf("per_trace_alerts is false, got alerts: %s", body)
	}
	m.mu.Lock()
	m.notes = append(m.notes, p.Monitors...)
	m.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (m *monitorReceiver) of(monitor string) []monitorNote {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []monitorNote
	for _, n := range m.notes {
		if n.Monitor == monitor {
			out = append(out, n)
		}
	}
	return out
}

func (m *monitorReceiver) count(monitor, state string) int {
	n := 0
	for _, note := range m.of(monitor) {
		if note.State == state {
			n++
		}
	}
	return n
}

// toolRun is one agent run with one tool call, failed or not: the
// tool_error evaluator fails the agent span when the tool span has status
// ERROR. attrs go on the agent span, which it returns.
func toolRun(ctx context.Context, tr trace.Tracer, agent string, fail bool, attrs ...attribute.KeyValue) trace.Span {
	ctx, a := tr.Start(ctx, "invoke_agent "+agent, trace.WithAttributes(append([]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", agent)}, attrs...)...))
	_, s := tr.Start(ctx, "execute_tool book_flight", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "book_flight"),
		attribute.String("gen_ai.tool.call.id", "call_0"),
		attribute.String("gen_ai.tool.call.result", `{"status":"ok"}`)))
	if fail {
		s.SetStatus(codes.Error, "payment declined")
	}
	s.End()
	a.End()
	return a
}

// TestEndToEndMonitors: OTLP in -> eval -> webhook monitors. A burst of
// failing runs of one agent fires one notification naming that agent only;
// an agent below min_cases never fires; passing runs afterwards resolve it;
// renotify repeats at most as configured.
func TestEndToEndMonitors(t *testing.T) {
	recv := &monitorReceiver{t: t}
	hookSrv := httptest.NewServer(recv)
	defer hookSrv.Close()
	grpcAddr := freeAddr(t)
	// testdata/monitors.yaml: two monitors on the same evaluator, per agent:
	// one that never repeats within the test (renotify: 1h) and one that may
	// repeat every second.
	startCollector(t, testkit.Config(t, "testdata/monitors.yaml", map[string]string{"OTLP": grpcAddr, "Webhook": hookSrv.URL}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "travel-service")
	defer func() { _ = tp.Shutdown(ctx) }()
	tr := tp.Tracer("e2e")

	for range 6 {
		toolRun(ctx, tr, "booking_agent", true)
	}
	for range 2 { // below min_cases
		toolRun(ctx, tr, "support_agent", true)
	}
	waitFor(t, 20*time.Second, "a firing notification", func() bool { return recv.count("tools_by_agent", "firing") > 0 })
	first := recv.of("tools_by_agent")[0]
	if first.State != "firing" || first.Group["gen_ai.agent.name"] != "booking_agent" || len(first.Group) != 1 {
		t.Fatalf("first notification %+v, want booking_agent firing", first)
	}
	if first.Cases < 5 || first.PassRate >= 0.5 || len(first.SampleTraceIDs) == 0 ||
		len(first.SampleURLs) != len(first.SampleTraceIDs) || first.SampleURLs[0] != "https://traces.example.com/trace/"+first.SampleTraceIDs[0] {
		t.Errorf("firing notification %+v: want >= 5 cases, pass rate < 0.5, linked samples", first)
	}
	// Let the often-renotifying monitor repeat at least once (1s).
	waitFor(t, 20*time.Second, "a renotification", func() bool { return recv.count("tools_by_agent_often", "firing") > 1 })

	// Passing runs bring the pass rate back up.
	waitFor(t, 30*time.Second, "a resolved notification", func() bool {
		for range 3 {
			toolRun(ctx, tr, "booking_agent", false)
		}
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if recv.count("tools_by_agent", "resolved") > 0 && recv.count("tools_by_agent_often", "resolved") > 0 {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	})
	// A late duplicate would arrive within the processor's wait and a tick.
	time.Sleep(500 * time.Millisecond)

	notes := recv.of("tools_by_agent")
	t.Logf("tools_by_agent: %+v", notes)
	t.Logf("tools_by_agent_often: %+v", recv.of("tools_by_agent_often"))
	for _, n := range notes {
		if n.Group["gen_ai.agent.name"] != "booking_agent" {
			t.Errorf("notification for another group: %+v", n)
		}
	}
	if len(notes) != 2 || notes[0].State != "firing" || notes[1].State != "resolved" {
		t.Errorf("tools_by_agent sent %+v, want exactly one firing then one resolved", notes)
	}
	if notes[len(notes)-1].PassRate < 0.5 {
		t.Errorf("resolved with pass rate %v < 0.5", notes[len(notes)-1].PassRate)
	}
	// Renotify: consecutive firing notifications at least 1s apart.
	var last time.Time
	for _, n := range recv.of("tools_by_agent_often") {
		if n.Group["gen_ai.agent.name"] != "booking_agent" {
			t.Errorf("notification for another group: %+v", n)
		}
		at, err := time.Parse(time.RFC3339, n.Time)
		if err != nil {
			t.Fatalf("time %q: %v", n.Time, err)
		}
		if n.State == "firing" && !last.IsZero() && at.Sub(last) < time.Second {
			t.Errorf("renotified %v after the previous firing notification, want >= 1s", at.Sub(last))
		}
		if n.State == "firing" {
			last = at
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
