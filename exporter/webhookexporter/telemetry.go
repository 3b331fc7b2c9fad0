package webhookexporter

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/evalbridge/evalbridge/exporter/webhookexporter"

// Failure kinds, the `kind` attribute of otelcol_exporter_webhook_send_failures.
const (
	failureThrottled = "throttled" // 429, 503
	failureRetryable = "retryable" // 502, 504, other 5xx
	failurePermanent = "permanent" // other 4xx, unencodable payload
	failureNetwork   = "network"   // no response
)

type telemetry struct {
	alertsSent       metric.Int64Counter
	alertsSuppressed metric.Int64Counter
	sendFailures     metric.Int64Counter
	attrs            metric.MeasurementOption
}

func newTelemetry(set component.TelemetrySettings, id component.ID) (*telemetry, error) {
	m := set.MeterProvider.Meter(scopeName)
	var errs, err error
	t := &telemetry{attrs: metric.WithAttributeSet(attribute.NewSet(attribute.String("exporter", id.String())))}
	t.alertsSent, err = m.Int64Counter("otelcol_exporter_webhook_alerts_sent",
		metric.WithDescription("Failed-evaluation alerts delivered to the webhook."), metric.WithUnit("{alerts}"))
	errs = errors.Join(errs, err)
	t.alertsSuppressed, err = m.Int64Counter("otelcol_exporter_webhook_alerts_suppressed",
		metric.WithDescription("Alerts held back by max_alerts_per_minute (reported later as `suppressed`)."), metric.WithUnit("{alerts}"))
	errs = errors.Join(errs, err)
	t.sendFailures, err = m.Int64Counter("otelcol_exporter_webhook_send_failures",
		metric.WithDescription("Failed webhook requests, by kind (throttled, retryable, permanent, network)."), metric.WithUnit("{requests}"))
	errs = errors.Join(errs, err)
	return t, errs
}

func (t *telemetry) sent(ctx context.Context, n int) {
	if n > 0 {
		t.alertsSent.Add(ctx, int64(n), t.attrs)
	}
}

func (t *telemetry) suppressed(ctx context.Context, n int) {
	if n > 0 {
		t.alertsSuppressed.Add(ctx, int64(n), t.attrs)
	}
}

func (t *telemetry) failed(ctx context.Context, kind string) {
	t.sendFailures.Add(ctx, 1, t.attrs, metric.WithAttributes(attribute.String("kind", kind)))
}
