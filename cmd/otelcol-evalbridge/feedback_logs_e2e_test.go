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
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// feedbackReceiver keeps the alerts and monitor notifications it is sent.
type feedbackReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	alerts []map[string]any
	notes  []map[string]any
}

func (f *feedbackReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := signedBody(f.t, r, "e2e-feedback-secret")
	var p struct {
		Alerts   []map[string]any `json:"alerts"`
		Monitors []map[string]any `json:"monitors"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		f.t.Errorf("payload is not JSON: %v: %s", err, body)
	}
	f.mu.Lock()
	f.alerts = append(f.alerts, p.Alerts...)
	f.notes = append(f.notes, p.Monitors...)
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (f *feedbackReceiver) got() (alerts, notes []map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any{}, f.alerts...), append([]map[string]any{}, f.notes...)
}

// TestFeedbackLogsAlert: user feedback sent as an application would, with
// the Go OTel SDK's logs API (gen_ai.evaluation.result events, type
// human), through a collector's logs pipeline into the webhook exporter:
// each thumbs-down is a §9 alert, and the thumbs-down rate of one agent
// fires its monitor, grouped by the record's agent attribute; the other
// agent, mostly thumbs-up, does not fire.
func TestFeedbackLogsAlert(t *testing.T) {
	recv := &feedbackReceiver{t: t}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	addr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/feedback_logs.yaml", map[string]string{"OTLP": addr, "Webhook": hook.URL}))

	ctx := context.Background()
	exp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(addr), otlploggrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)),
		sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", "travel-service"))))
	defer func() { _ = lp.Shutdown(ctx) }()
	logger := lp.Logger("feedback-widget")

	feedback := func(i int, agent, label string) {
		var tid trace.TraceID
		tid[0], tid[15] = 0xfb, byte(i)
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0, 0, 0, 0, 0, 0, 0, 1}, TraceFlags: trace.FlagsSampled})
		var rec otellog.Record
		rec.SetEventName("gen_ai.evaluation.result")
		rec.SetTimestamp(time.Now())
		rec.AddAttributes(
			attribute.String("gen_ai.evaluation.name", "user_feedback"),
			attribute.String("gen_ai.evaluation.evaluator.type", "human"),
			attribute.String("gen_ai.evaluation.score.label", label),
			attribute.String("gen_ai.evaluation.explanation", "the user said so"),
			attribute.String("gen_ai.agent.name", agent))
		logger.Emit(trace.ContextWithSpanContext(ctx, sc), rec)
	}
	for i := range 5 {
		feedback(i, "booking_agent", "thumbs_down")
	}
	for i := range 5 {
		label := "thumbs_up"
		if i == 0 {
			label = "thumbs_down"
		}
		feedback(10+i, "support_agent", label)
	}
	// A record of something else passes by unread.
	var other otellog.Record
	other.SetBody(attribute.StringValue("user clicked"))
	logger.Emit(ctx, other)

	waitFor(t, 20*time.Second, "a firing notification and 6 alerts", func() bool {
		alerts, notes := recv.got()
		return len(notes) > 0 && len(alerts) >= 6
	})
	time.Sleep(300 * time.Millisecond) // anything more would come now
	alerts, notes := recv.got()
	if len(alerts) != 6 {
		t.Errorf("%d alerts, want one per thumbs-down (6): %v", len(alerts), alerts)
	}
	for _, a := range alerts {
		if a["evaluator"] != "user_feedback" || a["status"] != "failed" || a["service_name"] != "travel-service" ||
			a["reason"] != "the user said so" || a["trace_id"] == "" || a["span_id"] != "0000000000000001" {
			t.Errorf("alert %v", a)
		}
	}
	if len(notes) != 1 {
		t.Fatalf("notifications %v, want one (booking_agent firing)", notes)
	}
	n := notes[0]
	group, _ := n["group"].(map[string]any)
	// Each record is its own request (a simple processor): the monitor
	// fires at min_cases, 4 thumbs down of 4.
	if n["state"] != "firing" || n["evaluator"] != "user_feedback" || group["gen_ai.agent.name"] != "booking_agent" ||
		n["failed"] != float64(4) || n["cases"] != float64(4) || n["pass_rate"] != float64(0) || len(group) != 1 {
		t.Errorf("notification %v, want booking_agent firing with 4 of 4 thumbs down", n)
	}
}
