package main

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/evalbridge/evalbridge/adapter"
)

// loadConfig is one load: what to send, how fast and for how long.
type loadConfig struct {
	endpoint      string        // collector OTLP/gRPC host:port
	rate          float64       // traces per second
	duration      time.Duration // how long new traces start
	plainShare    float64       // share of non-GenAI traces
	failShare     float64       // share of GenAI runs designed to fail
	parts         int           // requests a trace's spans are spread over
	gap           time.Duration // between the requests of one trace
	resend        float64       // share of acknowledged requests sent a second time (lost response)
	hostile       float64       // share of traces that are hostile
	hostileKinds  []string      // kinds the hostile share cycles through
	hostileAt     time.Duration // >0: send every hostile kind once, this long after the start
	retryFor      time.Duration // a refused request is retried with backoff for this long
	conns         int           // parallel senders
	maxReqSpans   int           // spans per request at most (hostile chunks excepted)
	seed          uint64
	conversations int     // >0: agent runs carry one of this many conversation ids
	scale         float64 // hostile sizes
	// onTick, if set, runs once per scheduler tick with the time since the start
	// (the suite uses it to take the backend down or stop the collector).
	onTick func(elapsed time.Duration)
}

// sendStats counts what the client did.
type sendStats struct {
	requests   atomic.Int64 // requests acknowledged (resends included)
	attempts   atomic.Int64 // export calls made
	retried    atomic.Int64 // attempts refused with a retryable code
	refused    atomic.Int64 // requests given up (not acknowledged)
	resent     atomic.Int64 // acknowledged requests sent again
	spansAcked atomic.Int64 // span copies acknowledged (resends included)
	lastErr    atomic.Value // string
}

type request struct {
	req  ptraceotlp.ExportRequest
	seqs []int64
}

// chunkHeap orders chunks by due time.
type chunkHeap []chunk

func (h chunkHeap) Len() int           { return len(h) }
func (h chunkHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h chunkHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *chunkHeap) Push(x any)        { *h = append(*h, x.(chunk)) }
func (h *chunkHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// load runs the generator and the senders until every chunk is sent (or ctx
// ends) and returns the generator with what it made and the client's counts.
type load struct {
	cfg   loadConfig
	mu    sync.Mutex // guards gen.spans entries (senders) against the scheduler's appends
	gen   *generator
	stats sendStats
	start time.Time
}

// allAckedArrived says whether every span the collector acknowledged has
// arrived at the sink s (the drain's end condition).
func (l *load) allAckedArrived(s *sink) func() bool {
	return func() bool {
		arr, _, _, _, _ := s.snapshot()
		l.mu.Lock()
		defer l.mu.Unlock()
		for seq, si := range l.gen.spans {
			if _, ok := arr[int64(seq)]; si.acked && !ok {
				return false
			}
		}
		return true
	}
}

// allAckedScored is allAckedArrived, and every acknowledged agent span of
// a normal run arrived with its results (on it, or on its result span in
// stream mode, whose results come after the span itself).
func (l *load) allAckedScored(s *sink) func() bool {
	return func() bool {
		arr, _, _, _, _ := s.snapshot()
		l.mu.Lock()
		defer l.mu.Unlock()
		for seq, si := range l.gen.spans {
			if !si.acked {
				continue
			}
			a, ok := arr[int64(seq)]
			if !ok {
				return false
			}
			if kind := l.gen.traces[si.trace].kind; si.agent && (kind == kindPass || kind == kindFail) && len(a.statuses) == 0 {
				return false
			}
		}
		return true
	}
}

func newLoad(cfg loadConfig) *load {
	if cfg.conns <= 0 {
		cfg.conns = 4
	}
	if cfg.maxReqSpans <= 0 {
		cfg.maxReqSpans = 512
	}
	if cfg.scale <= 0 {
		cfg.scale = 1
	}
	if cfg.parts <= 0 {
		cfg.parts = 3
	}
	l := &load{cfg: cfg, gen: newGenerator(cfg.seed, cfg.scale)}
	l.gen.conversations = cfg.conversations
	return l
}

func dial(endpoint string) (*grpc.ClientConn, error) {
	return grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(512<<20), grpc.MaxCallRecvMsgSize(64<<20)))
}

func (l *load) run(ctx context.Context) error {
	conn, err := dial(l.cfg.endpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)

	reqs := make(chan request, l.cfg.conns)
	var wg sync.WaitGroup
	for i := 0; i < l.cfg.conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(l.cfg.seed+uint64(i)+1, 7))
			for r := range reqs {
				l.send(ctx, client, r, rng)
			}
		}(i)
	}
	l.schedule(ctx, reqs)
	close(reqs)
	wg.Wait()
	return nil
}

// schedule starts traces at the configured rate and hands due chunks to the
// senders, batched into requests.
func (l *load) schedule(ctx context.Context, reqs chan<- request) {
	const tick = 10 * time.Millisecond
	l.start = time.Now()
	var pending chunkHeap
	started, hostileN := 0, 0
	hostileDone := l.cfg.hostileAt <= 0
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		now := time.Now()
		elapsed := now.Sub(l.start)
		if l.cfg.onTick != nil {
			l.cfg.onTick(elapsed)
		}
		l.mu.Lock()
		if elapsed < l.cfg.duration {
			for want := int(l.cfg.rate * elapsed.Seconds()); started < want; started++ {
				var cs []chunk
				if l.cfg.hostile > 0 && len(l.cfg.hostileKinds) > 0 && l.gen.rng.Float64() < l.cfg.hostile {
					cs = l.gen.hostile(l.cfg.hostileKinds[hostileN%len(l.cfg.hostileKinds)], now, l.cfg.gap)
					hostileN++
				} else {
					cs = l.gen.normal(now, l.cfg.plainShare, l.cfg.failShare, l.cfg.parts, l.cfg.gap)
				}
				for _, c := range cs {
					heap.Push(&pending, c)
				}
			}
		}
		if !hostileDone && elapsed >= l.cfg.hostileAt {
			hostileDone = true
			for _, k := range l.cfg.hostileKinds {
				for _, c := range l.gen.hostile(k, now, l.cfg.gap) {
					heap.Push(&pending, c)
				}
			}
		}
		l.mu.Unlock()

		// Due chunks, batched: a big chunk goes alone.
		var batch []chunk
		n := 0
		flush := func() bool {
			if len(batch) == 0 {
				return true
			}
			r := l.request(batch)
			batch, n = nil, 0
			select {
			case reqs <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for pending.Len() > 0 && !pending[0].due.After(now) {
			c := heap.Pop(&pending).(chunk)
			if n > 0 && (c.alone || n+c.n > l.cfg.maxReqSpans) {
				if !flush() {
					return
				}
			}
			batch = append(batch, c)
			n += c.n
			if c.alone && !flush() {
				return
			}
		}
		if !flush() {
			return
		}
		if elapsed >= l.cfg.duration && pending.Len() == 0 && hostileDone {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// request builds one export request of chunks.
func (l *load) request(cs []chunk) request {
	td := ptrace.NewTraces()
	var seqs []int64
	for _, c := range cs {
		// Like an SDK's exporter: the spans of one service under one
		// resource and scope, whatever trace they belong to.
		if into, ok := sameResource(td, c.spans); ok {
			c.spans.ScopeSpans().At(0).Spans().MoveAndAppendTo(into.Spans())
			continue
		}
		c.spans.MoveTo(td.ResourceSpans().AppendEmpty())
	}
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		v, _ := r.Span.Attributes().Get(attrSeq)
		seqs = append(seqs, v.Int())
	})
	return request{req: ptraceotlp.NewExportRequestFromTraces(td), seqs: seqs}
}

// sameResource returns the scope of td that rs's one scope joins: same
// resource, same scope name (hostile chunks with other shapes go apart).
func sameResource(td ptrace.Traces, rs ptrace.ResourceSpans) (ptrace.ScopeSpans, bool) {
	if rs.ScopeSpans().Len() != 1 {
		return ptrace.ScopeSpans{}, false
	}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		d := td.ResourceSpans().At(i)
		if d.ScopeSpans().Len() == 1 && d.Resource().Attributes().Equal(rs.Resource().Attributes()) &&
			d.ScopeSpans().At(0).Scope().Name() == rs.ScopeSpans().At(0).Scope().Name() {
			return d.ScopeSpans().At(0), true
		}
	}
	return ptrace.ScopeSpans{}, false
}

// retryable reports whether an OTLP/gRPC client retries after err (the
// OTLP specification's list).
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange,
		codes.Unavailable, codes.DataLoss, codes.ResourceExhausted:
		return true
	}
	return false
}

// send exports r, retrying retryable refusals with backoff for retryFor,
// and resends an acknowledged request with probability resend.
func (l *load) send(ctx context.Context, client ptraceotlp.GRPCClient, r request, rng *rand.Rand) {
	now := time.Now().UnixNano()
	l.mu.Lock()
	for _, s := range r.seqs {
		if l.gen.spans[s].reqSent == 0 {
			l.gen.spans[s].reqSent = now
		}
	}
	l.mu.Unlock()
	backoff := 50 * time.Millisecond
	giveUp := time.Now().Add(l.cfg.retryFor)
	for {
		l.stats.attempts.Add(1)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := client.Export(cctx, r.req)
		cancel()
		if err == nil {
			break
		}
		l.stats.lastErr.Store(err.Error())
		if !retryable(err) || time.Now().After(giveUp) || ctx.Err() != nil {
			l.stats.refused.Add(1)
			return
		}
		l.stats.retried.Add(1)
		select {
		case <-ctx.Done():
			l.stats.refused.Add(1)
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
	l.stats.requests.Add(1)
	l.stats.spansAcked.Add(int64(len(r.seqs)))
	l.mu.Lock()
	for _, s := range r.seqs {
		l.gen.spans[s].acked = true
	}
	l.mu.Unlock()
	if l.cfg.resend > 0 && rng.Float64() < l.cfg.resend {
		// The client lost the response and sends the same request again.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := client.Export(cctx, r.req)
		cancel()
		if err == nil {
			l.stats.resent.Add(1)
			l.stats.spansAcked.Add(int64(len(r.seqs)))
		}
	}
}

func (l *load) lastErr() string {
	if v, ok := l.stats.lastErr.Load().(string); ok {
		return v
	}
	return ""
}

func (c loadConfig) String() string {
	return fmt.Sprintf("rate %.0f traces/s for %s, %.0f%% plain, %.0f%% failing, %d requests per trace, resend %.0f%%, hostile %.1f%%",
		c.rate, c.duration, c.plainShare*100, c.failShare*100, c.parts, c.resend*100, c.hostile*100)
}
