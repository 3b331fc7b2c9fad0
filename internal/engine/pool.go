package engine

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Task is one piece of background work of the engine: a judge evaluation
// today, any evaluator that waits on a remote service tomorrow. A worker
// calls Run once; every task queued is run, also at Shutdown (which cancels
// the contexts the tasks hold, so they end fast). Run must not block past
// its own context.
type Task interface {
	Run()
}

// Metrics of the background work.
const (
	metricJudgeTasksPending = "otelcol_processor_eval_judge_tasks_pending"
	metricJudgeTasksSkipped = "otelcol_processor_eval_judge_tasks_skipped"
)

// errPoolFull and errPoolStopped say why Submit refused a task.
var (
	errPoolFull    = errors.New("the backlog of judge tasks is full")
	errPoolStopped = errors.New("the engine's judge workers are not running (not started, or shut down)")
)

// pool runs Tasks on a fixed number of workers from a queue bounded by
// max_pending_judge_tasks: the goroutines of the engine do not grow with
// the traces waiting for a judge, and what waits is bounded and measured.
// Start launches the workers, Stop drains the queue and waits for them.
type pool struct {
	workers int
	queue   chan Task

	mu      sync.RWMutex // guards running and the closing of queue
	running bool
	stopped bool
	wg      sync.WaitGroup

	pending metric.Int64UpDownCounter
	skipped metric.Int64Counter
}

func newPool(workers, maxPending int, set component.TelemetrySettings) (*pool, error) {
	mp := set.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(LateScopeName)
	p := &pool{workers: max(workers, 1), queue: make(chan Task, max(maxPending, 1))}
	var err, errs error
	p.pending, err = m.Int64UpDownCounter(metricJudgeTasksPending,
		metric.WithDescription("Judge tasks waiting for a worker (bounded by max_pending_judge_tasks)."), metric.WithUnit("{task}"))
	errs = errors.Join(errs, err)
	p.skipped, err = m.Int64Counter(metricJudgeTasksSkipped,
		metric.WithDescription("Judge evaluations skipped because max_pending_judge_tasks tasks were already waiting."),
		metric.WithUnit("{task}"))
	errs = errors.Join(errs, err)
	return p, errs
}

// start launches the workers; later calls do nothing.
func (p *pool) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.stopped {
		return
	}
	p.running = true
	p.wg.Add(p.workers)
	for range p.workers {
		go p.work()
	}
}

func (p *pool) work() {
	defer p.wg.Done()
	for t := range p.queue {
		p.pending.Add(context.Background(), -1)
		t.Run()
	}
}

// submit queues t without blocking: errPoolFull when max_pending tasks
// already wait (counted), errPoolStopped when no worker runs.
func (p *pool) submit(t Task) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.running {
		return errPoolStopped
	}
	select {
	case p.queue <- t:
		p.pending.Add(context.Background(), 1)
		return nil
	default:
		p.skipped.Add(context.Background(), 1)
		return errPoolFull
	}
}

// stop refuses new tasks and waits until the workers have run every task
// queued (the engine's Shutdown cancels their contexts, so they end fast).
// Without start, it does nothing. Safe twice.
func (p *pool) stop() {
	p.mu.Lock()
	wasRunning := p.running
	p.running, p.stopped = false, true
	if wasRunning {
		close(p.queue)
	}
	p.mu.Unlock()
	if wasRunning {
		p.wg.Wait()
	}
}
