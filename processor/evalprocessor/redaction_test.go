package evalprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// otelcol_processor_eval_redactions counts each value masked in what is
// written back, by detector, once per value whatever its spelling (after a
// label, URL-encoded, in JSON serialised twice); the evaluated span keeps
// its content, and `detectors: []` masks (and counts) nothing.
func TestRedactionsCountedByDetector(t *testing.T) {
	const input = "mail me at jane.doe@example.com or bob@example.org, card 4111 1111 1111 1111"
	const spellings = `Card:4111111111111111 tel:+15551234567 ?email=jane.doe%40example.com args "{\"to\":\"bob\\u0040example.org\",\"tel\":4155550123}"`
	for _, tc := range []struct {
		name      string
		input     string
		detectors []string
		want      map[string]int64
		reason    string
	}{
		{"default", input, redact.Builtins(), map[string]int64{"email": 2, "credit_card": 1},
			"input: mail me at [REDACTED:email#1] or [REDACTED:email#2], card [REDACTED:credit_card#1]"},
		{"spellings", spellings, redact.Builtins(), map[string]int64{"email": 2, "credit_card": 1, "phone": 2},
			`input: Card:[REDACTED:credit_card#1] tel:[REDACTED:phone#1] ?email=[REDACTED:email#1] args "{\"to\":\"[REDACTED:email#2]\",\"tel\":\"[REDACTED:phone#2]\"}"`},
		{"off", input, []string{}, map[string]int64{}, "input: " + input},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer func() { _ = mp.Shutdown(context.Background()) }()
			cfg := createDefaultConfig()
			cfg.Wait = time.Second
			cfg.Redaction.Detectors = tc.detectors
			cfg.Evaluators = []evaluators.Config{{Type: "cel", Name: "echo", Case: "llm",
				Options: map[string]any{"expression": `{"score": 1.0, "reason": "input: " + case.input}`}}}
			b := newBatch()
			b.agent(1)
			b.llm(1, 2, tc.input)
			sink := scoreOnce(t, cfg, mp, false, b.td)

			llm := spansOf(sink, 1)[2]
			v, _ := llm.Attributes().Get("eval.echo.reason")
			assert.Equal(t, tc.reason, v.Str())
			v, _ = llm.Attributes().Get("gen_ai.input.messages")
			assert.Contains(t, v.Str(), "jane.doe", "the span's own content is untouched")

			var rm metricdata.ResourceMetrics
			require.NoError(t, reader.Collect(context.Background(), &rm))
			got := map[string]int64{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "otelcol_processor_eval_redactions" {
						continue
					}
					for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
						d, _ := dp.Attributes.Value("detector")
						got[d.AsString()] += dp.Value
					}
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
