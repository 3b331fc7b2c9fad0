package evalprocessor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// ticker is the injectable tick source; tests drive it by hand.
type ticker interface {
	C() <-chan time.Time
	Stop()
}

// clock gives the processor its time: now stamps arriving spans, ticks
// release traces. Both are replaceable in tests, so no test sleeps for `wait`.
type clock struct {
	now       func() time.Time
	newTicker func(time.Duration) ticker
}

type realTicker struct{ *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.Ticker.C }

var realClock = clock{
	now:       time.Now,
	newTicker: func(d time.Duration) ticker { return realTicker{time.NewTicker(d)} },
}

// defaultDeadlineGrace: a well-behaved engine reports `timeout` for the
// evaluators that did not finish by the deadline, which beats no score; the
// watchdog gives it this long before it forwards the trace unscored.
const defaultDeadlineGrace = time.Second

type evalProcessor struct {
	cfg    *Config
	set    component.TelemetrySettings
	logger *zap.Logger
	// next and nextLogs are the single next consumers a test sets
	// directly; Start takes them as route 0 (routes.go). The factory fills
	// tracesOut and logsOut, one per pipeline listing this component.
	next      consumer.Traces
	routesMu  sync.Mutex
	tracesOut []consumer.Traces
	logsOut   []consumer.Logs
	// partitions watches the Kafka partitions batches come from (fleets).
	partitions partitionWatch
	// nextLogs is set when the same `eval` component is in a logs pipeline
	// too (the factory shares one processor between both).
	nextLogs consumer.Logs
	clk      clock
	tel      *telemetry
	eng      *engine.Engine

	// lifeMu guards running. ConsumeTraces holds it for reading while it
	// hands spans to the loop, so Shutdown (holding it for writing) knows no
	// send to in is under way once running is false.
	lifeMu  sync.RWMutex
	running bool

	// dirMu guards dir: the state of every trace id held or recently
	// released. ConsumeTraces reads it to route spans and marks new GenAI
	// traces held; the loop marks released traces done and forgets them
	// by time (mem).
	dirMu sync.RWMutex
	dir   map[pcommon.TraceID]traceState
	mem   *decisions

	// fwd hands released spans on, in batches, retrying refusals.
	fwd *forwarder
	// deadlineGrace is how long past a trace's deadline the watchdog waits
	// for a scorer to return before it forwards the spans unscored.
	deadlineGrace time.Duration
	// slots are the workers, for the watchdog.
	slotsMu   sync.Mutex
	slots     map[*workerSlot]struct{}
	watchStop chan struct{}
	watchWG   sync.WaitGroup
	// scoreFn scores one trace (the engine's ScoreTraceAsync; tests
	// replace it with evaluators that ignore their context).
	scoreFn func(context.Context, []adapter.SpanRef, func(engine.Report))

	in     chan ingestMsg // ConsumeTraces -> loop (unbuffered: back-pressure)
	jobs   chan job       // loop -> workers
	stop   chan struct{}  // closed by Shutdown
	runCtx context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// loop-owned
	traces map[pcommon.TraceID]*heldTrace
	lists  [3]traceList // 0: every held trace by last span; 1: those whose root arrived; 2: every held trace by first span

	// sess is the sessions side (sessions.go); nil until Start.
	sess *sessionState

	// id is the component's id (the storage client is named after it).
	id component.ID
	// store is the durable hold store (storage:, durable.go); nil without it.
	store *holdStore

	badInputLogged atomic.Bool
	refusedLogged  atomic.Bool
	// boundLogged: each bound (max_hold, max_trace_spans) is logged once.
	boundLogged [2]atomic.Bool

	// sampling decides which scored traces are forwarded (sampling.go).
	sampling *sampler
}

// ingestMsg is what ConsumeTraces/ConsumeLogs hand the loop: chunks to
// hold, or (undo) the trace ids a call marked held and then took back
// because it returned an error.
type ingestMsg struct {
	chunks []*chunk
	undo   []pcommon.TraceID
	// restored: the chunks were read back from storage (durable_restore.go);
	// unscored, when set, forwards their traces at once, unscored, for
	// that reason (too_old).
	restored bool
	unscored string
}

func newProcessor(set processor.Settings, cfg *Config, next consumer.Traces, clk *clock) (*evalProcessor, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &evalProcessor{
		cfg:    cfg,
		id:     set.ID,
		set:    set.TelemetrySettings,
		logger: set.Logger,
		next:   next,
		clk:    realClock,
		tel:    tel,

		deadlineGrace: defaultDeadlineGrace,
	}
	if clk != nil {
		p.clk = *clk
	}
	p.sampling = newSampler(cfg.Sampling, cfg.Wait+cfg.Timeout+decisionMargin, tel.tb.ProcessorEvalTracesSampled)
	return p, nil
}

func (p *evalProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start builds the engine and starts the loop and the workers.
func (p *evalProcessor) Start(ctx context.Context, host component.Host) error {
	p.fixRoutes()
	eng, err := engine.New(&p.cfg.Config, p.set)
	if err != nil {
		return err
	}
	if p.cfg.Storage != nil {
		if p.store, err = openStore(ctx, host, *p.cfg.Storage, p.id, p.clk.now, p.logger, p.tel); err != nil {
			return err
		}
	}
	if p.cfg.LateResults == engine.LateResultsSpan {
		eng.SetLateResults(p.forwardLateResult)
	}
	if err := eng.Start(ctx, host); err != nil {
		return errors.Join(err, p.closeStore(ctx))
	}
	p.eng = eng
	if p.scoreFn == nil {
		p.scoreFn = eng.ScoreTraceAsync
	}
	p.dir = make(map[pcommon.TraceID]traceState)
	p.mem = newDecisions(p.cfg.Wait, p.cfg.Timeout, maxRememberedIDs)
	p.fwd = newForwarder(p, p.cfg.ReleaseRetry)
	p.traces = make(map[pcommon.TraceID]*heldTrace)
	p.in = make(chan ingestMsg)
	p.jobs = make(chan job, p.cfg.Workers)
	p.stop = make(chan struct{})
	p.runCtx, p.cancel = context.WithCancel(context.Background())
	p.lists[0].idx, p.lists[1].idx, p.lists[2].idx = 0, 1, 2
	var stored []storedTrace // what the store holds (durable_restore.go)
	if p.store != nil {
		if stored, err = p.store.scan(ctx); err != nil {
			return errors.Join(err, eng.Shutdown(ctx), p.closeStore(ctx))
		}
	}

	if err := p.startSessions(ctx); err != nil {
		return errors.Join(err, eng.Shutdown(ctx), p.closeStore(ctx))
	}
	tick := p.clk.newTicker(p.cfg.tickInterval())
	p.slots = make(map[*workerSlot]struct{}, p.cfg.Workers)
	p.watchStop = make(chan struct{})
	p.wg.Add(1 + p.cfg.Workers)
	p.watchWG.Add(1)
	go p.fwd.run()
	go p.watch(p.watchStop)
	for i := 0; i < p.cfg.Workers; i++ {
		go p.worker()
	}
	p.restoreHeld(ctx, stored) // into ingest, before the loop runs
	go p.loop(tick)
	p.lifeMu.Lock()
	p.running = true
	p.lifeMu.Unlock()
	return nil
}

// Shutdown stops taking spans, scores the held traces while ctx allows and
// forwards the rest unscored, delivers the release backlog while ctx allows
// (what the next consumer still refuses then is logged and counted), and
// returns once every goroutine it waits for has ended. An evaluator that
// ignores its context is not waited for: its trace goes on unscored.
func (p *evalProcessor) Shutdown(ctx context.Context) error {
	p.lifeMu.Lock()
	wasRunning := p.running
	p.running = false
	p.lifeMu.Unlock()
	if !wasRunning {
		return nil
	}
	// When ctx ends, evaluations under way end too (marked `timeout`) and
	// traces not yet scored are forwarded unscored.
	if ctx.Err() != nil {
		p.cancel()
	}
	stopAfter := context.AfterFunc(ctx, p.cancel)
	close(p.stop)
	p.wg.Wait()
	close(p.watchStop)
	p.watchWG.Wait()
	p.stopSessions(ctx)
	// Traces still waiting for a judge are forwarded by the engine (with
	// what finished) before its Shutdown returns.
	err := p.eng.Shutdown(ctx)
	p.fwd.finish(ctx)
	stopAfter()
	p.cancel()
	return errors.Join(err, p.closeStore(ctx))
}

// ConsumeTraces routes spans that come in through route 0 (the factory
// gives each pipeline its own route; see consumeTraces).
func (p *evalProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return p.consumeTraces(ctx, td, 0)
}

// consumeTraces routes spans that came in through route rt: those of
// traces without a GenAI span go on at once, those of GenAI traces are
// copied and held, those of traces already released go on as they are
// (late). All or nothing: when it returns an error, nothing of td is held,
// persisted or marked (the sender's retry is the only copy).
func (p *evalProcessor) consumeTraces(ctx context.Context, td ptrace.Traces, rt route) error {
	p.lifeMu.RLock()
	if !p.running {
		p.lifeMu.RUnlock()
		return p.forwardSync(ctx, rt, td)
	}
	if p.fwd.full() && p.wouldHold(td) {
		p.lifeMu.RUnlock()
		return p.refuse(ctx, td)
	}
	r := p.route(td)
	if r.invalid > 0 {
		p.tel.spansInvalidID.Add(ctx, int64(r.invalid))
	}
	if r.held == 0 {
		p.lifeMu.RUnlock()
		if r.late > 0 {
			p.tel.spansLate.Add(ctx, int64(r.late))
			if td, _ = p.sampling.dropLate(td); td.SpanCount() == 0 {
				return nil // late spans of traces dropped by sampling
			}
		}
		return p.forwardSync(ctx, rt, td) // nothing held: as-is, zero copy
	}
	fwd, chunks := p.split(td, r, rt)
	if err := p.persistChunks(ctx, chunks); err != nil {
		// Nothing of td is held or forwarded: the sender retries it all.
		p.takeBack(r.dec, nil)
		p.lifeMu.RUnlock()
		p.tel.spansRefused.Add(ctx, int64(td.SpanCount()))
		return err
	}
	if r.late > 0 {
		fwd, _ = p.sampling.dropLate(fwd) // late spans of traces dropped by sampling
	}
	if fwd.ResourceSpans().Len() > 0 {
		// The part that goes on at once goes first: when the next consumer
		// refuses it, the held part is taken back and the error returned.
		if err := p.forwardSync(ctx, rt, fwd); err != nil {
			p.takeBack(r.dec, chunks)
			p.lifeMu.RUnlock()
			return err
		}
	}
	p.in <- ingestMsg{chunks: chunks}
	p.lifeMu.RUnlock()
	if r.late > 0 {
		p.tel.spansLate.Add(ctx, int64(r.late))
	}
	if r.started > 0 && p.partitions.recent(ctx, p.clk.now(), p.cfg.Wait) {
		p.tel.tracesNewPartition.Add(ctx, int64(r.started))
	}
	return nil
}

// takeBack undoes what a call that returns an error did: it deletes the
// chunks it persisted and has the loop forget the trace ids it marked held
// (unless another call's chunks of the same trace are held meanwhile).
// The caller holds lifeMu for reading while running.
func (p *evalProcessor) takeBack(dec map[pcommon.TraceID]decision, persisted []*chunk) {
	var keys []string
	for _, c := range persisted {
		if c.key != "" {
			keys = append(keys, c.key)
			c.key = ""
		}
	}
	p.removeKeys(keys)
	var undo []pcommon.TraceID
	for id, d := range dec {
		if d == decHoldNew {
			undo = append(undo, id)
		}
	}
	if len(undo) > 0 {
		p.in <- ingestMsg{undo: undo}
	}
}

// refuse answers a batch with new GenAI spans while the release backlog is
// full: a retryable error, so the sender retries later (nothing of td is
// kept or forwarded, so a retry duplicates nothing).
func (p *evalProcessor) refuse(ctx context.Context, td ptrace.Traces) error {
	p.tel.spansRefused.Add(ctx, int64(td.SpanCount()))
	if p.refusedLogged.CompareAndSwap(false, true) {
		p.logger.Warn("refusing new GenAI spans with a retryable error while released spans wait for the next consumer (back-pressure; further refusals are logged at debug level)",
			zap.Int64("backlog_spans", p.fwd.backlog.Load()), zap.Int("limit_spans", maxBacklogSpans))
	} else if ce := p.logger.Check(zap.DebugLevel, "refusing new GenAI spans (back-pressure)"); ce != nil {
		ce.Write(zap.Int64("backlog_spans", p.fwd.backlog.Load()))
	}
	return errBackPressure
}

// wouldHold tells whether route would hold any span of td: a GenAI span
// of a trace not yet released, or a span of a held trace.
func (p *evalProcessor) wouldHold(td ptrace.Traces) bool {
	p.dirMu.RLock()
	defer p.dirMu.RUnlock()
	hold := false
	adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
		if hold {
			return
		}
		id := ref.Span.TraceID()
		if id.IsEmpty() {
			return
		}
		st := p.dir[id]
		hold = st == stateHeld || (st == stateUnknown && adapter.IsGenAI(ref.Span))
	})
	return hold
}

// forwardSync hands spans on within ConsumeTraces; an error goes back to
// the caller (and is counted).
func (p *evalProcessor) forwardSync(ctx context.Context, rt route, td ptrace.Traces) error {
	err := p.sendTraces(ctx, rt, td)
	if err != nil {
		p.tel.nextConsumerErrors.Add(ctx, 1)
	}
	return err
}

// forwardLateResult sends on a judge's answer that came after its trace had
// gone: a span of its own, linked to the evaluated span, through the route
// the evaluated span went (the engine hands back what spanOrigin said).
func (p *evalProcessor) forwardLateResult(ctx context.Context, td ptrace.Traces) {
	rt, _ := engine.OriginFrom(ctx).(route)
	p.tel.lateResults.Add(context.Background(), 1)
	if p.resultLogsOn() {
		if ld, n := lateResultRecords(td, pcommon.NewTimestampFromTime(time.Now())); n > 0 {
			p.tel.resultRecords.Add(context.Background(), int64(n))
			p.fwd.pushLogs(0, ld, n, nil)
		}
	}
	// Its result records above go on; the span goes with its trace when
	// sampling dropped it.
	if td, _ = p.sampling.dropLate(td); td.SpanCount() > 0 {
		p.fwd.pushTraces(routedTraces{route: rt, td: td, spans: td.SpanCount()})
	}
}

type decision uint8

const (
	decForward decision = iota
	decHold
	decLate
	// decHoldNew: held, and this call started holding the trace (taken
	// back if the call fails).
	decHoldNew
)

func (d decision) holds() bool { return d == decHold || d == decHoldNew }

// routing is how the spans of one batch go.
type routing struct {
	dec     map[pcommon.TraceID]decision
	held    int // spans to hold
	late    int // spans of released traces
	invalid int // spans with an empty trace id (forwarded, never held)
	started int // traces this batch starts holding
}

// route decides, per trace id in td, where its spans go. A trace is held
// when it has a GenAI span in this batch or is already held.
func (p *evalProcessor) route(td ptrace.Traces) routing {
	// Pass 1, lock-free: which traces have GenAI spans here.
	var genai map[pcommon.TraceID]struct{}
	var lastGenAI pcommon.TraceID
	hasGenAI := false
	invalid := 0
	adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
		s := ref.Span
		id := s.TraceID()
		if hasGenAI && id == lastGenAI {
			return
		}
		if id.IsEmpty() {
			// All-zero: no trace to group by; it must not merge with
			// every other span without an id.
			invalid++
			return
		}
		if adapter.IsGenAI(s) {
			if genai == nil {
				genai = make(map[pcommon.TraceID]struct{}, 4)
			}
			genai[id] = struct{}{}
			lastGenAI, hasGenAI = id, true
		}
	})

	r := routing{invalid: invalid}
	if len(genai) == 0 {
		p.dirMu.RLock()
		defer p.dirMu.RUnlock()
		if len(p.dir) == 0 {
			return r
		}
	} else {
		p.dirMu.Lock()
		defer p.dirMu.Unlock()
	}
	// Pass 2: decide per trace id (consecutive spans mostly share one).
	// Only decisions other than forward are stored (a missing id forwards),
	// so a batch with nothing to hold or count allocates nothing here.
	var lastID pcommon.TraceID
	var last decision
	first := true
	adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
		s := ref.Span
		id := s.TraceID()
		if first || id != lastID {
			d, ok := r.dec[id]
			if !ok {
				switch st := p.dir[id]; {
				case st == stateHeld:
					d = decHold
				case st.done():
					d = decLate
				default:
					if _, g := genai[id]; g {
						p.dir[id] = stateHeld
						d = decHoldNew
						r.started++
					}
				}
				if d != decForward {
					if r.dec == nil {
						r.dec = make(map[pcommon.TraceID]decision, max(len(genai), 4))
					}
					r.dec[id] = d
				}
			}
			lastID, last, first = id, d, false
		}
		switch last {
		case decHold, decHoldNew:
			r.held++
		case decLate:
			r.late++
		}
	})
	return r
}

// split copies the spans of td: held traces into one chunk per trace, the
// rest into fwd. td itself is never written.
func (p *evalProcessor) split(td ptrace.Traces, r routing, rt route) (ptrace.Traces, []*chunk) {
	fwd := newChunk(pcommon.TraceID{})
	chunks := make(map[pcommon.TraceID]*chunk, len(r.dec))
	var order []*chunk
	var lastID pcommon.TraceID
	var last *chunk
	first := true
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				id := s.TraceID()
				if first || id != lastID {
					first, lastID = false, id
					if r.dec[id].holds() {
						c := chunks[id]
						if c == nil {
							c = newChunk(id)
							c.route = rt
							chunks[id] = c
							order = append(order, c)
						}
						last = c
					} else {
						last = fwd
					}
				}
				last.add(i, rs, j, ss, s, last != fwd)
			}
		}
	}
	return fwd.td, order
}

// chunk is a copy of the spans of one trace from one batch (or, for fwd,
// of the spans forwarded at once).
type chunk struct {
	id pcommon.TraceID
	// isLogs: the chunk holds log records (logPart), not spans.
	isLogs bool
	// route is the pipeline it came in through.
	route route
	// key is the chunk's storage key once persisted (durable.go).
	key string
	logPart

	td    ptrace.Traces
	refs  []adapter.SpanRef
	root  bool
	spans int

	srcRS, srcSS int
	rs           ptrace.ResourceSpans
	ss           ptrace.ScopeSpans
}

func newChunk(id pcommon.TraceID) *chunk {
	return &chunk{id: id, td: ptrace.NewTraces(), srcRS: -1, srcSS: -1}
}

// add copies span s (from resource i, scope j of the source) into the chunk,
// copying the resource and scope once per run of spans that share them.
func (c *chunk) add(i int, rs ptrace.ResourceSpans, j int, ss ptrace.ScopeSpans, s ptrace.Span, keepRef bool) {
	if c.srcRS != i {
		c.rs = c.td.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(c.rs.Resource())
		c.rs.SetSchemaUrl(rs.SchemaUrl())
		c.srcRS, c.srcSS = i, -1
	}
	if c.srcSS != j {
		c.ss = c.rs.ScopeSpans().AppendEmpty()
		ss.Scope().CopyTo(c.ss.Scope())
		c.ss.SetSchemaUrl(ss.SchemaUrl())
		c.srcSS = j
	}
	dst := c.ss.Spans().AppendEmpty()
	s.CopyTo(dst)
	c.spans++
	if keepRef {
		c.refs = append(c.refs, spanRef(dst, c.rs, c.ss))
		if dst.ParentSpanID().IsEmpty() {
			c.root = true
		}
	}
}

// spanRef is the one place that builds an adapter.SpanRef.
func spanRef(s ptrace.Span, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) adapter.SpanRef {
	return adapter.SpanRef{Span: s, ResourceSpans: rs, ScopeSpans: ss}
}
