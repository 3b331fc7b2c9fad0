package evalprocessor

import (
	"context"
	"hash/fnv"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// Quality-aware sampling (docs/contract.md §19): once a trace is scored,
// a share of it, by outcome, is forwarded; the rest is dropped whole (its
// held spans and log records, and its spans that arrive late). Its result
// log records go on either way, so the evalmetrics connector counts every
// result. The decision hashes the trace id alone: every collector of a
// fleet makes the same one.

// sampleOutcome is what a trace's results say, for sampling. The zero
// value is unscored (no result: no case, all skipped, overflow, shutdown).
type sampleOutcome uint8

const (
	outcomeUnscored sampleOutcome = iota
	outcomePassed
	outcomeFailed
)

// outcomeOf is failed when any result failed, errored or timed out, passed
// when some passed and none of those, unscored otherwise.
func outcomeOf(rep engine.Report) sampleOutcome {
	o := outcomeUnscored
	for i := range rep.Evaluations {
		for _, r := range rep.Evaluations[i].Results {
			switch r.Status {
			case evaluators.StatusFailed, evaluators.StatusError, evaluators.StatusTimeout:
				return outcomeFailed
			case evaluators.StatusPassed:
				o = outcomePassed
			}
		}
	}
	return o
}

// Values of the decision attribute of otelcol_processor_eval_traces_sampled.
const (
	decisionForwarded = "forwarded"
	decisionDropped   = "dropped"

	metricTracesSampled = "otelcol_processor_eval_traces_sampled"
)

// sampler decides and remembers the dropped trace ids while their late
// spans may still come (as long as released ids are remembered).
type sampler struct {
	all       bool
	below     [3]uint64 // by outcome: forwarded when hash < below
	retention time.Duration

	counter metric.Int64Counter
	opts    [2]metric.MeasurementOption // forwarded, dropped

	n       atomic.Int64 // len(dropped), read without the lock
	mu      sync.RWMutex
	dropped map[pcommon.TraceID]struct{}
	order   []droppedID // oldest first
}

type droppedID struct {
	id    pcommon.TraceID
	until time.Time
}

// samplingSalt keeps the sampling decision independent of an evaluator's
// sample_rate (which hashes the bare trace id): with both at 0.1 the
// forwarded passing traces are not exactly those that evaluator scored.
var samplingSalt = []byte("evalbridge.sampling")

func newSampler(cfg engine.SamplingConfig, retention time.Duration, counter metric.Int64Counter) *sampler {
	s := &sampler{all: cfg.All(), retention: retention, dropped: map[pcommon.TraceID]struct{}{}, counter: counter}
	for o, share := range map[sampleOutcome]float64{outcomeFailed: cfg.Failed, outcomePassed: cfg.Passed, outcomeUnscored: cfg.Unscored} {
		switch {
		case share >= 1:
			s.below[o] = math.MaxUint64
		case share > 0:
			s.below[o] = uint64(share * math.MaxUint64)
		}
	}
	s.opts[0] = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionForwarded)))
	s.opts[1] = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionDropped)))
	return s
}

// keep decides whether a released trace with that outcome is forwarded.
func (s *sampler) keep(id pcommon.TraceID, o sampleOutcome) bool {
	if s.all || s.below[o] == math.MaxUint64 {
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write(samplingSalt)
	_, _ = h.Write(id[:])
	return h.Sum64() < s.below[o]
}

// remember records id as dropped at now, and forgets the ids whose
// retention has passed (or the oldest beyond maxRememberedIDs).
func (s *sampler) remember(id pcommon.TraceID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.order) && (now.After(s.order[i].until) || len(s.order)-i >= maxRememberedIDs) {
		delete(s.dropped, s.order[i].id)
		i++
	}
	if i > 0 {
		s.order = append(s.order[:0], s.order[i:]...)
	}
	if _, ok := s.dropped[id]; !ok {
		s.dropped[id] = struct{}{}
		s.order = append(s.order, droppedID{id: id, until: now.Add(s.retention)})
	}
	s.n.Store(int64(len(s.dropped)))
}

// dropLate returns td without the spans of dropped traces; td itself is
// never written (a copy is made when something is removed). n counts the
// spans removed.
func (s *sampler) dropLate(td ptrace.Traces) (out ptrace.Traces, n int) {
	if s.n.Load() == 0 {
		return td, 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	found := false
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len() && !found; i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len() && !found; j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if _, ok := s.dropped[spans.At(k).TraceID()]; ok {
					found = true
					break
				}
			}
		}
	}
	if !found {
		return td, 0
	}
	out = ptrace.NewTraces()
	td.CopyTo(out)
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool {
				_, drop := s.dropped[sp.TraceID()]
				if drop {
					n++
				}
				return drop
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return out, n
}

// sampledOut is the hook at the release point (forwardReleased): it
// decides a released trace's fate and, when it is dropped, forwards only
// its result log records, frees its storage, and leaves its group. It
// returns false when the trace is to be forwarded as usual.
func (p *evalProcessor) sampledOut(t *heldTrace, g *group) bool {
	s := p.sampling
	if s == nil || t.spans == 0 { // only GenAI log records: not a trace to sample
		return false
	}
	ctx := context.Background()
	if s.keep(t.id, t.outcome) {
		s.counter.Add(ctx, 1, s.opts[0])
		return false
	}
	s.counter.Add(ctx, 1, s.opts[1])
	s.remember(t.id, p.clk.now())
	// The held log records go with the trace; the results do not.
	var keys []string
	for _, lp := range t.logParts {
		if lp.key != "" {
			keys = append(keys, lp.key)
		}
	}
	t.logParts, t.records, t.logCount = nil, nil, 0
	p.forwardLogs(t, t.results, t.resultN)
	for _, pt := range t.parts {
		if pt.key != "" {
			keys = append(keys, pt.key)
		}
	}
	p.removeKeys(keys)
	t.parts = nil
	if g != nil {
		g.leave()
	}
	return true
}
