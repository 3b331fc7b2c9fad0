package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// alertReceiver is a webhook endpoint that verifies each request's signature
// and keeps the alerts.
type alertReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	alerts []map[string]any
	posts  int
}

// signedBody reads r's body and reports on t an X-Evalbridge-Signature
// that does not verify with secret (HMAC-SHA256 of "timestamp.body").
func signedBody(t *testing.T, r *http.Request, secret string) []byte {
	body, _ := io.ReadAll(r.Body)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%s.%s", r.Header.Get("X-Evalbridge-Timestamp"), body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if got := r.Header.Get("X-Evalbridge-Signature"); !hmac.Equal([]byte(got), []byte(want)) {
		t.Errorf("signature %q does not verify", got)
	}
	return body
}

func (a *alertReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := signedBody(a.t, r, "e2e-webhook-secret")
	var payload struct {
		Alerts     []map[string]any `json:"alerts"`
		Suppressed int              `json:"suppressed"`
	}
	if err := json.Unmarshal(body, &payload); err != nil {
		a.t.Errorf("payload is not JSON: %v", err)
	}
	a.mu.Lock()
	a.alerts = append(a.alerts, payload.Alerts...)
	a.posts++
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (a *alertReceiver) snapshot() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.alerts...)
}

// TestEndToEndWebhook: OTLP in -> eval -> webhook. A failing trace yields
// exactly one alert naming the evaluator, score, threshold and trace; a
// passing trace yields none.
func TestEndToEndWebhook(t *testing.T) {
	be := testkit.NewSink(t)
	recv := &alertReceiver{t: t}
	hookSrv := httptest.NewServer(recv)
	defer hookSrv.Close()

	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/webhook.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Webhook": hookSrv.URL}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "travel-service")
	tr := tp.Tracer("e2e")
	agentRun(ctx, tr, "ok", "", []string{"search_flights", "book_flight"}, "")
	agentRun(ctx, tr, "broken", "", []string{"search_flights", "book_flight"}, "book_flight")
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("sending spans: %v", err)
	}

	const wantSpans = 6 + 6
	deadline := time.Now().Add(20 * time.Second)
	for (be.SpanCount() < wantSpans || len(recv.snapshot()) == 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if be.SpanCount() != wantSpans {
		t.Fatalf("backend received %d spans, want %d", be.SpanCount(), wantSpans)
	}
	// Both traces have reached the backend and the webhook exporter's queue;
	// give a wrongly sent second alert a moment to arrive before counting.
	time.Sleep(300 * time.Millisecond)

	alerts := recv.snapshot()
	if len(alerts) != 1 {
		t.Fatalf("got %d alerts, want exactly 1: %v", len(alerts), alerts)
	}
	a := alerts[0]
	broken, _ := be.Span("broken invoke_agent travel_agent")
	traceID := broken.TraceID().String()
	want := map[string]any{
		"evaluator": "tools_ok", "score": 0.5, "threshold": 1.0, "status": "failed",
		"trace_id": traceID, "span_id": broken.SpanID().String(), "span_name": "broken invoke_agent travel_agent",
		"service_name": "travel-service", "agent_name": "travel_agent",
		"trace_url": "https://traces.example.com/trace/" + traceID + "?span=" + broken.SpanID().String(),
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("alert %s = %v, want %v", k, a[k], v)
		}
	}
	if r, _ := a["reason"].(string); !strings.Contains(r, "book_flight") {
		t.Errorf("alert reason %q does not name the failed call", r)
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(a["time"])); err != nil {
		t.Errorf("alert time %v is not RFC 3339", a["time"])
	}
}
