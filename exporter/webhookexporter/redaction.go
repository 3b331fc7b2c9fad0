package webhookexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/exporter/webhookexporter/internal/metadata"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// metricRedactions counts the values masked in webhook payloads, by
// detector.
const metricRedactions = "otelcol_exporter_webhook_redactions"

// redactingEncoder masks personal data and secrets in every body the
// exporter sends (`redaction:`, docs/redaction.md): alerts and monitor
// notifications, in every format. A JSON body stays valid JSON (only its
// strings change); a template's output that is not JSON is redacted as
// text. The body is masked before it is signed, so the signature holds.
type redactingEncoder struct {
	encoder
	r *redact.Redactor
}

func (e redactingEncoder) encode(p Payload) ([]byte, error) {
	body, err := e.encoder.encode(p)
	if err != nil {
		return nil, err
	}
	return e.r.JSON(body), nil
}

// withRedaction wraps enc when the config redacts anything.
func withRedaction(enc encoder, cfg redact.Config, set component.TelemetrySettings) (encoder, error) {
	if !cfg.Enabled() {
		return enc, nil
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	counter := tb.ExporterWebhookRedactions
	opts := map[string]metric.AddOption{}
	for _, n := range redact.Builtins() {
		opts[n] = metric.WithAttributeSet(attribute.NewSet(attribute.String("detector", n)))
	}
	for _, p := range cfg.Patterns {
		opts[p.Name] = metric.WithAttributeSet(attribute.NewSet(attribute.String("detector", p.Name)))
	}
	r, err := redact.New(cfg, func(d string) { counter.Add(context.Background(), 1, opts[d]) })
	if err != nil {
		return nil, err
	}
	return redactingEncoder{encoder: enc, r: r}, nil
}
