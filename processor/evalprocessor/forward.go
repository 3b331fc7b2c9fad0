package evalprocessor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

const (
	// maxRequestSpans bounds the spans of one request of released spans:
	// the traces released together (one tick, one overflow, the shutdown
	// flush) go on in one ptrace.Traces request, cut at trace boundaries
	// when it would grow beyond this. A single larger trace goes alone.
	maxRequestSpans = 4096
	// maxBacklogSpans is the release backlog (released spans not yet
	// accepted by the next consumer) above which ConsumeTraces refuses new
	// GenAI spans with a retryable error: the receiver answers
	// 503/UNAVAILABLE and the sender retries (back-pressure, not loss).
	maxBacklogSpans = 4 * maxRequestSpans
	// shutdownRetryLimit bounds how long refused requests are retried at
	// shutdown (all of them together), even when the shutdown context has
	// no deadline; after it each request left is tried once.
	shutdownRetryLimit = 10 * time.Second
)

// errBackPressure is what ConsumeTraces returns while the release backlog is
// full. It is not permanent, so receivers answer 503 (HTTP) or UNAVAILABLE
// (gRPC) and OTLP senders retry.
var errBackPressure = errors.New("eval processor: released spans are waiting for the next consumer; retry later")

// backoff is the retry policy for refused releases: exponential from
// initial to max, each wait jittered to [d/2, 3d/2) and capped at max.
type backoff struct {
	initial, max time.Duration
}

var defaultBackoff = backoff{initial: 50 * time.Millisecond, max: 5 * time.Second}

func (b backoff) wait(d time.Duration) time.Duration {
	j := d/2 + time.Duration(rand.Int64N(int64(d)+1))
	return min(j, b.max)
}

// outItem is released spans, or released log records (when isLogs), ready
// to go on. spans counts the items either way.
type outItem struct {
	td     ptrace.Traces
	ld     plog.Logs
	isLogs bool
	spans  int
	// keys are the storage keys of the held chunks in it (storage:),
	// deleted once the next consumer has accepted it.
	keys []string
}

// forwarder hands released spans to the next consumer from one goroutine:
// it merges what is waiting into requests of at most maxRequestSpans, and
// retries a request the next consumer refuses with a retryable error (with
// backoff) before it sends anything else. Spans are dropped only when the
// next consumer refuses them permanently, or when shutdown's time is up;
// both are logged and counted.
type forwarder struct {
	p       *evalProcessor
	backoff backoff

	mu      sync.Mutex
	items   []outItem
	stopped bool // run has ended: push forwards at once
	backlog atomic.Int64
	// outage is set from the first retryable refusal to the next success:
	// one warning per outage, not one per request.
	outage atomic.Bool

	wake    chan struct{} // capacity 1
	stop    chan struct{} // closed by finish
	stopCtx context.Context
	// stopBy ends the retries at shutdown (see shutdownRetryLimit).
	stopBy time.Time
	exited chan struct{}
}

func newForwarder(p *evalProcessor, b backoff) *forwarder {
	return &forwarder{p: p, backoff: b, wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
}

// push queues released spans. It never blocks.
func (f *forwarder) push(td ptrace.Traces, spans int) {
	f.pushItem(outItem{td: td, spans: spans})
}

// pushHeld queues released held spans with their storage keys.
func (f *forwarder) pushHeld(td ptrace.Traces, spans int, keys []string) {
	f.pushItem(outItem{td: td, spans: spans, keys: keys})
}

// pushLogs queues released log records (held with their trace, and the
// results as log records). It never blocks. They share the span backlog
// and its retry: the logs pipeline's exporter fails like the traces one.
func (f *forwarder) pushLogs(ld plog.Logs, records int) {
	f.pushItem(outItem{ld: ld, isLogs: true, spans: records})
}

// pushLogsHeld queues released held log records with their storage keys.
func (f *forwarder) pushLogsHeld(ld plog.Logs, records int, keys []string) {
	f.pushItem(outItem{ld: ld, isLogs: true, spans: records, keys: keys})
}

func (f *forwarder) pushItem(it outItem) {
	spans := it.spans
	if spans == 0 {
		f.p.removeKeys(it.keys) // nothing left to deliver
		return
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		// Only a straggler gets here (the engine finishing a trace after
		// Shutdown); it is sent once, and its fate is counted.
		f.backlog.Add(int64(spans))
		f.p.tel.releaseBacklog.Add(context.Background(), int64(spans))
		f.send(it, true)
		return
	}
	f.items = append(f.items, it)
	f.mu.Unlock()
	f.backlog.Add(int64(spans))
	f.p.tel.releaseBacklog.Add(context.Background(), int64(spans))
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *forwarder) full() bool { return f.backlog.Load() > maxBacklogSpans }

// run is the forwarder's goroutine.
func (f *forwarder) run() {
	defer close(f.exited)
	for {
		select {
		case <-f.wake:
			f.drain(false)
		case <-f.stop:
			f.drain(true)
			return
		}
	}
}

// finish makes run deliver what is left, retrying while ctx (and
// shutdownRetryLimit) allows, and waits for it to end.
func (f *forwarder) finish(ctx context.Context) {
	f.stopCtx = ctx
	f.stopBy = time.Now().Add(shutdownRetryLimit)
	close(f.stop)
	<-f.exited
}

func (f *forwarder) drain(final bool) {
	for {
		f.mu.Lock()
		items := f.items
		f.items = nil
		if len(items) == 0 && final {
			f.stopped = true
		}
		f.mu.Unlock()
		if len(items) == 0 {
			return
		}
		for len(items) > 0 {
			req := items[0]
			items[0] = outItem{}
			items = items[1:]
			for len(items) > 0 && items[0].isLogs == req.isLogs && req.spans+items[0].spans <= maxRequestSpans {
				if req.isLogs {
					items[0].ld.ResourceLogs().MoveAndAppendTo(req.ld.ResourceLogs())
				} else {
					items[0].td.ResourceSpans().MoveAndAppendTo(req.td.ResourceSpans())
				}
				req.spans += items[0].spans
				req.keys = append(req.keys, items[0].keys...)
				items[0] = outItem{}
				items = items[1:]
			}
			final = f.send(req, final)
		}
	}
}

// send delivers one request, retrying retryable refusals. It returns
// whether it is now in shutdown mode.
func (f *forwarder) send(req outItem, final bool) bool {
	p := f.p
	defer func() {
		if f.backlog.Add(-int64(req.spans)) == 0 {
			p.refusedLogged.Store(false) // warn again in the next episode
		}
		p.tel.releaseBacklog.Add(context.Background(), -int64(req.spans))
	}()
	delay := f.backoff.initial
	retries := 0
	for {
		err := f.consume(req)
		if err == nil {
			if f.outage.CompareAndSwap(true, false) {
				p.logger.Info("next consumer accepted released spans after retries",
					zap.Int("spans", req.spans), zap.Int("retries", retries))
			}
			p.removeKeys(req.keys)
			return final
		}
		p.tel.nextConsumerErrors.Add(context.Background(), 1)
		if consumererror.IsPermanent(err) {
			p.tel.undelivered(context.Background(), reasonPermanent, req.spans)
			p.logger.Error("next consumer refused released spans permanently; they are dropped",
				zap.Int("spans", req.spans), zap.Error(err))
			p.removeKeys(req.keys) // restoring them would only be refused again
			return final
		}
		if f.outage.CompareAndSwap(false, true) {
			p.logger.Warn("next consumer refused released spans; retrying with backoff (new GenAI spans are refused while the backlog is full)",
				zap.Int("spans", req.spans), zap.Int64("backlog_spans", f.backlog.Load()), zap.Error(err))
		}
		if final {
			if f.stopCtx.Err() != nil || !time.Now().Before(f.stopBy) {
				p.tel.undelivered(context.Background(), reasonShutdown, req.spans)
				p.logger.Error("next consumer still refused released spans when shutdown's time was up; they are dropped (with storage: they stay in it and are restored on the next start)",
					zap.Int("spans", req.spans), zap.Int("retries", retries), zap.Error(err))
				return final
			}
		}
		retries++
		p.tel.releaseRetries.Add(context.Background(), 1)
		t := time.NewTimer(f.backoff.wait(delay))
		delay = min(2*delay, f.backoff.max)
		if final {
			select {
			case <-t.C:
			case <-f.stopCtx.Done():
			}
		} else {
			select {
			case <-t.C:
			case <-f.stop:
				final = true
			}
		}
		t.Stop()
	}
}

// consume calls the next consumer; a panic there is a permanent refusal
// (logged), not the end of the collector.
func (f *forwarder) consume(req outItem) (err error) {
	defer func() {
		if r := recover(); r != nil {
			first := ""
			if !req.isLogs {
				if rss := req.td.ResourceSpans(); rss.Len() > 0 {
					if sss := rss.At(0).ScopeSpans(); sss.Len() > 0 && sss.At(0).Spans().Len() > 0 {
						first = sss.At(0).Spans().At(0).TraceID().String()
					}
				}
			}
			f.p.logger.Error("next consumer panicked on released spans", zap.String("trace_id", first),
				zap.Int("spans", req.spans), zap.Any("panic", r), zap.Stack("stack"))
			err = consumererror.NewPermanent(fmt.Errorf("next consumer panicked: %v", r))
		}
	}()
	if req.isLogs {
		return f.p.nextLogs.ConsumeLogs(context.Background(), req.ld)
	}
	return f.p.next.ConsumeTraces(context.Background(), req.td)
}
