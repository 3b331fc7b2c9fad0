package webhookexporter

//go:generate go run ../../internal/telemetrydoc/mdgen

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/exporter/webhookexporter/internal/metadata"
)

const scopeName = "github.com/evalbridge/evalbridge/exporter/webhookexporter"

// Failure kinds, the `kind` attribute of otelcol_exporter_webhook_send_failures.
const (
	failureThrottled = "throttled" // 429, 503
	failureRetryable = "retryable" // 502, 504, other 5xx
	failurePermanent = "permanent" // other 4xx, unencodable payload
	failureNetwork   = "network"   // no response
)

// Reasons an alert is dropped, the `reason` attribute of
// otelcol_exporter_webhook_alerts_dropped.
const (
	dropQueueFull = "queue_full" // the sending queue refused it (full: the endpoint is down or slow)
	dropRejected  = "rejected"   // the endpoint refused it for good (4xx), or it could not be encoded
)

// telemetry is the exporter's instruments, from the builder generated from
// metadata.yaml. They carry no attribute naming the exporter: the
// collector's service identifies the component (otel.component.id) on its
// telemetry itself.
type telemetry struct {
	tb *metadata.TelemetryBuilder
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &telemetry{tb: tb}, nil
}

func (t *telemetry) sent(ctx context.Context, n int) {
	if n > 0 {
		t.tb.ExporterWebhookAlertsSent.Add(ctx, int64(n))
	}
}

func (t *telemetry) suppressed(ctx context.Context, n int) {
	if n > 0 {
		t.tb.ExporterWebhookAlertsSuppressed.Add(ctx, int64(n))
	}
}

func (t *telemetry) dropped(ctx context.Context, n int, reason string) {
	if n > 0 {
		t.tb.ExporterWebhookAlertsDropped.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
	}
}

func (t *telemetry) failed(ctx context.Context, kind string) {
	t.tb.ExporterWebhookSendFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind)))
}

// Monitor verdicts, the `verdict` attribute of
// otelcol_exporter_webhook_monitor_evaluations.
const (
	verdictBelow     = iota // figure below the threshold
	verdictOK               // at or above it
	verdictNone             // fewer than min_cases cases (or no score): no verdict
	verdictUncertain        // with confidence: the interval straddles the threshold
)

var verdictNames = [...]string{verdictBelow: "below", verdictOK: "ok", verdictNone: "no_verdict", verdictUncertain: "uncertain"}

// monitorTelemetry records for one monitor; attribute sets are built once so
// that counting costs no allocation per case.
type monitorTelemetry struct {
	tb       *metadata.TelemetryBuilder
	attrs    metric.MeasurementOption
	verdicts [len(verdictNames)][]metric.AddOption // a ready slice: passing it costs no allocation
	firing   metric.MeasurementOption
	resolved metric.MeasurementOption
}

// forMonitor returns the recorder of one monitor's counters.
func (tel *telemetry) forMonitor(name string) *monitorTelemetry {
	base := []attribute.KeyValue{attribute.String("monitor", name)}
	with := func(k, v string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), base...), attribute.String(k, v))...))
	}
	t := &monitorTelemetry{tb: tel.tb, attrs: metric.WithAttributeSet(attribute.NewSet(base...)),
		firing: with("state", StateFiring), resolved: with("state", StateResolved)}
	for v, n := range verdictNames {
		t.verdicts[v] = []metric.AddOption{with("verdict", n)}
	}
	return t
}

func (t *monitorTelemetry) evaluated(verdict int, n int64) {
	if n > 0 {
		t.tb.ExporterWebhookMonitorEvaluations.Add(context.Background(), n, t.verdicts[verdict]...)
	}
}

func (t *monitorTelemetry) stateChanged(state string) {
	opt := t.firing
	if state == StateResolved {
		opt = t.resolved
	}
	t.tb.ExporterWebhookMonitorStateChanges.Add(context.Background(), 1, opt)
}

func (t *monitorTelemetry) renotified() {
	t.tb.ExporterWebhookMonitorRenotifications.Add(context.Background(), 1, t.attrs)
}

func (t *monitorTelemetry) untracked() {
	t.tb.ExporterWebhookMonitorCasesUntracked.Add(context.Background(), 1, t.attrs)
}

func (t *monitorTelemetry) evicted() {
	t.tb.ExporterWebhookMonitorGroupsEvicted.Add(context.Background(), 1, t.attrs)
}

func (t *monitorTelemetry) enqueueFailed() {
	t.tb.ExporterWebhookMonitorEnqueueFailures.Add(context.Background(), 1, t.attrs)
}

func (t *monitorTelemetry) groupsAdded(n int) {
	if n != 0 {
		t.tb.ExporterWebhookMonitorGroups.Add(context.Background(), int64(n), t.attrs)
	}
}

func (t *monitorTelemetry) sent(ctx context.Context, n int) {
	if n > 0 {
		t.tb.ExporterWebhookMonitorNotificationsSent.Add(ctx, int64(n), t.attrs)
	}
}
