package main

import (
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/evalbridge/evalbridge/exporter/webhookexporter"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/processor/evalprocessor"
)

// TestExampleStreamConfig loads examples/stream.yaml with the real
// factories (TestShippedConfigsUnderLoad runs it): eval in stream mode in
// the traces and the logs pipeline, the result records into evalmetrics,
// the result spans to the webhook.
func TestExampleStreamConfig(t *testing.T) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVALBRIDGE_WEBHOOK_URL", "https://alerts.example.com/hooks/evalbridge")
	t.Setenv("EVALBRIDGE_WEBHOOK_SECRET", "0123456789abcdef")
	cfg, err := otelcoltest.LoadConfigAndValidate(filepath.Join("..", "..", "examples", "stream.yaml"), factories)
	if err != nil {
		t.Fatalf("examples/stream.yaml: %v", err)
	}
	eval := cfg.Processors[component.MustNewID("eval")].(*evalprocessor.Config)
	if eval.Mode != engine.ModeStream {
		t.Errorf("mode = %q, want %q", eval.Mode, engine.ModeStream)
	}
	hook := cfg.Exporters[component.MustNewID("webhook")].(*webhookexporter.Config)
	if hook.ClientConfig.Endpoint != "https://alerts.example.com/hooks/evalbridge" || len(hook.Monitors) == 0 {
		t.Errorf("webhook endpoint %q with %d monitors, want the variable's and a monitor", hook.ClientConfig.Endpoint, len(hook.Monitors))
	}
	for _, tc := range []struct {
		signal    pipeline.Signal
		exporters []string
	}{
		{pipeline.SignalTraces, []string{"otlp_http", "webhook"}},
		{pipeline.SignalLogs, []string{"otlp_http", "evalmetrics"}},
	} {
		p := cfg.Service.Pipelines[pipeline.NewID(tc.signal)]
		if p == nil {
			t.Fatalf("no %s pipeline", tc.signal)
		}
		if got := ids(p.Processors); !slices.Equal(got, []string{"memory_limiter", "eval", "batch"}) {
			t.Errorf("%s processors = %v", tc.signal, got)
		}
		if got := ids(p.Exporters); !slices.Equal(got, tc.exporters) {
			t.Errorf("%s exporters = %v, want %v", tc.signal, got, tc.exporters)
		}
	}
	if m := cfg.Service.Pipelines[pipeline.NewID(pipeline.SignalMetrics)]; m == nil || !slices.Equal(ids(m.Receivers), []string{"evalmetrics"}) || !slices.Equal(ids(m.Exporters), []string{"prometheus"}) {
		t.Errorf("metrics pipeline %+v, want evalmetrics -> prometheus", m)
	}
}
