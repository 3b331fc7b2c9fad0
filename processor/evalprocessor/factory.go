// Package evalprocessor is the `eval` processor: it holds the spans of GenAI
// traces until each trace is complete, scores its cases with the configured
// evaluators, writes the results onto the spans and forwards them. Spans of
// traces without GenAI spans go through at once. Listed in a logs pipeline
// as well, the same instance holds the GenAI content log records with their
// traces and reads their content (docs/logs.md).
package evalprocessor

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

const stability = component.StabilityLevelAlpha

// Type is the component type, `eval`.
var Type = component.MustNewType("eval")

// NewFactory returns the factory of the `eval` processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithTraces(createTraces, stability),
		processor.WithLogs(createLogs, stability),
	)
}

// createTraces builds the processor, or shares the one another pipeline of
// the same component id already built, and gives this pipeline its own
// route: what comes in through it goes on through its next consumer
// (docs/contract.md §17). It does no work: the engine is built and every
// goroutine started in Start.
func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	sp, r, err := join(set, cfg, func(rs *routes) (route, error) { return rs.addTraces(next) })
	if err != nil {
		return nil, err
	}
	return &tracesPipeline{sharedProcessor: sp, route: r}, nil
}

// createLogs builds (or shares) the processor for a logs pipeline.
func createLogs(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	sp, r, err := join(set, cfg, func(rs *routes) (route, error) { return rs.addLogs(next) })
	if err != nil {
		return nil, err
	}
	return &logsPipeline{sharedProcessor: sp, route: r}, nil
}

// join builds (or shares) the processor of cfg and adds this pipeline's
// route to it.
func join(set processor.Settings, cfg component.Config, addRoute func(*routes) (route, error)) (*sharedProcessor, route, error) {
	sp, err := instances.get(set, cfg.(*Config))
	if err != nil {
		return nil, 0, err
	}
	r, err := addRoute(sp.routes)
	return sp, r, err
}

// tracesPipeline is the shared processor as one traces pipeline sees it.
type tracesPipeline struct {
	*sharedProcessor
	route route
}

func (t *tracesPipeline) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return t.consumeTraces(ctx, td, t.route)
}

// logsPipeline is the shared processor as one logs pipeline sees it.
type logsPipeline struct {
	*sharedProcessor
	route route
}

func (l *logsPipeline) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return l.consumeLogs(ctx, ld, l.route)
}

// instances holds one processor per component config: the traces and the
// logs pipelines of one component id share it, and so its held traces (the
// collector's shared-component pattern, as otlpreceiver and memory_limiter
// use it). The collector hands both create calls the same *Config.
var instances = &sharedInstances{m: map[*Config]*sharedProcessor{}}

type sharedInstances struct {
	mu sync.Mutex
	m  map[*Config]*sharedProcessor
}

func (s *sharedInstances) get(set processor.Settings, cfg *Config) (*sharedProcessor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, ok := s.m[cfg]
	if !ok {
		p, err := newProcessor(set, cfg, nil, nil)
		if err != nil {
			return nil, err
		}
		sp = &sharedProcessor{evalProcessor: p, key: cfg}
		s.m[cfg] = sp
	}
	return sp, nil
}

func (s *sharedInstances) remove(cfg *Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, cfg)
}

// sharedProcessor starts and shuts down its processor once, however many
// pipelines list it. The collector shuts components down in topological
// order, so at the first Shutdown every consumer downstream of every
// pipeline's `eval` still runs and takes the flush; what an upstream
// component of another pipeline sends after it goes straight through that
// pipeline (unscored, never lost).
type sharedProcessor struct {
	*evalProcessor
	key *Config

	startOnce, shutdownOnce sync.Once
	startErr, shutdownErr   error
}

func (s *sharedProcessor) Start(ctx context.Context, host component.Host) error {
	s.startOnce.Do(func() { s.startErr = s.evalProcessor.Start(ctx, host) })
	return s.startErr
}

func (s *sharedProcessor) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		instances.remove(s.key)
		s.shutdownErr = s.evalProcessor.Shutdown(ctx)
	})
	return s.shutdownErr
}
