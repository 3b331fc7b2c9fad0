package evalprocessor

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

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

// evalProcessor wires the parts together: the ingest path (ingest.go)
// routes what the consume calls bring, the loop (loop.go) owns the held set
// (held.go) and releases traces to the worker pool (workers.go), which
// scores them and hands them to the forwarder (forward.go) through the
// routes (routes.go). The sessions side (sessions.go), sampling
// (sampling.go) and durable holding (durable.go) hang off the release and
// ingest paths.
type evalProcessor struct {
	cfg    *Config
	id     component.ID // the storage client is named after it
	set    component.TelemetrySettings
	logger *zap.Logger
	clk    clock
	tel    *telemetry
	eng    *engine.Engine

	// next and nextLogs are the single next consumers a test sets
	// directly; Start takes them as route 0. The factory fills routes, one
	// per pipeline listing this component.
	next     consumer.Traces
	nextLogs consumer.Logs
	routes   *routes
	// partitions watches the Kafka partitions batches come from (fleets).
	partitions partitionWatch

	// lifeMu guards running. The consume calls hold it for reading while
	// they hand chunks to the loop, so Shutdown (holding it for writing)
	// knows no send to in is under way once running is false.
	lifeMu  sync.RWMutex
	running bool

	spansIn *ingestPath[ptrace.Traces, ptrace.Span]
	logsIn  *ingestPath[plog.Logs, plog.LogRecord]
	held    *heldSet
	pool    *workerPool
	// fwd hands released data on, in batches, retrying refusals.
	fwd *forwarder

	in       chan ingestMsg // consume calls -> loop (ingestQueue messages; full: back-pressure)
	stop     chan struct{}  // closed by Shutdown
	loopDone chan struct{}
	runCtx   context.Context
	cancel   context.CancelFunc

	// sess is the sessions side (sessions.go); nil until Start.
	sess *sessionState
	// sampling decides which scored traces are forwarded (sampling.go).
	sampling *sampler

	// store is the durable hold store (storage:, durable.go); nil without it.
	store *holdStore

	// streaming: mode: stream (stream.go).
	streaming bool
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
		routes: &routes{id: set.ID},
		pool:   newWorkerPool(cfg, tel, set.Logger),

		streaming: cfg.Mode == engine.ModeStream,
	}
	if clk != nil {
		p.clk = *clk
	}
	p.sampling = newSampler(cfg.Sampling, cfg.Wait+cfg.Timeout+decisionMargin, tel.tb.ProcessorEvalTracesSampled)
	p.spansIn, p.logsIn = newSpansPath(p), newLogsPath(p)
	return p, nil
}

// Capabilities says the processor mutates its input: it moves the spans it
// holds out of the request instead of copying them (takeTraces), so the
// collector hands it data of its own (a fan-out clones for it). Input
// marked read-only is copied instead and left as it came.
func (p *evalProcessor) Capabilities() consumer.Capabilities {
	// Stream mode only reads what comes: a fan-out need not clone for it.
	return consumer.Capabilities{MutatesData: !p.streaming}
}

// Start builds the engine and starts the loop, the workers and the
// forwarder.
func (p *evalProcessor) Start(ctx context.Context, host component.Host) error {
	p.routes.fix(p.next, p.nextLogs)
	eng, err := engine.New(&p.cfg.Config, p.set)
	if err != nil {
		return err
	}
	if p.cfg.Storage != nil {
		if p.store, err = p.openDurable(ctx, host); err != nil {
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
	p.held = newHeldSet(p.cfg, p.tel, p.logger)
	p.fwd = newForwarder(p.routes, p.tel, p.logger, p.cfg.ReleaseRetry, p.removeKeys)
	p.in = make(chan ingestMsg, ingestQueue)
	p.stop = make(chan struct{})
	p.loopDone = make(chan struct{})
	p.runCtx, p.cancel = context.WithCancel(context.Background())
	var stored []storedTrace // what the store holds (durable_restore.go)
	if p.store != nil {
		if stored, err = p.scanDurable(ctx); err != nil {
			return errors.Join(err, eng.Shutdown(ctx), p.closeStore(ctx))
		}
	}
	if err := p.startSessions(ctx); err != nil {
		return errors.Join(err, eng.Shutdown(ctx), p.closeStore(ctx))
	}
	if p.pool.score == nil {
		p.pool.score = eng.ScoreTraceAsync
	}
	p.pool.resultLogs = p.resultLogsOn()
	p.pool.caseInfo = eng.RedactInfo
	if p.streaming {
		p.pool.resultSpans = p.resultSpans
	}
	p.pool.release = p.forwardReleased
	p.pool.start(p.runCtx)
	go p.fwd.run()
	p.restoreHeld(ctx, stored) // into ingest, on this goroutine, before the loop runs
	go p.loop(p.clk.newTicker(p.cfg.tickInterval()))
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
	<-p.loopDone
	p.pool.stop()
	p.sess.shutdown(ctx)
	p.tel.tb.Shutdown() // unregisters the observable instruments' callbacks
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

// ConsumeLogs routes log records that come in through route 0.
func (p *evalProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return p.consumeLogs(ctx, ld, 0)
}

// consumeTraces routes the spans that came in through route rt (ingest.go).
func (p *evalProcessor) consumeTraces(ctx context.Context, td ptrace.Traces, rt route) error {
	if p.streaming {
		return consumeStream(ctx, p, p.spansIn, keepSpans, td, rt)
	}
	return consume(ctx, p, p.spansIn, td, rt)
}

// consumeLogs routes the log records that came in through route rt: a
// record of a held trace (held from any traces pipeline), or a GenAI
// content event (whose trace may not have arrived yet: it starts holding
// it), is held (moved, or copied from read-only input); everything else
// goes on at once, as it is.
func (p *evalProcessor) consumeLogs(ctx context.Context, ld plog.Logs, rt route) error {
	if p.streaming {
		return consumeStream(ctx, p, p.logsIn, keepLogs, ld, rt)
	}
	return consume(ctx, p, p.logsIn, ld, rt)
}

// forwardLateResult sends on a judge's answer that came after its trace had
// gone: a span of its own, linked to the evaluated span, through the route
// the evaluated span went (the engine hands back what spanOrigin said).
func (p *evalProcessor) forwardLateResult(td ptrace.Traces, origin any) {
	rt, _ := origin.(route)
	p.tel.lateResults.Add(context.Background(), 1)
	if p.resultLogsOn() {
		if ld, n := lateResultRecords(td, p.eng.Instances(), pcommon.NewTimestampFromTime(time.Now())); n > 0 {
			p.tel.resultRecords.Add(context.Background(), int64(n))
			p.fwd.pushLogs(routed[plog.Logs]{data: ld, n: n})
		}
	}
	// Its result records above go on; the span goes with its trace when
	// sampling dropped it.
	if td, _ = p.sampling.dropLate(td); td.SpanCount() > 0 {
		p.fwd.pushTraces(routedTraces{route: rt, data: td, n: td.SpanCount()})
	}
}

// ingestQueue is how many consume calls' chunks may wait for the loop. An
// unbuffered hand-over made each call wait until the loop, woken, got a
// core the workers held.
const ingestQueue = 16
