package evalprocessor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/config/configretry"
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

// outItem is released spans, or released log records (when isLogs), ready
// to go on through route. n counts the items either way.
type outItem struct {
	route  route
	td     ptrace.Traces
	shared []*sharedResource // td's (ld's) shared resources, until whole (sharedres.go)
	ld     plog.Logs
	isLogs bool
	n      int
	// keys are the storage keys of the held chunks in it (storage:),
	// deleted once the next consumer has accepted it.
	keys []string
}

// whole copies the shared resources into the request's ResourceSpans (or
// ResourceLogs) before it leaves the processor.
func (it *outItem) whole() {
	switch {
	case it.shared == nil:
	case it.isLogs:
		materializeLogs(it.ld, it.shared)
	default:
		materialize(it.td, it.shared)
	}
	it.shared = nil
}

// group is the traces released together (one tick, one overflow, the
// shutdown flush). Each trace joins it once forwarded; once all have (or
// have left it to wait for a judge), they go on as one request per route,
// cut at maxRequestSpans.
type group struct {
	f       *forwarder
	mu      sync.Mutex
	pending int
	out     []routedTraces
}

// leave takes a trace out of the group: it goes on by itself later.
func (g *group) leave() { g.add(nil) }

// add gives the group one trace's spans, by route.
func (g *group) add(rts []routedTraces) {
	var flush []routedTraces
	g.mu.Lock()
	for _, rt := range rts {
		if rt.n == 0 {
			flush = append(flush, rt) // storage keys only
			continue
		}
		i := 0
		for i < len(g.out) && g.out[i].route != rt.route {
			i++
		}
		if i == len(g.out) {
			g.out = append(g.out, routedTraces{route: rt.route})
		}
		o := &g.out[i]
		if o.n > 0 && o.n+rt.n > maxRequestSpans {
			flush = append(flush, *o)
			*o = routedTraces{route: rt.route}
		}
		o.merge(rt)
	}
	g.pending--
	if g.pending == 0 {
		for _, o := range g.out {
			if o.n > 0 {
				flush = append(flush, o)
			}
		}
		g.out = nil
	}
	g.mu.Unlock()
	for _, o := range flush {
		g.f.pushTraces(o)
	}
}

// retrying is a request the next consumer refused with a retryable error,
// waiting for its next attempt. Only the forwarder's goroutine touches it.
type retrying struct {
	outItem
	first   time.Time
	due     time.Time
	delay   time.Duration
	retries int
}

// forwarder hands released data to the next consumers from one goroutine:
// it merges what is waiting into requests of at most maxRequestSpans per
// route, and sends each once. A request refused with a retryable error is
// set aside and retried on its own schedule (release_retry) while newer
// requests go on: one refused release never holds back another. Data is
// dropped only when release_retry gives up, when the next consumer refuses
// it permanently, or when shutdown's time is up; each is logged and counted.
type forwarder struct {
	routes *routes
	tel    *telemetry
	logger *zap.Logger
	retry  configretry.BackOffConfig
	// removeKeys deletes the storage keys of data delivered (or dropped
	// for good).
	removeKeys func([]string)

	mu      sync.Mutex
	items   []outItem
	stopped bool // run has ended: push forwards at once
	backlog atomic.Int64
	// outage is set from the first retryable refusal to the moment no
	// request waits for a retry: one warning per outage.
	outage atomic.Bool
	// refusedLogged is set from the first refusal of new GenAI data
	// (back-pressure) to the moment the backlog is empty: one warning per
	// episode.
	refusedLogged atomic.Bool

	wake    chan struct{} // capacity 1
	stop    chan struct{} // closed by finish
	stopCtx context.Context
	// stopBy ends the retries at shutdown (see shutdownRetryLimit).
	stopBy time.Time
	exited chan struct{}

	// waiting are the refused requests (the goroutine's own).
	waiting []*retrying
}

func newForwarder(rs *routes, tel *telemetry, logger *zap.Logger, retry configretry.BackOffConfig, removeKeys func([]string)) *forwarder {
	return &forwarder{routes: rs, tel: tel, logger: logger, retry: retry, removeKeys: removeKeys,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
}

// pushTraces queues a released trace's spans for its route. It never
// blocks. Without spans it only deletes the keys.
func (f *forwarder) pushTraces(rt routedTraces) {
	f.pushItem(outItem{route: rt.route, td: rt.data, n: rt.n, keys: rt.keys, shared: rt.shared})
}

// pushLogs queues released log records (held with their trace, and the
// results as log records) for route r. They share the backlog and its
// retry: the logs pipeline's exporter fails like the traces one.
func (f *forwarder) pushLogs(rl routed[plog.Logs]) {
	f.pushItem(outItem{route: rl.route, ld: rl.data, isLogs: true, n: rl.n, keys: rl.keys, shared: rl.shared})
}

func (f *forwarder) pushItem(it outItem) {
	if it.n == 0 {
		f.removeKeys(it.keys) // nothing left to deliver
		return
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		// Only a straggler gets here (the engine finishing a trace after
		// Shutdown); it is sent once, and its fate is counted.
		f.grow(it.n)
		it.whole()
		if f.deliver(it) {
			f.drop(it, reasonShutdown, 0, errors.New("refused after shutdown"))
		}
		f.shrink(it.n)
		return
	}
	f.items = append(f.items, it)
	f.mu.Unlock()
	f.grow(it.n)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *forwarder) grow(n int) {
	f.backlog.Add(int64(n))
	f.tel.releaseBacklog.Add(context.Background(), int64(n))
}

func (f *forwarder) shrink(n int) {
	if f.backlog.Add(-int64(n)) == 0 {
		f.refusedLogged.Store(false) // warn again in the next episode
	}
	f.tel.releaseBacklog.Add(context.Background(), -int64(n))
}

// full says whether new GenAI data is refused (back-pressure).
func (f *forwarder) full() bool { return f.backlog.Load() > maxBacklogSpans }

// firstRefusal says whether a refusal is the first since the backlog was
// last empty (it is logged as a warning; the rest at debug level).
func (f *forwarder) firstRefusal() bool { return f.refusedLogged.CompareAndSwap(false, true) }

// run is the forwarder's goroutine.
func (f *forwarder) run() {
	defer close(f.exited)
	for {
		var timer *time.Timer
		var due <-chan time.Time
		if next, ok := f.nextDue(); ok {
			timer = time.NewTimer(time.Until(next))
			due = timer.C
		}
		select {
		case <-f.wake:
		case <-due:
		case <-f.stop:
			if timer != nil {
				timer.Stop()
			}
			f.final()
			return
		}
		if timer != nil {
			timer.Stop()
		}
		f.drain()
		f.retryDue(time.Now(), false)
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

// final delivers what is queued, then retries the refused requests until
// they are accepted or shutdown's time is up (then they are dropped,
// reason shutdown; with storage: they stay in it).
func (f *forwarder) final() {
	now := time.Now()
	for _, r := range f.waiting {
		r.due = now // one more attempt at once; then their backoff, within shutdown's time
	}
	for {
		f.drain()
		if len(f.waiting) == 0 {
			f.mu.Lock()
			if len(f.items) == 0 {
				f.stopped = true
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			continue
		}
		if f.stopCtx.Err() != nil || !time.Now().Before(f.stopBy) {
			for _, r := range f.waiting {
				f.drop(r.outItem, reasonShutdown, r.retries, errors.New("shutdown's time was up"))
				f.shrink(r.n)
			}
			f.waiting = nil
			continue
		}
		next, _ := f.nextDue()
		if next.After(f.stopBy) {
			next = f.stopBy
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-t.C:
		case <-f.wake:
		case <-f.stopCtx.Done():
		}
		t.Stop()
		f.retryDue(time.Now(), true)
	}
}

// drain sends what is queued, merged into requests per route and kind.
func (f *forwarder) drain() {
	for {
		f.mu.Lock()
		items := f.items
		f.items = nil
		f.mu.Unlock()
		if len(items) == 0 {
			return
		}
		for len(items) > 0 {
			req := items[0]
			items[0] = outItem{}
			items = items[1:]
			for len(items) > 0 && items[0].isLogs == req.isLogs && items[0].route == req.route && req.n+items[0].n <= maxRequestSpans {
				if req.isLogs {
					req.shared = moveLogs(req.ld, req.shared, items[0].ld, items[0].shared)
				} else {
					req.shared = moveTraces(req.td, req.shared, items[0].td, items[0].shared)
				}
				req.n += items[0].n
				req.keys = append(req.keys, items[0].keys...)
				items[0] = outItem{}
				items = items[1:]
			}
			req.whole()
			if f.deliver(req) {
				f.refused(req)
				continue
			}
			f.shrink(req.n)
		}
	}
}

// deliver sends one request once. It returns true when the next consumer
// refused it with a retryable error; otherwise the request is done with
// (accepted, or dropped as refused permanently).
func (f *forwarder) deliver(req outItem) (retry bool) {
	err := f.consume(req)
	if err == nil {
		f.removeKeys(req.keys)
		return false
	}
	f.tel.nextConsumerErrors.Add(context.Background(), 1)
	if consumererror.IsPermanent(err) {
		f.drop(req, reasonPermanent, 0, err)
		f.removeKeys(req.keys) // restoring them would only be refused again
		return false
	}
	return true
}

// refused sets a request refused with a retryable error aside for its
// retries, or drops it when release_retry is disabled.
func (f *forwarder) refused(req outItem) {
	if !f.retry.Enabled {
		f.drop(req, reasonRefused, 0, errors.New("refused with a retryable error and release_retry is disabled"))
		f.removeKeys(req.keys)
		f.shrink(req.n)
		return
	}
	now := time.Now()
	r := &retrying{outItem: req, first: now, delay: f.retry.InitialInterval}
	r.due = now.Add(f.jitter(r.delay))
	f.waiting = append(f.waiting, r)
	if f.outage.CompareAndSwap(false, true) {
		f.logger.Warn("the next consumer refused released data; it is retried on its own (release_retry) while later releases go on (new GenAI spans are refused while the backlog is full)",
			zap.Int("items", req.n), zap.Bool("logs", req.isLogs), zap.Int64("backlog", f.backlog.Load()))
	}
}

// retryDue retries the requests whose time has come (all of them at
// shutdown when final and their time is not yet up).
func (f *forwarder) retryDue(now time.Time, final bool) {
	if len(f.waiting) == 0 {
		return
	}
	kept := f.waiting[:0]
	for _, r := range f.waiting {
		if now.Before(r.due) {
			kept = append(kept, r)
			continue
		}
		r.retries++
		f.tel.releaseRetries.Add(context.Background(), 1)
		if !f.deliver(r.outItem) {
			f.shrink(r.n)
			continue
		}
		if !final && f.retry.MaxElapsedTime > 0 && now.Sub(r.first) >= f.retry.MaxElapsedTime {
			f.drop(r.outItem, reasonRefused, r.retries, errors.New("still refused after release_retry.max_elapsed_time"))
			f.removeKeys(r.keys)
			f.shrink(r.n)
			continue
		}
		r.delay = min(time.Duration(float64(r.delay)*max(f.retry.Multiplier, 1)), max(f.retry.MaxInterval, f.retry.InitialInterval))
		r.due = now.Add(f.jitter(r.delay))
		kept = append(kept, r)
	}
	clear(f.waiting[len(kept):])
	f.waiting = kept
	if len(f.waiting) == 0 && f.outage.CompareAndSwap(true, false) {
		f.logger.Info("the next consumer accepts released data again; no refused release is waiting")
	}
}

// nextDue is when the earliest refused request is due.
func (f *forwarder) nextDue() (time.Time, bool) {
	if len(f.waiting) == 0 {
		return time.Time{}, false
	}
	next := f.waiting[0].due
	for _, r := range f.waiting[1:] {
		if r.due.Before(next) {
			next = r.due
		}
	}
	return next, true
}

// jitter spreads d by release_retry.randomization_factor.
func (f *forwarder) jitter(d time.Duration) time.Duration {
	rf := f.retry.RandomizationFactor
	if rf <= 0 || d <= 0 {
		return d
	}
	delta := rf * float64(d)
	return time.Duration(float64(d) - delta + rand.Float64()*(2*delta+1))
}

// drop logs (at error level) and counts released data that is not
// delivered.
func (f *forwarder) drop(req outItem, reason string, retries int, err error) {
	f.tel.dropped(context.Background(), reason, req.isLogs, req.n)
	what := "spans"
	if req.isLogs {
		what = "log records"
	}
	msg := "released " + what + " are dropped: "
	switch reason {
	case reasonPermanent:
		msg += "the next consumer refused them permanently"
	case reasonRefused:
		msg += "the next consumer still refused them when release_retry gave up"
	default:
		msg += "the next consumer still refused them when shutdown's time was up (with storage: they stay in it and are restored on the next start)"
	}
	f.logger.Error(msg, zap.Int("items", req.n), zap.Int("retries", retries),
		zap.String("reason", reason), zap.Error(err))
}

// consume calls the next consumer of req's route; a panic there is a
// permanent refusal (logged), not the end of the collector.
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
			f.logger.Error("next consumer panicked on released spans", zap.String("trace_id", first),
				zap.Int("spans", req.n), zap.Any("panic", r), zap.Stack("stack"))
			err = consumererror.NewPermanent(fmt.Errorf("next consumer panicked: %v", r))
		}
	}()
	if req.isLogs {
		return f.routes.sendLogs(context.Background(), req.route, req.ld)
	}
	return f.routes.sendTraces(context.Background(), req.route, req.td)
}
