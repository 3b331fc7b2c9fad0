package engine

//go:generate go run ../telemetrydoc/mdgen -metadata ../../processor/evalprocessor/metadata.yaml

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/evalbridge/evalbridge/internal/engine/internal/metadata"
)

// Task is one piece of background work of the engine: a judge evaluation
// or a `remote` evaluation. A worker calls Run once; every task queued is
// run, also at Shutdown (which cancels the contexts the tasks hold, so they
// end fast). Run must not block past its own context.
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

// maxLaneWorkers bounds the workers of one lane (a judge's max_concurrency
// of 1000 must not start 1000 goroutines).
const maxLaneWorkers = 64

// laneSpec is one remote service the background work waits on: a judge of
// `judges:` or a `remote` evaluator, with the workers it may keep busy
// (its max_concurrency).
type laneSpec struct {
	key     string // `judge "<name>"` or `evaluator "<name>"`
	workers int
	// attr names the lane on the pool's metrics: judge=<name> or
	// evaluator=<name>.
	attr attribute.KeyValue
}

// lane is the share of the pool of one remote service: its own workers and
// its own queue, so that a judge that hangs holds only its own workers
// and fills only its own backlog, never another judge's.
type lane struct {
	key     string
	workers int
	queue   chan Task
	// opts carries the lane's attribute on every measurement (a list, so
	// that passing it allocates nothing).
	opts []metric.AddOption
}

// pool runs Tasks on fixed workers, per lane, from queues bounded together
// by max_pending_judge_tasks (each lane's share in proportion to its
// workers): the goroutines of the engine do not grow with the traces
// waiting for a judge, and what waits is bounded and measured. start
// launches the workers, stop drains the queues and waits for them.
type pool struct {
	lanes map[string]*lane

	mu      sync.RWMutex // guards running and the closing of the queues
	running bool
	stopped bool
	wg      sync.WaitGroup

	pending metric.Int64UpDownCounter
	skipped metric.Int64Counter
}

func newPool(specs []laneSpec, maxPending int, set component.TelemetrySettings) (*pool, error) {
	if set.MeterProvider == nil {
		set.MeterProvider = noop.NewMeterProvider()
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	p := &pool{pending: tb.ProcessorEvalJudgeTasksPending, skipped: tb.ProcessorEvalJudgeTasksSkipped, lanes: map[string]*lane{}}
	total := 0
	for _, s := range specs {
		if _, dup := p.lanes[s.key]; dup {
			continue
		}
		l := &lane{key: s.key, workers: min(max(s.workers, 1), maxLaneWorkers),
			opts: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(s.attr))}}
		p.lanes[s.key] = l
		total += l.workers
	}
	for _, l := range p.lanes {
		l.queue = make(chan Task, max(maxPending*l.workers/max(total, 1), 1))
	}
	return p, nil
}

// start launches the workers; later calls do nothing.
func (p *pool) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.stopped {
		return
	}
	p.running = true
	for _, l := range p.lanes {
		p.wg.Add(l.workers)
		for range l.workers {
			go p.work(l)
		}
	}
}

func (p *pool) work(l *lane) {
	defer p.wg.Done()
	for t := range l.queue {
		p.pending.Add(context.Background(), -1, l.opts...)
		t.Run()
	}
}

// submit queues t on its lane without blocking: errPoolFull when the
// lane's share of max_pending tasks already wait (counted), errPoolStopped
// when no worker runs.
func (p *pool) submit(key string, t Task) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.running {
		return errPoolStopped
	}
	l := p.lanes[key]
	if l == nil {
		return fmt.Errorf("no workers for %s (an engine bug)", key)
	}
	select {
	case l.queue <- t:
		p.pending.Add(context.Background(), 1, l.opts...)
		return nil
	default:
		p.skipped.Add(context.Background(), 1, l.opts...)
		return errPoolFull
	}
}

// share is the most tasks of a lane that may wait, for messages.
func (p *pool) share(key string) int {
	if l := p.lanes[key]; l != nil {
		return cap(l.queue)
	}
	return 0
}

// keys are the lanes, sorted (for tests and messages).
func (p *pool) keys() []string {
	out := make([]string, 0, len(p.lanes))
	for k := range p.lanes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// stop refuses new tasks and waits until the workers have run every task
// queued (the engine's Shutdown cancels their contexts, so they end fast).
// Without start, it does nothing. Safe twice.
func (p *pool) stop() {
	p.mu.Lock()
	wasRunning := p.running
	p.running, p.stopped = false, true
	if wasRunning {
		for _, l := range p.lanes {
			close(l.queue)
		}
	}
	p.mu.Unlock()
	if wasRunning {
		p.wg.Wait()
	}
}
