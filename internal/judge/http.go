package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
)

// The pieces of the judge client's HTTP handling that other clients of
// user-configured endpoints (the `remote` evaluator) share: the client's
// lifecycle, which replies are worth retrying, the backoff and keeping
// secrets out of errors (Retry-After: internal/httpretry).

// HTTPClient is the HTTP client of a confighttp config, built at Start with
// the host's extensions (auth) and closed at Shutdown. It is safe for
// concurrent use; Get returns nil before Start and after Close.
type HTTPClient struct {
	mu sync.Mutex
	hc *http.Client
}

// Start builds the client. host may be nil (evalctl has none). redact
// keeps secrets out of the error.
func (h *HTTPClient) Start(ctx context.Context, cc *confighttp.ClientConfig, host component.Host,
	set component.TelemetrySettings, redact func(string) string,
) error {
	var ext map[component.ID]component.Component
	if host != nil {
		ext = host.GetExtensions()
	}
	hc, err := cc.ToClient(ctx, ext, set)
	if err != nil {
		return errors.New(redact(err.Error()))
	}
	h.mu.Lock()
	h.hc = hc
	h.mu.Unlock()
	return nil
}

// Get is the client, nil when not started.
func (h *HTTPClient) Get() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hc
}

// Close closes idle connections; safe without Start and twice.
func (h *HTTPClient) Close() {
	h.mu.Lock()
	hc := h.hc
	h.hc = nil
	h.mu.Unlock()
	if hc != nil {
		hc.CloseIdleConnections()
	}
}

// randomizationFactor spreads each backoff over [d·(1-f), d·(1+f)], as the
// collector's configretry does for the webhook exporter (its default factor,
// backoff.DefaultRandomizationFactor), so that the evaluations that failed
// together (a judge's outage) do not all retry at the same instant.
const randomizationFactor = 0.5

// jitter is a uniform number in [0, 1); tests replace it.
var jitter = defaultJitter

var defaultJitter = rand.Float64

// Backoff is the wait before the attempt after `attempt`: InitialBackoff
// doubled per attempt, randomised by ±randomizationFactor, at most
// MaxBackoff.
func (r RetryConfig) Backoff(attempt int) time.Duration {
	d := r.InitialBackoff
	for i := 1; i < attempt && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	spread := randomizationFactor * float64(d)
	d = time.Duration(float64(d) - spread + jitter()*2*spread)
	return min(d, r.MaxBackoff)
}

// NextWait is the wait before the attempt after `attempt`: the server's
// Retry-After when it gave one (429, 503), else the backoff. fits is false
// when the next attempt would start after ctx's deadline: not worth making.
func (r RetryConfig) NextWait(ctx context.Context, attempt int, retryAfter time.Duration) (wait time.Duration, fits bool) {
	wait = r.Backoff(attempt)
	if retryAfter > 0 {
		wait = retryAfter
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return wait, false
	}
	return wait, true
}

// PastDeadline says why a retry that NextWait refused was not made.
func PastDeadline(wait time.Duration) string {
	return fmt.Sprintf("the next attempt would start after %v, past the evaluation's deadline", wait.Round(time.Millisecond))
}

// RetryableStatus says whether an HTTP status is worth another attempt, and
// whether the reply's Retry-After header says when (429 and 503).
func RetryableStatus(code int) (retry, retryAfter bool) {
	switch code {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true, true
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return true, false
	}
	return false, false
}

// Redact removes the API key and header values from text that may come
// from the transport or the server (an error, an echoed body). Header values
// shorter than 4 bytes are left alone: replacing them would mangle the text
// and they are no secret worth the name.
func Redact(s string, apiKey configopaque.String, headers configopaque.MapList) string {
	// A secret echoed inside JSON may appear escaped ("\u0026", "\/"):
	// both forms go.
	secret := func(v string) {
		s = strings.ReplaceAll(s, v, "[REDACTED]")
		if b, err := json.Marshal(v); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != v {
				s = strings.ReplaceAll(s, esc, "[REDACTED]")
			}
		}
	}
	if k := string(apiKey); k != "" {
		secret(k)
	}
	for _, h := range headers {
		if v := string(h.Value); len(v) >= 4 {
			secret(v)
		}
	}
	return s
}

// IsTimeout reports a transport timeout (the client's `timeout`).
func IsTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
