package testkit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/otlphttpbody"
)

// Sink is an OTLP/HTTP backend (protobuf, gzip or not) that keeps every
// traces, logs and metrics request it receives, in arrival order. Paths
// other than /v1/traces, /v1/logs and /v1/metrics (after an optional
// prefix, as an exporter's endpoint sets it) answer 404.
type Sink struct {
	URL string // the server's base URL, for an exporter's endpoint

	mu      sync.Mutex
	traces  []ptrace.Traces
	logs    []plog.Logs
	metrics []pmetric.Metrics
}

// NewSink starts a Sink on loopback until the test ends.
func NewSink(t testing.TB) *Sink {
	t.Helper()
	s := &Sink{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; {
	case strings.HasSuffix(path, "/v1/traces"):
		keep(s, w, r, otlphttpbody.Traces, &s.traces)
	case strings.HasSuffix(path, "/v1/logs"):
		keep(s, w, r, otlphttpbody.Logs, &s.logs)
	case strings.HasSuffix(path, "/v1/metrics"):
		keep(s, w, r, otlphttpbody.Metrics, &s.metrics)
	default:
		http.NotFound(w, r)
	}
}

// keep reads one export request with read and appends it to kept.
func keep[T any](s *Sink, w http.ResponseWriter, r *http.Request, read func(http.ResponseWriter, *http.Request) (T, bool), kept *[]T) {
	data, ok := read(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	*kept = append(*kept, data)
	s.mu.Unlock()
	otlphttpbody.Accept(w)
}

// Traces is every traces request received so far.
func (s *Sink) Traces() []ptrace.Traces {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ptrace.Traces(nil), s.traces...)
}

// Logs is every logs request received so far.
func (s *Sink) Logs() []plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.Logs(nil), s.logs...)
}

// Metrics is every metrics request received so far.
func (s *Sink) Metrics() []pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.metrics...)
}

// Spans is every span received so far, in arrival order.
func (s *Sink) Spans() []ptrace.Span {
	var out []ptrace.Span
	for _, td := range s.Traces() {
		ForEachSpan(td, func(sp ptrace.Span) { out = append(out, sp) })
	}
	return out
}

// SpanCount is how many spans arrived, copies included.
func (s *Sink) SpanCount() int { return len(s.Spans()) }

// Span is the last span received with that name.
func (s *Sink) Span(name string) (ptrace.Span, bool) {
	var found ptrace.Span
	ok := false
	for _, sp := range s.Spans() {
		if sp.Name() == name {
			found, ok = sp, true
		}
	}
	return found, ok
}

// ForEachLogRecord calls f with every log record of ld, in order.
func ForEachLogRecord(ld plog.Logs, f func(plog.LogRecord)) {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				f(lr)
			}
		}
	}
}

// ForEachMetric calls f with every metric of md, in order.
func ForEachMetric(md pmetric.Metrics, f func(pmetric.Metric)) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				f(m)
			}
		}
	}
}

// LastMetric is the latest metric received with that name.
func (s *Sink) LastMetric(name string) (pmetric.Metric, bool) {
	var found pmetric.Metric
	ok := false
	for _, md := range s.Metrics() {
		ForEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == name {
				found, ok = m, true
			}
		})
	}
	return found, ok
}
