package webhookexporter

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

const traceHex = "0af7651916cd43dd8448eb211c80319c"
const spanHex = "b7ad6b7169203331"

func TestJSONPayload(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL + "/hooks/eval")
	cfg.TraceURL = "https://jaeger.example/trace/{trace_id}?uiFind={span_id}"
	h := start(t, cfg, nil)

	td := agentTraces(
		failed("booking_flow", 0.5, 1.0, "expected book_hotel after search_flights"),
		passed("tool_error", 1, 1),
		evaluators_skipped("exact_match"),
	)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), td))

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "application/json", reqs[0].header.Get("Content-Type"))
	assert.Empty(t, reqs[0].header.Get(HeaderSignature), "no secret, no signature")

	// Exactly the contract's keys.
	var raw map[string]any
	require.NoError(t, json.Unmarshal(reqs[0].body, &raw))
	assert.ElementsMatch(t, []string{"alerts", "suppressed"}, keys(raw))
	alerts := raw["alerts"].([]any)
	require.Len(t, alerts, 1)
	assert.ElementsMatch(t, []string{"trace_id", "span_id", "span_name", "service_name", "agent_name", "evaluator",
		"evaluator_version", "score", "threshold", "status", "reason", "time", "trace_url"}, keys(alerts[0].(map[string]any)))

	p := rec.payload(t, 0)
	assert.Equal(t, 0, p.Suppressed)
	a := p.Alerts[0]
	assert.Equal(t, traceHex, a.TraceID)
	assert.Equal(t, spanHex, a.SpanID)
	assert.Equal(t, "invoke_agent travel_agent", a.SpanName)
	assert.Equal(t, "travel-svc", a.ServiceName)
	assert.Equal(t, "travel_agent", a.AgentName)
	assert.Equal(t, "booking_flow", a.Evaluator)
	require.NotNil(t, a.Score)
	require.NotNil(t, a.Threshold)
	assert.InDelta(t, 0.5, *a.Score, 1e-9)
	assert.InDelta(t, 1.0, *a.Threshold, 1e-9)
	assert.Equal(t, "failed", a.Status)
	assert.Equal(t, "expected book_hotel after search_flights", a.Reason)
	ts, err := time.Parse(time.RFC3339, a.Time)
	require.NoError(t, err)
	assert.True(t, ts.Equal(testEnd), "time is the span end: %s", a.Time)
	assert.Equal(t, "https://jaeger.example/trace/"+traceHex+"?uiFind="+spanHex, a.TraceURL)

	assert.Equal(t, int64(1), h.counter(t, "otelcol_exporter_webhook_alerts_sent", ""))
}

func TestJSONPayloadWithoutTraceURLAndAgentFallbacks(t *testing.T) {
	rec := newRecorder(t)
	h := start(t, syncConfig(rec.srv.URL), nil)

	td := agentTraces(failed("a", 0.1, 0.9, "r1"), failed("b", 0, 1, "r2"))
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	span.Attributes().Remove("gen_ai.agent.name")
	span.Attributes().PutStr("traceloop.entity.name", "legacy_agent")
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), td))

	var raw map[string]any
	require.NoError(t, json.Unmarshal(rec.requests()[0].body, &raw))
	for _, a := range raw["alerts"].([]any) {
		assert.NotContains(t, a.(map[string]any), "trace_url")
	}
	p := rec.payload(t, 0)
	require.Len(t, p.Alerts, 2)
	assert.Equal(t, []string{"a", "b"}, []string{p.Alerts[0].Evaluator, p.Alerts[1].Evaluator})
	assert.Equal(t, "legacy_agent", p.Alerts[0].AgentName)
}

func TestSlackFormat(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Format = FormatSlack
	cfg.TraceURL = "https://ui.example/t/{trace_id}"
	h := start(t, cfg, nil)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(),
		agentTraces(failed("booking_flow", 0.5, 1.0, "missing <book_hotel> & more"))))

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "application/json", reqs[0].header.Get("Content-Type"))
	var msg struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].body, &msg))
	assert.Contains(t, msg.Text, "booking_flow")
	assert.Contains(t, msg.Text, "0.5")
	assert.Contains(t, msg.Text, "threshold 1")
	require.NotEmpty(t, msg.Blocks)
	blocks := string(reqs[0].body)
	assert.Contains(t, blocks, "*Evaluator*\\nbooking_flow")
	assert.Contains(t, blocks, "0.5 / 1")
	assert.Contains(t, blocks, "<https://ui.example/t/"+traceHex+"|"+traceHex+">")
	assert.Contains(t, blocks, "missing &lt;book_hotel&gt; &amp; more")
	for _, b := range msg.Blocks {
		assert.Contains(t, []string{"header", "section", "context"}, b["type"])
	}
}

func TestTemplateFormat(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Format = FormatTemplate
	cfg.TraceURL = "https://ui.example/t/{trace_id}"
	cfg.Template = `{{range .Alerts}}{{.Evaluator}} {{num .Score}}/{{num .Threshold}} {{.ServiceName}} {{.AgentName}} {{.TraceURL}} {{json .Reason}}
{{end}}suppressed={{.Suppressed}}`
	h := start(t, cfg, nil)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(),
		agentTraces(failed("booking_flow", 0.5, 1.0, `said "no"`))))

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "text/plain; charset=utf-8", reqs[0].header.Get("Content-Type"))
	assert.Equal(t, "booking_flow 0.5/1 travel-svc travel_agent https://ui.example/t/"+traceHex+` "said \"no\""`+"\nsuppressed=0",
		string(reqs[0].body))
}

func TestTemplateContentTypeFromHeaders(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Format = FormatTemplate
	cfg.Template = `{"n": {{len .Alerts}}}`
	cfg.ClientConfig.Headers.Set("Content-Type", "application/json")
	h := start(t, cfg, nil)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("x", 0, 1, ""))))
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "application/json", reqs[0].header.Get("Content-Type"))
	assert.JSONEq(t, `{"n": 1}`, string(reqs[0].body))
}

func TestNothingSent(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Evaluators = []string{"tool_error"}
	h := start(t, cfg, nil)
	ctx := context.Background()

	// All passed.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(passed("tool_error", 1, 1), passed("booking_flow", 1, 1))))
	// The failed evaluator is not in `evaluators`.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("booking_flow", 0, 1, "no"), passed("tool_error", 1, 1))))
	// Spans never evaluated, and no spans at all.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces()))
	require.NoError(t, h.exp.ConsumeTraces(ctx, ptrace.NewTraces()))

	assert.Empty(t, rec.requests())

	// The filter still lets its own evaluator through.
	require.NoError(t, h.exp.ConsumeTraces(ctx, agentTraces(failed("booking_flow", 0, 1, "no"), failed("tool_error", 0.5, 1, "err"))))
	require.Len(t, rec.requests(), 1)
	p := rec.payload(t, 0)
	require.Len(t, p.Alerts, 1)
	assert.Equal(t, "tool_error", p.Alerts[0].Evaluator)
}

func TestSignature(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Secret = configopaque.String("whsec_test_0123456789")
	clock := newFakeClock()
	h := start(t, cfg, clock.Now)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r"))))

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	ts := reqs[0].header.Get(HeaderTimestamp)
	assert.Equal(t, strconv.FormatInt(clock.Now().Unix(), 10), ts)
	mac := hmac.New(sha256.New, []byte("whsec_test_0123456789"))
	mac.Write([]byte(ts + "." + string(reqs[0].body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	got := reqs[0].header.Get(HeaderSignature)
	assert.True(t, hmac.Equal([]byte(want), []byte(got)), "signature %q, want %q", got, want)

	// A tampered body does not verify.
	mac = hmac.New(sha256.New, []byte("whsec_test_0123456789"))
	mac.Write([]byte(ts + "." + string(reqs[0].body) + " "))
	assert.NotEqual(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), got)
}

func TestRetryOn5xx(t *testing.T) {
	rec := newRecorder(t, status(http.StatusBadGateway), status(http.StatusGatewayTimeout), status(http.StatusInternalServerError))
	h := start(t, syncConfig(rec.srv.URL), nil)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r"))))

	reqs := rec.requests()
	require.Len(t, reqs, 4, "three failures then success")
	for i := 1; i < len(reqs); i++ {
		assert.Equal(t, string(reqs[0].body), string(reqs[i].body), "retries resend the same payload")
	}
	assert.Equal(t, int64(3), h.counter(t, "otelcol_exporter_webhook_send_failures", failureRetryable))
	assert.Equal(t, int64(1), h.counter(t, "otelcol_exporter_webhook_alerts_sent", ""))
}

func TestRetryOnNetworkError(t *testing.T) {
	rec := newRecorder(t)
	rec.srv.Close()
	cfg := syncConfig(rec.srv.URL)
	cfg.RetryConfig.MaxElapsedTime = 200 * time.Millisecond
	h := start(t, cfg, nil)
	err := h.inner.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r")))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.GreaterOrEqual(t, h.counter(t, "otelcol_exporter_webhook_send_failures", failureNetwork), int64(2), "retried")
}

func TestThrottleHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		header func() string
	}{
		{"429 seconds", http.StatusTooManyRequests, func() string { return "1" }},
		// An HTTP date has one-second resolution: 3s ahead is at least 2s away.
		{"503 http-date", http.StatusServiceUnavailable, func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, status(tc.code, "Retry-After", tc.header()))
			h := start(t, syncConfig(rec.srv.URL), nil)
			require.NoError(t, h.exp.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r"))))
			reqs := rec.requests()
			require.Len(t, reqs, 2, "one throttled attempt, then success")
			// The backoff alone is 10ms; Retry-After asks for a second or more.
			assert.GreaterOrEqual(t, reqs[1].at.Sub(reqs[0].at), 900*time.Millisecond)
			assert.Equal(t, int64(1), h.counter(t, "otelcol_exporter_webhook_send_failures", failureThrottled))
		})
	}
}

func TestPermanent4xx(t *testing.T) {
	body := `{"error":"unknown channel"}` + strings.Repeat("x", 1000)
	rec := newRecorder(t, statusBody(http.StatusBadRequest, body))
	h := start(t, syncConfig(rec.srv.URL), nil)
	err := h.inner.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r")))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "400")
	assert.Len(t, rec.requests(), 1, "no retry")

	// Logged once, by exporterhelper, with the status and the excerpt.
	entries := h.logs.FilterLevelExact(zapcore.ErrorLevel).All()
	require.Len(t, entries, 1, "one error line: %v", entries)
	assert.Contains(t, entries[0].Message, "Exporting failed")
	logged, _ := entries[0].ContextMap()["error"].(string)
	assert.Contains(t, logged, "HTTP 400")
	assert.Contains(t, logged, `{\"error\":\"unknown channel\"}`)
	assert.Less(t, len(err.Error()), 512, "error quotes a bounded excerpt")
	assert.Equal(t, int64(1), h.counter(t, "otelcol_exporter_webhook_send_failures", failurePermanent))
	assert.Equal(t, int64(1), testkit.IntSumOrZero(t, h.tel, "otelcol_exporter_webhook_alerts_dropped", "reason", dropRejected))
}

func TestSecretNeverLeaks(t *testing.T) {
	const secret = "whsec_SUPER_secret_value_42"
	for _, tc := range []struct {
		name   string
		closed bool
		answer func(w http.ResponseWriter)
	}{
		{name: "401", answer: statusBody(http.StatusUnauthorized, "bad signature")},
		{name: "network", closed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.answer)
			if tc.closed {
				rec.srv.Close()
			}
			cfg := syncConfig(rec.srv.URL)
			cfg.Secret = configopaque.String(secret)
			cfg.RetryConfig.MaxElapsedTime = 100 * time.Millisecond
			h := start(t, cfg, nil)
			err := h.inner.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r")))
			require.Error(t, err)
			assert.NotContains(t, err.Error(), secret)
			require.NotZero(t, h.logs.Len(), "something was logged")
			for _, e := range h.logs.All() {
				assert.NotContains(t, e.Message, secret)
				for k, v := range e.ContextMap() {
					assert.NotContains(t, k+"="+toString(v), secret)
				}
			}
			// The config itself prints redacted.
			assert.NotContains(t, toString(*cfg), secret)
		})
	}
}

func TestCapabilitiesAndNoMutation(t *testing.T) {
	rec := newRecorder(t)
	h := start(t, syncConfig(rec.srv.URL), nil)
	assert.False(t, h.exp.Capabilities().MutatesData)
	td := agentTraces(failed("booking_flow", 0.5, 1, "r"))
	td.MarkReadOnly()
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), td))
	assert.Len(t, rec.requests(), 1)
}

func evaluators_skipped(name string) evaluatorsResult {
	return evaluatorsResult{Name: name, Status: "skipped", Reason: "no expectation"}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func toString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b) + " " + strings.TrimSpace(fmtAny(v))
}

func TestSlackSuppressedAndCap(t *testing.T) {
	score := 0.25
	p := Payload{Suppressed: 3, SuppressedByEvaluator: map[string]int{"a": 2, "b": 1}}
	for i := 0; i < 25; i++ {
		p.Alerts = append(p.Alerts, Alert{Evaluator: "e" + strconv.Itoa(i), Score: &score, TraceID: traceHex})
	}
	body, err := slackEncoder{}.encode(p)
	require.NoError(t, err)
	var msg struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(body, &msg))
	assert.Contains(t, msg.Text, "25 failed evaluations")
	assert.Contains(t, msg.Text, "+3 suppressed")
	assert.LessOrEqual(t, len(msg.Blocks), 50, "Slack's block limit")
	assert.Contains(t, string(body), "…and 5 more")
	assert.Contains(t, string(body), "3 more failed evaluations suppressed by rate limit: a=2, b=1")
	assert.Contains(t, string(body), "n/a", "missing threshold")
}

// A Slack incoming-webhook URL is a credential in its path: a network error
// (logged by exporterhelper, returned to the pipeline) must not carry it.
func TestNetworkErrorDoesNotEchoEndpointPath(t *testing.T) {
	const token = "T000/B000/XXXXsecretXXXX"
	rec := newRecorder(t)
	rec.srv.Close()
	cfg := syncConfig(rec.srv.URL + "/services/" + token)
	cfg.RetryConfig.MaxElapsedTime = 100 * time.Millisecond
	h := start(t, cfg, nil)
	err := h.inner.ConsumeTraces(context.Background(), agentTraces(failed("booking_flow", 0.5, 1, "r")))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.NotContains(t, err.Error(), "secret")
	assert.Contains(t, err.Error(), strings.TrimPrefix(rec.srv.URL, "http://"), "the host is still named")
	for _, e := range h.logs.All() {
		assert.NotContains(t, e.Message, "secret")
		for k, v := range e.ContextMap() {
			assert.NotContains(t, k+"="+toString(v), "secret")
		}
	}
}
