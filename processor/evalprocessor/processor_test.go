package evalprocessor

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/config/configretry"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/redact"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "eval", f.Type().String())
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	cfg.Evaluators = toolErrorOnly()
	require.NoError(t, confmap.Validate(cfg))

	sink := new(consumertest.TracesSink)
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(Type), cfg, sink)
	require.NoError(t, err)
	assert.True(t, p.Capabilities().MutatesData, "held spans are moved out of the request")
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	b := newBatch()
	agentTrace(b, 1, false)
	require.NoError(t, p.ConsumeTraces(context.Background(), b.td))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 5, sink.SpanCount(), "shutdown scores and forwards what is held")
	assert.Equal(t, "passed", strAttr(spansOf(sink, 1)[1], "eval.tool_error.status"))

	// Shutdown without Start, and twice.
	p2, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p2.Shutdown(context.Background()))
	require.NoError(t, p2.Shutdown(context.Background()))
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	one, quarter := 0.5, 0.25

	tests := []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(Type), want: func() *Config {
			c := createDefaultConfig()
			c.Evaluators = []evaluators.Config{{Type: "tool_error", Options: map[string]any{}}}
			return c
		}()},
		{id: component.NewIDWithName(Type, "custom"), want: &Config{Config: engine.Config{
			Wait: 10 * time.Second, RootGrace: 2 * time.Second, MaxTraces: 1000, Timeout: 30 * time.Second, Workers: 8, LateResults: "drop", ResultLogRecords: true,
			Sessions:             sessions.NewDefaultConfig(),
			MaxPendingJudgeTasks: engine.DefaultMaxPendingJudgeTasks,
			Sampling:             engine.SamplingConfig{Failed: 1, Passed: 0.1, Unscored: 0.5},
			MaxHold:              time.Minute, MaxTraceSpans: 5000, Mode: engine.ModeHold, StorageFailure: engine.StorageFailureContinue,
			ReleaseRetry: func() configretry.BackOffConfig {
				r := engine.NewDefaultReleaseRetry()
				r.InitialInterval, r.MaxElapsedTime = 2*time.Second, time.Minute
				return r
			}(),
			Evaluators: []evaluators.Config{
				{Type: "tool_trajectory", Name: "booking_flow", Threshold: &one,
					When: []string{`attributes["gen_ai.agent.name"] == "travel_agent"`}, SampleRate: &quarter,
					Options: map[string]any{"mode": "in_order", "expected": []any{
						map[string]any{"name": "search_flights"},
						map[string]any{"name": "book_hotel", "arguments": map[string]any{"nights": 5}}}}},
				{Type: "tool_error", Options: map[string]any{}},
			},
			Storage: &storageID,
			Redaction: redact.Config{Detectors: []string{"email", "credit_card"},
				Patterns: []redact.Pattern{{Name: "customer_id", Regex: `CUST-\d{8}`}}, Replacement: "<{name}>"},
		}}},
		{id: component.NewIDWithName(Type, "no_evaluators"), wantErr: "at least one evaluator"},
		{id: component.NewIDWithName(Type, "negative_wait"), wantErr: "wait: -1s must not be negative"},
		{id: component.NewIDWithName(Type, "root_grace_above_wait"), wantErr: "root_grace"},
		{id: component.NewIDWithName(Type, "zero_workers"), wantErr: "workers: 0 must be positive"},
		{id: component.NewIDWithName(Type, "zero_max_traces"), wantErr: "max_traces: 0 must be positive"},
		{id: component.NewIDWithName(Type, "unknown_type"), wantErr: "unknown type"},
		{id: component.NewIDWithName(Type, "bad_when"), wantErr: "when"},
		{id: component.NewIDWithName(Type, "unknown_option"), wantErr: "no_such_option"},
		{id: component.NewIDWithName(Type, "bad_redaction"), wantErr: `redaction: patterns[0] (order): regex "ORD-(\\d+" is not valid RE2`},
		{id: component.NewIDWithName(Type, "bad_late_results"), wantErr: `late_results: "keep" must be span or drop`},
		{id: component.NewIDWithName(Type, "zero_max_hold"), wantErr: "max_hold: 0s must be positive"},
		{id: component.NewIDWithName(Type, "zero_max_trace_spans"), wantErr: "max_trace_spans: 0 must be positive"},
		{id: component.NewIDWithName(Type, "bad_release_retry"), wantErr: "must not be less than 'max_interval'"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			// Options decode as the YAML gave them; compare them loosely.
			require.Len(t, cfg.Evaluators, len(tt.want.Evaluators))
			for i := range cfg.Evaluators {
				if len(tt.want.Evaluators[i].Options) == 0 && len(cfg.Evaluators[i].Options) == 0 {
					cfg.Evaluators[i].Options = tt.want.Evaluators[i].Options
				}
			}
			assert.EqualValues(t, tt.want, cfg)
		})
	}
}

func TestDefaultsAndTick(t *testing.T) {
	cfg := createDefaultConfig()
	assert.Equal(t, 5*time.Second, cfg.Wait)
	assert.Equal(t, 50000, cfg.MaxTraces)
	assert.Equal(t, 60*time.Second, cfg.Timeout)
	assert.Equal(t, 500*time.Millisecond, cfg.tickInterval())
	cfg.RootGrace = 200 * time.Millisecond
	assert.Equal(t, 20*time.Millisecond, cfg.tickInterval())
	cfg.Wait, cfg.RootGrace = 0, 0
	assert.Equal(t, time.Millisecond, cfg.tickInterval())
}

func TestNonGenAIPassThroughAtOnce(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	b.plain(7, 1, 0)
	b.plain(7, 2, 1)
	b.plain(8, 1, 0)
	h.consume(b.td)
	// Forwarded within ConsumeTraces, before any tick, and as-is (no copy).
	require.Len(t, h.sink.AllTraces(), 1)
	assert.Equal(t, b.td, h.sink.AllTraces()[0])

	// Mixed batch: the non-GenAI trace goes on at once, the GenAI one waits.
	h.sink.Reset()
	b = newBatch()
	b.plain(9, 1, 0)
	agentTrace(b, 1, false)
	h.consume(b.td)
	assert.Equal(t, 1, h.sink.SpanCount())
	assert.Len(t, spansOf(h.sink, 9), 1)
	h.clk.advance(0) // a barrier: the loop has taken in the chunk
	assert.Equal(t, int64(1), h.counter(metricTracesHeld))

	h.clk.advance(time.Second)
	h.waitSpans(6)
	assert.Equal(t, int64(0), h.counter(metricTracesHeld))
}

func TestTraceSplitAcrossBatchesScoredOnce(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b1 := newBatch()
	b1.agent(1)
	b1.plain(7, 1, 0)
	h.consume(b1.td)
	assert.Equal(t, 1, h.sink.SpanCount(), "only the non-GenAI span goes on")

	h.clk.advance(600 * time.Millisecond) // not yet: wait is 1s
	b2 := newBatch()
	b2.plain(1, 5, 1) // not a GenAI span, but of a held trace: held too
	b2.tool(1, 3, "search_flights", false)
	h.consume(b2.td)
	h.clk.advance(600 * time.Millisecond) // 1.2s after the first, 0.6s after the last span
	b3 := newBatch()
	b3.tool(1, 4, "book_hotel", true)
	h.consume(b3.td)
	assert.Equal(t, 1, h.sink.SpanCount())

	h.clk.advance(999 * time.Millisecond)
	assert.Equal(t, 1, h.sink.SpanCount(), "held until wait has passed since the last span")
	h.clk.advance(time.Millisecond)
	h.waitSpans(5)

	got := spansOf(h.sink, 1)
	require.Len(t, got, 4)
	assert.Equal(t, "failed", strAttr(got[1], "eval.tool_error.status"))
	assert.Equal(t, "0.5", strAttr(got[1], "eval.tool_error.score"))
	for _, td := range h.sink.AllTraces()[1:] {
		assert.Equal(t, 4, td.SpanCount(), "the trace is forwarded once, whole")
	}
	assert.Equal(t, int64(1), h.counter(metricTracesScored))
	assert.Equal(t, int64(1), h.counter(metricEvaluations, "evaluator", "tool_error", "status", "failed"))
	assert.Equal(t, uint64(1), h.histogramCount(metricScore, "evaluator", "tool_error"))
	assert.Equal(t, uint64(1), h.histogramCount(metricEvaluationDuration))
}

func TestRootGrace(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RootGrace = 100 * time.Millisecond }, nil, nil)
	b := newBatch()
	agentTrace(b, 1, false)
	b.tool(2, 3, "search_flights", false) // trace 2: its root has not arrived
	b.span(2, 2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	h.consume(b.td)
	h.clk.advance(100 * time.Millisecond)
	h.waitSpans(5)
	assert.Len(t, spansOf(h.sink, 1), 5)
	h.clk.advance(900 * time.Millisecond)
	h.waitSpans(7)
}

func TestLateSpans(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(5)

	late := newBatch()
	late.tool(1, 9, "search_flights", true)
	h.consume(late.td)
	assert.Equal(t, 6, h.sink.SpanCount(), "late spans go on at once")
	assert.Equal(t, late.td, h.sink.AllTraces()[len(h.sink.AllTraces())-1], "as they are")
	assert.Equal(t, int64(1), h.counter(metricSpansLate))
	assert.Equal(t, int64(1), h.counter(metricTracesScored), "not scored again")
}

func TestOverflowForwardsOldestUnscored(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxTraces = 2 }, nil, nil)
	for tr := byte(1); tr <= 3; tr++ {
		b := newBatch()
		agentTrace(b, tr, false)
		h.consume(b.td)
		h.clk.advance(10 * time.Millisecond)
	}
	h.waitSpans(5) // trace 1, without a tick
	got := spansOf(h.sink, 1)
	require.Len(t, got, 5)
	assert.Empty(t, strAttr(got[1], "eval.tool_error.status"), "forwarded unscored")
	assert.Equal(t, int64(5), h.counter(metricSpansUnscored, "reason", "overflow"))
	assert.Equal(t, int64(2), h.counter(metricTracesHeld))

	h.clk.advance(time.Second)
	h.waitSpans(15)
	assert.Equal(t, "passed", strAttr(spansOf(h.sink, 3)[1], "eval.tool_error.status"))

	// Spans of the evicted trace arriving later are late, not a new trace.
	b := newBatch()
	b.tool(1, 8, "x", false)
	h.consume(b.td)
	assert.Equal(t, int64(1), h.counter(metricSpansLate))
}

func TestTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timeout = time.Nanosecond }, nil, nil)
	assert.Equal(t, "timeout", strAttr(h.scoreAgentTrace(), "eval.tool_error.status"))
	assert.Equal(t, int64(1), h.counter(metricEvaluations, "evaluator", "tool_error", "status", "timeout"))
}

func TestShutdownFlush(t *testing.T) {
	t.Run("scored", func(t *testing.T) {
		h := newHarness(t, nil, nil, nil)
		for tr := byte(1); tr <= 3; tr++ {
			b := newBatch()
			agentTrace(b, tr, tr == 2)
			h.consume(b.td)
		}
		h.shutdown(context.Background())
		assert.Equal(t, 15, h.sink.SpanCount())
		assert.Equal(t, "failed", strAttr(spansOf(h.sink, 2)[1], "eval.tool_error.status"))
		assert.Equal(t, "passed", strAttr(spansOf(h.sink, 3)[1], "eval.tool_error.status"))
		assert.Equal(t, int64(0), h.counter(metricSpansUnscored))
		// After Shutdown spans still go on.
		b := newBatch()
		agentTrace(b, 4, false)
		require.NoError(t, h.p.ConsumeTraces(context.Background(), b.td))
		assert.Equal(t, 20, h.sink.SpanCount())
	})
	t.Run("unscored when the shutdown context has ended", func(t *testing.T) {
		h := newHarness(t, nil, nil, nil)
		for tr := byte(1); tr <= 3; tr++ {
			b := newBatch()
			agentTrace(b, tr, false)
			h.consume(b.td)
		}
		h.shutdownNow()
		assert.Equal(t, 15, h.sink.SpanCount(), "nothing dropped")
		assert.Empty(t, strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
		assert.Equal(t, int64(15), h.counter(metricSpansUnscored, "reason", "shutdown"))
	})
}

// A permanent refusal of released spans is logged and counted (a retryable
// one is retried: see TestRetryableRefusalKeepsSpans).
func TestNextConsumerError(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	boom := consumererror.NewPermanent(errors.New("boom"))
	h := newHarness(t, nil, consumertest.NewErr(boom), zap.New(core))

	// Pass-through: the error goes back to the caller.
	b := newBatch()
	b.plain(7, 1, 0)
	require.ErrorIs(t, h.p.ConsumeTraces(context.Background(), b.td), boom)
	assert.Equal(t, int64(1), h.counter(metricNextConsumerErrors))

	// Released asynchronously: logged and counted, not retried.
	b = newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return h.counter(metricSpansDropped, "reason", "permanent") == 5 },
		5*time.Second, time.Millisecond, "undelivered: %d", h.counter(metricSpansDropped))
	assert.Equal(t, int64(2), h.counter(metricNextConsumerErrors))
	assert.Equal(t, int64(0), h.counter(metricReleaseRetries))
	e := logs.FilterMessageSnippet("refused them permanently").All()
	require.Len(t, e, 1)
	assert.Equal(t, int64(5), e[0].ContextMap()["items"])
	assert.Contains(t, e[0].ContextMap()["error"], "boom")
}

func TestBadInput(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	// regex reads the output, so the (malformed) conversation is decoded too;
	// with tool evaluators only it would not be read, nor reported.
	h := newHarness(t, func(c *Config) {
		c.Evaluators = append(toolErrorOnly(), evaluators.Config{Type: "regex", Options: map[string]any{"pattern": "."}})
	}, nil, zap.New(core))
	for tr := byte(1); tr <= 2; tr++ {
		b := newBatch()
		b.agent(tr)
		b.span(tr, 2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat",
			"gen_ai.input.messages": `[{"role": "user", "parts": [`})
		sp := b.tool(tr, 3, "search_flights", false)
		sp.Attributes().PutStr("gen_ai.tool.call.arguments", `{"q": `)
		h.consume(b.td)
	}
	h.clk.advance(time.Second)
	h.waitSpans(6)
	assert.Len(t, spansOf(h.sink, 1), 3, "bad spans still go on")
	assert.GreaterOrEqual(t, h.counter(metricBadInputProblems), int64(4))
	assert.Equal(t, 1, logs.FilterMessageSnippet("bad GenAI input").Len(), "warned once, then at debug level")
}

func TestInputNotMutated(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	agentTrace(b, 1, true)
	b.plain(7, 1, 0)
	want := ptrace.NewTraces()
	b.td.CopyTo(want)
	want.MarkReadOnly()
	b.td.MarkReadOnly()
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(6)
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
	assert.Equal(t, want, b.td, "input unchanged")

	// Late spans and pass-through of read-only input.
	late := newBatch()
	late.tool(1, 9, "x", false)
	late.td.MarkReadOnly()
	h.consume(late.td)
	h.waitSpans(7)
}

func TestSampleRateAndWhen(t *testing.T) {
	zero, one := 0.0, 1.0
	h := newHarness(t, func(c *Config) {
		c.Evaluators = []evaluators.Config{
			{Type: "tool_error", Name: "never_sampled", SampleRate: &zero},
			{Type: "tool_error", Name: "always_sampled", SampleRate: &one},
			{Type: "tool_error", Name: "travel_only", When: []string{`attributes["gen_ai.agent.name"] == "travel_agent"`}},
			{Type: "tool_error", Name: "other_agent", When: []string{`attributes["gen_ai.agent.name"] == "other"`}},
		}
	}, nil, nil)
	root := h.scoreAgentTrace()
	assert.Empty(t, strAttr(root, "eval.never_sampled.status"))
	assert.Equal(t, "passed", strAttr(root, "eval.always_sampled.status"))
	assert.Equal(t, "passed", strAttr(root, "eval.travel_only.status"))
	assert.Empty(t, strAttr(root, "eval.other_agent.status"))
}

func TestConcurrentConsumers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers = 3 }, nil, nil)
	const n = 40
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < n/4; i++ {
				b := newBatch()
				agentTrace(b, byte(g*n/4+i+1), i%2 == 0)
				b.plain(byte(200+g), byte(i+1), 0)
				assert.NoError(t, h.p.ConsumeTraces(context.Background(), b.td))
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	h.clk.advance(time.Second)
	h.waitSpans(n*5 + n)
	assert.Equal(t, int64(n), h.counter(metricTracesScored))
}

// A panic while a trace is scored and forwarded is recovered by the worker;
// it must be logged, not swallowed (the once-only finisher had already run,
// so nothing else reported it).
func TestPanicWhileForwardingIsLogged(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	next, err := consumer.NewTraces(func(context.Context, ptrace.Traces) error { panic("downstream boom") })
	require.NoError(t, err)
	h := newHarness(t, nil, next, zap.New(core))
	b := newBatch()
	agentTrace(b, 1, false)
	h.consume(b.td)
	h.clk.advance(time.Second)
	require.Eventually(t, func() bool { return logs.FilterMessageSnippet("panicked").Len() == 1 },
		5*time.Second, time.Millisecond)
	e := logs.FilterMessageSnippet("panicked").All()[0]
	assert.Equal(t, zapcore.ErrorLevel, e.Level)
	assert.Equal(t, "downstream boom", e.ContextMap()["panic"])
	assert.Equal(t, tid(1).String(), e.ContextMap()["trace_id"])
}
