package webhookexporter

import (
	"context"
	"strings"
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
	md, err := telemetrydoc.Load("metadata.yaml")
	require.NoError(t, err)
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

	var insts []telemetrydoc.Instrument
	for _, i := range mp.Instruments() {
		if strings.HasPrefix(i.Name, "otelcol_exporter_webhook_") {
			insts = append(insts, i)
		}
	}
	problems := telemetrydoc.Compare(md, insts, false)
	require.Empty(t, problems, "metadata.yaml and the registered instruments disagree:\n%s", strings.Join(problems, "\n"))
}

// documentation.md and internal/metadata/generated_telemetry.go are what
// `go generate` makes of metadata.yaml.
func TestDocumentationIsGenerated(t *testing.T) {
	require.NoError(t, telemetrydoc.CheckDocumentation("."))
}
