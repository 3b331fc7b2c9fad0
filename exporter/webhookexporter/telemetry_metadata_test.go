package webhookexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

// The instruments the exporter registers (through the builder generated
// from metadata.yaml) record only the attributes declared there (none
// naming the exporter: the service does). exporterhelper's own
// otelcol_exporter_* metrics are the collector's, not this component's.
func TestTelemetryMatchesMetadata(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Monitors = []MonitorConfig{passRateMonitor()}
	clock := newFakeClock()
	tick := make(chan time.Time)

	mp := telemetrydoc.NewRecorder()
	set := exportertest.NewNopSettings(Type)
	set.TelemetrySettings.MeterProvider = mp
	exp, err := newTracesExporterWithTicker(context.Background(), set, cfg, clock.Now,
		func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} })
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	ctx := context.Background()
	require.NoError(t, exp.ConsumeTraces(ctx, caseTraces("travel_agent", repeat(6, fail)...)))
	require.NoError(t, exp.Shutdown(ctx))
	mp.Collect()
	require.NoError(t, telemetrydoc.CheckRecorded(".", mp, "otelcol_exporter_webhook_"))
}

// documentation.md and internal/metadata/generated_telemetry.go are what
// `go generate` makes of metadata.yaml.
func TestDocumentationIsGenerated(t *testing.T) {
	require.NoError(t, telemetrydoc.CheckDocumentation("."))
}
