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

// createTraces builds the processor, or returns the one the logs pipeline
// of the same component id already built. It does no work: the engine is
// built and every goroutine started in Start.
func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return instances.get(set, cfg.(*Config), func(p *evalProcessor) { p.next = next })
}

// createLogs builds (or shares) the processor for a logs pipeline.
func createLogs(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	return instances.get(set, cfg.(*Config), func(p *evalProcessor) { p.nextLogs = next })
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

func (s *sharedInstances) get(set processor.Settings, cfg *Config, wire func(*evalProcessor)) (*sharedProcessor, error) {
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
	wire(sp.evalProcessor)
	return sp, nil
}

func (s *sharedInstances) remove(cfg *Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, cfg)
}

// sharedProcessor starts and shuts down its processor once, however many
// pipelines list it. The collector shuts every receiver down before any
// processor, so the first Shutdown finds no pipeline still sending.
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
