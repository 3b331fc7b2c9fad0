package webhookexporter

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/evalbridge/evalbridge/internal/httpclient/httpclienttest"
)

// A cross-host 307 from the alert endpoint is not followed: the other host
// receives neither the configured headers, nor the signature, nor the
// payload; the error names the target host and is not retried.
func TestWebhookCrossHostRedirectNotFollowed(t *testing.T) {
	rd := httpclienttest.NewRedirect(t)
	cfg := syncConfig(rd.Origin.URL + "/hook?token=hook-query-token")
	cfg.Secret = "whsec_redirect_secret"
	cfg.ClientConfig.Headers = configopaque.MapList{{Name: "Authorization", Value: "Bearer hook-bearer-1"}, {Name: "X-Api-Key", Value: "xk-hook-2"}}
	h := start(t, cfg, nil)
	// The webhook never refuses what it receives (contract §17): the
	// failure is logged, not returned.
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r"))))
	logged := strings.Join(logLines(h), "\n")
	rd.Refused(t, logged)
	assert.NotContains(t, logged, "hook-query-token")
}

// logLines are the exporter's log entries, each with its fields.
func logLines(h *harness) []string {
	var out []string
	for _, e := range h.logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		out = append(out, line)
	}
	return out
}

// An error body that echoes a configured header or the endpoint's query is
// redacted before it is clipped to the excerpt, wherever the echo falls.
func TestWebhookErrorBodyRedactedBeforeClipping(t *testing.T) {
	const headerValue = "xk-echoed-header-value-77"
	const code = "hook-code-4a9f2e"
	srv := httpclienttest.NewEcho(t, http.StatusBadRequest, func(r *http.Request) string {
		return "got " + r.Header.Get("X-Api-Key") + " for ?" + r.URL.RawQuery
	})
	cfg := syncConfig(srv.URL + "/hook?code=" + code)
	cfg.RetryConfig.MaxElapsedTime = 100 * time.Millisecond
	cfg.ClientConfig.Headers = configopaque.MapList{{Name: "X-Api-Key", Value: headerValue}}
	h := start(t, cfg, nil)
	for o := 200; o <= 270; o++ {
		srv.SetPad(o)
		// Logged with the error excerpt, not returned (contract §17).
		require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r"))))
	}
	lines := logLines(h)
	require.NotEmpty(t, lines, "the rejections were not logged")
	assert.Contains(t, strings.Join(lines, "\n"), "got ", "the log quotes no excerpt of the error body: the check below would prove nothing")
	for _, line := range lines {
		httpclienttest.NoLeak(t, "log", line, headerValue, code)
	}
}
