package judge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// The pieces of the judge client's HTTP handling that other clients of
// user-configured endpoints (the `remote` evaluator) share: which replies
// are worth retrying and the backoff (the client, its redirect policy and
// redaction: internal/httpclient; Retry-After: internal/httpretry).

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

// IsTimeout reports a transport timeout (the client's `timeout`).
func IsTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
