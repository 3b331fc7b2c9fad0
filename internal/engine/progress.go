package engine

import (
	"sync"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
)

// Progress is one trace's scoring as it goes, for a caller that may have
// to take the trace back before ScoreTraceAsync is done: an evaluator that
// ignores its context holds the goroutine past the trace's deadline
// (docs/contract.md §5: the trace goes on "with what finished"). The
// caller passes it in ScoreOptions; TakeOver returns the results that
// finished, the rest `timeout`, and from then on the engine neither
// records results nor reads the trace's spans again.
type Progress struct {
	mu sync.Mutex
	// taken: the caller took the trace over; syncDone: the deterministic
	// part is over and judge tasks (which finish the trace themselves at
	// the deadline) may be running: too late to take over.
	taken, syncDone bool

	e     *Engine
	cases []adapter.Case
	spans []adapter.SpanRef
	next  int // the index in cases of the first case not reached yet
	// all are the cases scored so far (the engine's slice, up to the last
	// case reached)
	all []scoredCase
}

// NewProgress returns an empty Progress.
func NewProgress() *Progress { return &Progress{} }

// Partial is the results of one case when the trace was taken over.
type Partial struct {
	Ref     adapter.SpanRef
	Case    *adapter.Case
	Results []evaluators.Result
}

// TakeOver stops the engine's work on the trace and returns what finished,
// every evaluator still running or not yet run being `timeout` (for cases
// not reached yet: the evaluators their level and sample rate select,
// those with `when` conditions left out, as evaluating them would read the
// spans). ok is false when it is too late (the deterministic part is over:
// the engine finishes the trace itself at the deadline); the caller then
// leaves the trace to it.
func (p *Progress) TakeOver() (out []Partial, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.syncDone || p.taken {
		return nil, false
	}
	p.taken = true
	for k := range p.all {
		sc := &p.all[k]
		res := make([]evaluators.Result, len(sc.results))
		for k, r := range sc.results {
			if r.Status == "" {
				r = timeoutResult(sc.insts[k])
			}
			res[k] = r
		}
		// written back by the caller: masked like every result
		// (docs/contract.md §20)
		if p.e != nil {
			p.e.redactResults(res)
		}
		out = append(out, Partial{Ref: sc.ref, Case: sc.c, Results: res})
	}
	if p.e == nil {
		return out, true
	}
	for i := p.next; i < len(p.cases); i++ {
		c := &p.cases[i]
		k := c.SpanIndex
		if k < 0 || k >= len(p.spans) || p.spans[k].Span.SpanID() != c.SpanID {
			continue
		}
		var res []evaluators.Result
		for j := range p.e.instances {
			in := &p.e.instances[j]
			if in.Level == c.Level && in.when == nil && in.sampled(c.TraceID) {
				res = append(res, timeoutResult(in))
			}
		}
		if len(res) > 0 {
			out = append(out, Partial{Ref: p.spans[k], Case: c, Results: res})
		}
	}
	return out, true
}

func timeoutResult(in *instance) evaluators.Result {
	return in.Stamp(evaluators.Result{Status: evaluators.StatusTimeout,
		Reason: "the evaluator was still running when the trace's evaluation timeout passed; the trace went on without it"})
}

// The engine's side; every method is a no-op on a nil Progress and says
// whether the engine may go on (false: the trace was taken over).

func (p *Progress) begin(e *Engine, cases []adapter.Case, spans []adapter.SpanRef) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.e, p.cases, p.spans = e, cases, spans
	return !p.taken
}

// reach records that the engine reached cases[i]; all are the cases scored
// so far, each element written before it is passed.
func (p *Progress) reach(i int, all []scoredCase) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = i + 1
	p.all = all
	return !p.taken
}

func (p *Progress) set(sc *scoredCase, k int, r evaluators.Result) bool {
	if p == nil {
		sc.results[k] = r
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return false
	}
	sc.results[k] = r
	return true
}

// done marks the deterministic part over; false when taken over before.
func (p *Progress) done() bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncDone = true
	return !p.taken
}
