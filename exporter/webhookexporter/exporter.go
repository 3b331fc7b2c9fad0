package webhookexporter

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/httpclient"
	"github.com/evalbridge/evalbridge/internal/httpretry"
)

// Signature headers (docs/contract.md §9).
const (
	HeaderTimestamp = "X-Evalbridge-Timestamp"
	HeaderSignature = "X-Evalbridge-Signature"

	// maxBodyExcerpt bounds the response body quoted in errors and logs.
	maxBodyExcerpt = 256
)

type webhookExporter struct {
	cfg     *Config
	set     exporter.Settings
	logger  *zap.Logger
	now     func() time.Time
	enc     encoder
	allow   map[string]bool
	limiter *limiter
	tel     *telemetry
	mons    *monitors // nil without monitors
	client  *http.Client
	// secrets are the credentials (secret, header values, the endpoint's
	// userinfo and query) kept out of errors.
	secrets *httpclient.Secrets
	drops   dropLog
}

func newWebhookExporter(cfg *Config, set exporter.Settings, now func() time.Time) (*webhookExporter, error) {
	enc, err := newEncoder(cfg)
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	if enc, err = withRedaction(enc, cfg.Redaction, set.TelemetrySettings); err != nil {
		return nil, err
	}
	mons, err := newMonitors(cfg, set, now)
	if err != nil {
		return nil, err
	}
	var allow map[string]bool
	if len(cfg.Evaluators) > 0 {
		allow = make(map[string]bool, len(cfg.Evaluators))
		for _, n := range cfg.Evaluators {
			allow[n] = true
		}
	}
	return &webhookExporter{
		cfg:     cfg,
		set:     set,
		logger:  set.Logger,
		now:     now,
		enc:     enc,
		allow:   allow,
		limiter: newLimiter(cfg.MaxAlertsPerMinute, now),
		tel:     tel,
		mons:    mons,
		secrets: httpclient.NewSecrets(cfg.ClientConfig.Endpoint, cfg.ClientConfig.Headers, cfg.Secret),
	}, nil
}

func (e *webhookExporter) start(ctx context.Context, host component.Host) error {
	// A redirect to another scheme, host or port is refused: the headers
	// and the signed payload would go there.
	client, err := httpclient.New(ctx, &e.cfg.ClientConfig, host.GetExtensions(), e.set.TelemetrySettings, e.secrets)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	e.client = client
	return nil
}

// shutdown runs after exporterhelper has drained (or persisted) its queue.
// Suppressed counts that no later alert carried are logged, never lost
// silently: they live in memory only.
func (e *webhookExporter) shutdown(context.Context) error {
	if d := e.limiter.drain(); d.count > 0 {
		e.logger.Warn("Rate-limited webhook alerts were never reported: no alert was allowed after them before shutdown",
			zap.Int("suppressed", d.count), zap.String("by_evaluator", d.String()))
	}
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	return nil
}

func (e *webhookExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	// Split even without monitors: a persistent queue written while the
	// config had monitors may still hold notifications; they are delivered.
	notes, other := splitCarried(td, e.logger)
	var alerts []Alert
	if other && e.cfg.PerTraceAlerts {
		alerts = extractAlerts(td, e.allow, e.cfg.TraceURL)
	}
	if len(alerts) == 0 && len(notes) == 0 {
		return nil
	}
	var send []Alert
	res := &reservation{l: e.limiter}
	if len(alerts) > 0 {
		var suppressedNow int
		send, res, suppressedNow = e.limiter.reserve(alerts)
		if len(send) == 0 {
			e.tel.suppressed(ctx, suppressedNow)
			e.logger.Debug("Webhook alerts suppressed by max_alerts_per_minute", zap.Int("alerts", suppressedNow))
			if len(notes) == 0 {
				return nil
			}
			// The suppressed alerts are already pending; the notifications
			// go alone. (Only with batching can both share a push; if this
			// request is then retried, its alerts are counted suppressed
			// twice: a count, never a lost notification.)
			res = &reservation{l: e.limiter}
		}
	}
	p := Payload{Alerts: send, Monitors: notes}
	if len(send) > 0 {
		folded := res.folded()
		p.Suppressed = folded.count
		if folded.count > 0 {
			p.SuppressedByEvaluator = folded.byEvaluator
		}
	}
	body, err := e.enc.encode(p)
	if err != nil {
		res.cancel(true)
		e.tel.failed(ctx, failurePermanent)
		e.tel.dropped(ctx, len(send), dropRejected)
		return consumererror.NewPermanent(fmt.Errorf("webhook: encoding %s payload: %w", e.cfg.formatOrDefault(), err))
	}
	if err := e.send(ctx, body); err != nil {
		if consumererror.IsPermanent(err) {
			// The data is dropped by exporterhelper; the suppressed counts
			// it carried (and its own excess) go back to pending.
			res.cancel(true)
			e.tel.dropped(ctx, len(send), dropRejected)
		} else {
			// Retried with the same data: decide afresh then.
			res.cancel(false)
		}
		return err
	}
	e.tel.sent(ctx, len(send))
	e.tel.suppressed(ctx, res.excess.count)
	if e.mons != nil {
		for i := range notes {
			if m := e.mons.byName[notes[i].Monitor]; m != nil {
				m.tel.sent(ctx, 1)
			}
		}
	}
	return nil
}

func (e *webhookExporter) send(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.ClientConfig.Endpoint, bytes.NewReader(body))
	if err != nil {
		e.tel.failed(ctx, failurePermanent)
		return consumererror.NewPermanent(fmt.Errorf("webhook: building request: %w", err))
	}
	req.Header.Set("Content-Type", e.enc.contentType())
	if e.set.BuildInfo.Command != "" {
		req.Header.Set("User-Agent", e.set.BuildInfo.Command+"/"+e.set.BuildInfo.Version)
	}
	if e.cfg.Secret != "" {
		ts := strconv.FormatInt(e.now().Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign([]byte(e.cfg.Secret), ts, body))
	}

	resp, err := e.client.Do(req)
	if err != nil {
		e.tel.failed(ctx, failureNetwork)
		// *url.Error quotes the whole endpoint; a Slack incoming-webhook URL
		// is itself the secret, and this error is logged by exporterhelper.
		redirect := httpclient.IsRedirect(err)
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %s: %s", ue.Op, redactedEndpoint(req.URL), e.secrets.Redact(ue.Err.Error()))
		} else {
			err = errors.New(e.secrets.Redact(err.Error()))
		}
		if redirect {
			// Another host will not be tried again by a retry.
			return consumererror.NewPermanent(fmt.Errorf("webhook: sending request: %w", err))
		}
		return fmt.Errorf("webhook: sending request: %w", err)
	}
	excerpt := readExcerpt(resp.Body, e.secrets)
	_ = resp.Body.Close()

	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		return nil
	}
	statusErr := fmt.Errorf("webhook: endpoint answered HTTP %d: %q", code, excerpt)
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		e.tel.failed(ctx, failureThrottled)
		return exporterhelper.NewThrottleRetry(statusErr, httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), e.now()))
	case code >= 500:
		// 502, 504 and other server errors: retry with backoff.
		e.tel.failed(ctx, failureRetryable)
		return statusErr
	default:
		e.tel.failed(ctx, failurePermanent)
		// Not logged here: exporterhelper logs every error it is handed
		// ("Exporting failed. Rejecting data."), and statusErr carries the
		// status and the bounded body excerpt.
		return consumererror.NewPermanent(statusErr)
	}
}

// redactedEndpoint is the endpoint without path, query and user info: enough
// to tell which endpoint failed, nothing that may be a credential.
func redactedEndpoint(u *url.URL) string {
	return u.Scheme + "://" + u.Host + "/…"
}

// Sign returns the X-Evalbridge-Signature value for body sent at ts (unix
// seconds): "sha256=" + hex(HMAC-SHA256(secret, ts + "." + body)).
func Sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// readExcerpt reads (a bounded amount of) a response body, so the
// connection can be reused, and returns at most maxBodyExcerpt bytes of it,
// redacted before it is clipped: an echoed credential crossing the cut
// would escape a redaction of the excerpt.
func readExcerpt(r io.Reader, s *httpclient.Secrets) string {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil && !errors.Is(err, io.EOF) && len(b) == 0 {
		return ""
	}
	return truncate(s.Redact(string(b)), maxBodyExcerpt)
}
