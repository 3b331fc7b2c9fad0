package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/sessions"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// semconvTrace is the example agent run most tests score.
const semconvTrace = "../../examples/traces/travel-agent-semconv.json"

func loadTrace(t testing.TB, path string) []adapter.SpanRef {
	t.Helper()
	for _, spans := range adapter.GroupByTrace(testkit.ReadTraces(t, path)) {
		return spans
	}
	t.Fatal("no spans")
	return nil
}

// copySpans copies the spans of src (scoring writes into them).
func copySpans(src []adapter.SpanRef) []adapter.SpanRef {
	spans := make([]adapter.SpanRef, len(src))
	for i, s := range src {
		c := ptrace.NewSpan()
		s.Span.CopyTo(c)
		spans[i] = adapter.SpanRef{Span: c, ResourceSpans: s.ResourceSpans, ScopeSpans: s.ScopeSpans}
	}
	return spans
}

// decodeConfig decodes y strictly, as the collector does, and validates it.
func decodeConfig(t testing.TB, y map[string]any) *Config {
	t.Helper()
	cfg := NewDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(y).Unmarshal(&cfg))
	require.NoError(t, confmap.Validate(&cfg))
	return &cfg
}

// newEngine builds, without starting it, an engine from y with no-op
// telemetry; newEngineWith with the telemetry given.
func newEngine(t testing.TB, y map[string]any) *Engine {
	t.Helper()
	return newEngineWith(t, decodeConfig(t, y), componenttest.NewNopTelemetrySettings())
}

func newEngineWith(t testing.TB, cfg *Config, set component.TelemetrySettings) *Engine {
	t.Helper()
	e, err := New(cfg, set)
	require.NoError(t, err)
	return e
}

// started starts e and shuts it down (without error) when the test ends.
func started(t *testing.T, e *Engine) {
	t.Helper()
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
}

// startedEngine is newEngine then started.
func startedEngine(t *testing.T, y map[string]any) *Engine {
	t.Helper()
	e := newEngine(t, y)
	started(t, e)
	return e
}

func judgeYAML(endpoint string, maxConc int, evs ...map[string]any) map[string]any {
	list := make([]any, len(evs))
	for i, e := range evs {
		list[i] = e
	}
	return map[string]any{
		"judges": map[string]any{
			"default": map[string]any{"endpoint": endpoint, "model": "m", "api_key": "sk-x", "max_concurrency": maxConc},
		},
		"evaluators": list,
	}
}

// helpfulJudge is an llm_judge evaluator "helpful" on the default judge.
func helpfulJudge() map[string]any {
	return map[string]any{"type": "llm_judge", "name": "helpful", "judge": "default", "criteria": "x"}
}

// helpfulJudgeYAML is helpfulJudge on endpoint, with a trace timeout of 5s.
func helpfulJudgeYAML(endpoint string) map[string]any {
	y := judgeYAML(endpoint, 2, helpfulJudge())
	y["timeout"] = "5s"
	return y
}

func results(rep Report) map[string]evaluators.Result {
	out := map[string]evaluators.Result{}
	for _, ev := range rep.Evaluations {
		for _, r := range ev.Results {
			out[r.Name] = r
		}
	}
	return out
}

func findSpan(spans []adapter.SpanRef, name string) ptrace.Span {
	for _, s := range spans {
		if s.Span.Name() == name {
			return s.Span
		}
	}
	return ptrace.NewSpan()
}

// scoreAsync starts scoring spans with ScoreTraceAsync; the report arrives
// on the channel once the trace is finished, or once cancel ends the
// trace's time.
func scoreAsync(e *Engine, spans []adapter.SpanRef) (<-chan Report, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { done <- r })
	return done, cancel
}

// scoreTimedOut scores spans whose time is up at once (before any judge or
// remote evaluator can answer) and returns the report.
func scoreTimedOut(e *Engine, spans []adapter.SpanRef) Report {
	done, cancel := scoreAsync(e, spans)
	cancel()
	return <-done
}

type lateSink struct {
	mu  sync.Mutex
	got []ptrace.Traces
	ch  chan struct{}
}

func (s *lateSink) consume(td ptrace.Traces, _ any) {
	s.mu.Lock()
	s.got = append(s.got, td)
	s.mu.Unlock()
	s.ch <- struct{}{}
}

// startWithLateSink starts e with its late results going to a lateSink
// that holds up to buffered deliveries before it blocks the engine.
func startWithLateSink(t *testing.T, e *Engine, buffered int) *lateSink {
	t.Helper()
	sink := &lateSink{ch: make(chan struct{}, buffered)}
	e.SetLateResults(sink.consume)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	return sink
}

// lateEngine is an engine from y started with a lateSink of one delivery;
// it is shut down (its error ignored) when the test ends.
func lateEngine(t *testing.T, y map[string]any) (*Engine, *lateSink) {
	t.Helper()
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e, sink
}

// wait waits (10 s at most) for the next late delivery.
func (s *lateSink) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no late result was delivered")
	}
}

// firstSpan waits for a late result and returns the first late span.
func (s *lateSink) firstSpan(t *testing.T) ptrace.Span {
	t.Helper()
	s.wait(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
}

// recordTurns records every turn e scores in a new session store of cfg.
func recordTurns(e *Engine, cfg sessions.Config) *sessions.Store {
	store := sessions.NewStore(cfg, e.MaxFieldBytes())
	var mu sync.Mutex
	e.SetTurnSink(func(c *adapter.Case, ref adapter.SpanRef) {
		mu.Lock()
		defer mu.Unlock()
		store.Record(time.Now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	})
	return store
}

func scoreSession(t *testing.T, e *Engine, sn *sessions.Snapshot) SessionReport {
	t.Helper()
	ch := make(chan SessionReport, 1)
	e.ScoreSessionAsync(context.Background(), sn, nil, func(r SessionReport) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("session not scored")
	}
	return SessionReport{}
}
