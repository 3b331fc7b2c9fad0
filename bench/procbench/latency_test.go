package procbench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

// BenchmarkStreamLatency is what mode: stream adds to a span's way
// through the collector (docs/contract.md §26: at most 1 ms at p99): the
// time from ConsumeTraces being called with a request of 50 agent traces
// (500 spans, an SDK's batch) until the next consumer has it, sent at 50
// requests a second (25,000 spans/s) while the workers score what came
// before, against the same requests handed straight to the next consumer
// ([batch]'s ConsumeTraces only queues). It reports the p50, p99 and max
// of each, in µs, and p99 added; and the p99 of the whole call in stream
// mode (it compresses what it keeps after the request went on).
//
//	go test -run '^$' -bench StreamLatency -benchtime 2000x ./bench/procbench
func BenchmarkStreamLatency(b *testing.B) {
	tmpl := agentTemplate()
	var durs [2][]time.Duration
	var calls []time.Duration
	for side, newProc := range []func(testing.TB, consumer.Traces) processor.Traces{newPassThrough, newStreamEval} {
		sink := &arrivalSink{}
		p := newProc(b, sink)
		var seq uint64
		reqs := make([]ptrace.Traces, b.N)
		for i := range reqs {
			reqs[i] = makeTraces(tmpl, &seq, 50)
		}
		require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
		tick := time.NewTicker(20 * time.Millisecond)
		b.ResetTimer()
		for i := range reqs {
			<-tick.C
			sink.expect(reqs[i].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID())
			start := time.Now()
			require.NoError(b, p.ConsumeTraces(context.Background(), reqs[i]))
			if side == 1 {
				calls = append(calls, time.Since(start))
			}
			durs[side] = append(durs[side], sink.arrived().Sub(start))
			reqs[i] = ptrace.Traces{}
		}
		b.StopTimer()
		tick.Stop()
		require.NoError(b, p.Shutdown(context.Background()))
	}
	pct := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds())
	}
	b.ReportMetric(pct(durs[0], 0.5), "pass-p50-µs")
	b.ReportMetric(pct(durs[0], 0.99), "pass-p99-µs")
	b.ReportMetric(pct(durs[1], 0.5), "stream-p50-µs")
	b.ReportMetric(pct(durs[1], 0.99), "stream-p99-µs")
	b.ReportMetric(pct(durs[1], 1), "stream-max-µs")
	b.ReportMetric(pct(durs[1], 0.99)-pct(durs[0], 0.99), "p99-added-µs")
	b.ReportMetric(pct(calls, 0.99), "stream-call-p99-µs")
}

// arrivalSink notes when the request being measured (its first span's
// trace id) reached it; result spans, which the workers send meanwhile,
// are not it.
type arrivalSink struct {
	mu   sync.Mutex
	want pcommon.TraceID
	at   time.Time
}

func (s *arrivalSink) expect(id pcommon.TraceID) {
	s.mu.Lock()
	s.want, s.at = id, time.Time{}
	s.mu.Unlock()
}

func (s *arrivalSink) arrived() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

func (s *arrivalSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }
func (s *arrivalSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	now := time.Now()
	first := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	s.mu.Lock()
	if s.at.IsZero() && first.TraceID() == s.want && first.Name() != "evaluation" {
		s.at = now
	}
	s.mu.Unlock()
	return nil
}

// newPassThrough hands every request straight to next.
func newPassThrough(_ testing.TB, next consumer.Traces) processor.Traces {
	return passThrough{next}
}

type passThrough struct{ consumer.Traces }

func (passThrough) Start(context.Context, component.Host) error { return nil }
func (passThrough) Shutdown(context.Context) error              { return nil }
