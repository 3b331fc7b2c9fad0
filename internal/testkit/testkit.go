// Package testkit holds what the module's tests share, so that a test
// helper is written once:
//
//   - StartCollector / RunCollector: a real collector for the length of a
//     test; Config renders a collector config kept as testdata/*.yaml (a
//     text/template: {{.Name}} fields for what the test picks when it runs,
//     the collector's own ${env:NAME} left alone).
//   - Sink: an OTLP/HTTP backend that keeps the traces, logs and metrics it
//     receives (through internal/otlphttpbody).
//   - Scrape: a Prometheus text exposition (samples, types, totals);
//     IntSum, IntSumOrZero, HistogramCount, PointsSum: a component's test
//     telemetry (componenttest).
//   - ReadTraces, ReadLogs: OTLP/JSON files such as examples/traces.
//   - FreeAddr, LockedBuffer, ForEachSpan, ForEachLogRecord, ForEachMetric.
package testkit

import (
	"bytes"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// LockedBuffer collects a child process's output for a failure message
// while the process still writes.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ForEachSpan calls f with every span of td, in order.
func ForEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				f(sp)
			}
		}
	}
}
