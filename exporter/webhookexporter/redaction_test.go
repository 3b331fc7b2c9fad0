package webhookexporter

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

const plantedReason = "the agent mailed jane.doe@example.com the card 4111 1111 1111 1111"

// Every format's body is masked before it is signed; a JSON body stays
// JSON; the masked values are counted by detector; `detectors: []` sends
// the payload as built.
func TestPayloadsAreRedacted(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatSlack, FormatTemplate} {
		t.Run(format, func(t *testing.T) {
			rec := newRecorder(t)
			cfg := syncConfig(rec.srv.URL)
			cfg.Format = format
			if format == FormatTemplate {
				cfg.Template = `{{range .Alerts}}{{.Evaluator}}: {{.Reason}}{{end}}`
			}
			cfg.Secret = configopaque.String("whsec_redaction")
			h := start(t, cfg, nil)
			require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, plantedReason))))
			reqs := rec.requests()
			require.Len(t, reqs, 1)
			body := string(reqs[0].body)
			assert.NotContains(t, body, "jane.doe@example.com")
			assert.NotContains(t, body, "4111 1111 1111 1111")
			assert.Contains(t, body, "[REDACTED:email#1]")
			if format == FormatTemplate {
				assert.Equal(t, "booking_flow: the agent mailed [REDACTED:email#1] the card [REDACTED:credit_card#1]", body)
			} else {
				assert.True(t, json.Valid(reqs[0].body), "a JSON body stays JSON: %s", body)
			}
			mac := hmac.New(sha256.New, []byte("whsec_redaction"))
			mac.Write([]byte(reqs[0].header.Get(HeaderTimestamp) + "." + body))
			assert.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), reqs[0].header.Get(HeaderSignature), "the signature is over the body sent")

			m, err := h.tel.GetMetric(metricRedactions)
			require.NoError(t, err)
			byDetector := map[string]int64{}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				d, _ := dp.Attributes.Value("detector")
				byDetector[d.AsString()] += dp.Value
			}
			assert.Equal(t, map[string]int64{"email": 1, "credit_card": 1}, byDetector)
		})
	}

	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Redaction.Detectors = []string{}
	h := start(t, cfg, nil)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, plantedReason))))
	require.Len(t, rec.requests(), 1)
	assert.Equal(t, plantedReason, rec.payload(t, 0).Alerts[0].Reason)
	_, err := h.tel.GetMetric(metricRedactions)
	assert.Error(t, err, "not registered when off")
}
