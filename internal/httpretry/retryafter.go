// Package httpretry holds what every evalbridge client of a user-configured
// HTTP endpoint (the judge client, the remote evaluator, the webhook
// exporter) shares about retrying: the one Retry-After parser.
package httpretry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSeconds keeps a huge delay-seconds value from overflowing a Duration.
const maxSeconds = float64(math.MaxInt64 / int64(time.Second))

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3):
// delay-seconds (a fraction is accepted too, as some servers send one) or an
// HTTP date, relative to now. Zero means none, or one that could not be
// read, negative or in the past: the caller then uses its backoff.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) || math.IsInf(s, 0) {
			return 0
		}
		return time.Duration(min(s, maxSeconds) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
