package engine

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// reports collects the reports of ScoreTraceAsync calls (add is the done
// callback).
type reports struct {
	mu  sync.Mutex
	got []Report
}

func (r *reports) add(rep Report) {
	r.mu.Lock()
	r.got = append(r.got, rep)
	r.mu.Unlock()
}

// all is the reports so far.
func (r *reports) all() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Report(nil), r.got...)
}

// wait waits (30 s at most) for n reports and returns them.
func (r *reports) wait(t *testing.T, n int) []Report {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.all()) == n }, 30*time.Second, 10*time.Millisecond)
	return r.all()
}

// A judge that does not answer while 2000 traces arrive: the engine's
// goroutines stay flat (a fixed pool, no goroutine per task or per trace),
// at most max_pending_judge_tasks tasks wait, the rest are skipped with the
// reason and counted, and the backlog is a metric. When the judge answers,
// every waiting trace finishes and the backlog drains to 0.
func TestJudgeBacklogIsBounded(t *testing.T) {
	srv, unblock := judgetest.NewHeld(t, `{"score": 0.9, "reason": "fine"}`)
	defer unblock()

	const traces, maxPending, maxConc = 2000, 100, 2
	y := judgeYAML(srv.Endpoint(), maxConc, helpfulJudge())
	y["max_pending_judge_tasks"] = maxPending
	tel := componenttest.NewTelemetry()
	defer func() { _ = tel.Shutdown(context.Background()) }()
	e := newEngineWith(t, decodeConfig(t, y), tel.NewTelemetrySettings())
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	defer func() {
		unblock() // a failed assertion must not leave Shutdown waiting on the held judge
		require.NoError(t, e.Shutdown(context.Background()))
	}()

	load := func() []adapter.SpanRef { return loadTrace(t, semconvTrace) }
	base := runtime.NumGoroutine()
	var finished reports
	peak := 0
	for i := 0; i < traces; i++ {
		e.ScoreTraceAsync(context.Background(), load(), ScoreOptions{}, finished.add)
		peak = max(peak, runtime.NumGoroutine())
	}
	// Workers, the judge's server and its connections: a constant, not one
	// per trace (it was about one per trace and task before).
	require.Less(t, peak-base, 40, "goroutines grew from %d to %d", base, peak)

	early := finished.all()
	refused := len(early)
	for _, rep := range early {
		r := results(rep)["helpful"]
		require.Equal(t, evaluators.StatusSkipped, r.Status, r.Reason)
		require.Contains(t, r.Reason, `100 tasks for judge "default" are already waiting (its share of max_pending_judge_tasks 100)`)
	}
	// The workers took up to maxConc tasks off the queue before it filled.
	require.GreaterOrEqual(t, refused, traces-maxPending-maxConc)
	require.LessOrEqual(t, refused, traces-maxPending)
	require.Equal(t, int64(refused), testkit.IntSum(t, tel, metricJudgeTasksSkipped, "judge", "default"))
	require.Equal(t, int64(maxPending), testkit.IntSum(t, tel, metricJudgeTasksPending, "judge", "default"))

	unblock()
	all := finished.wait(t, traces)
	require.Equal(t, int64(0), testkit.IntSum(t, tel, metricJudgeTasksPending))
	scored := 0
	for _, rep := range all {
		if r := results(rep)["helpful"]; r.Status == evaluators.StatusPassed {
			scored++
		} else {
			require.True(t, strings.Contains(r.Reason, "max_pending_judge_tasks"), r.Reason)
		}
	}
	require.Equal(t, traces-refused, scored)
}

func TestMaxPendingJudgeTasksValidated(t *testing.T) {
	cfg := NewDefaultConfig()
	require.Equal(t, DefaultMaxPendingJudgeTasks, cfg.MaxPendingJudgeTasks)
	cfg.Evaluators = []evaluators.Config{{Type: "tool_error"}}
	cfg.MaxPendingJudgeTasks = 0
	require.ErrorContains(t, cfg.Validate(), "max_pending_judge_tasks: 0 must be positive")
}

// Bad token counts and timestamps reach the evaluators as bad input: the
// report lists the problems (the processor counts them) and token_usage and
// latency say error, never passed. int64 max twice used to wrap the total
// to a negative number "within" the limit.
func TestBadNumbersAreNeverAPass(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "token_usage", "max_total": 100000},
		map[string]any{"type": "latency", "max": "10s"},
	}})
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	tid := [16]byte{1}
	add := func(id, parent byte, start, end uint64, attrs map[string]any) {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID([8]byte{id})
		if parent != 0 {
			sp.SetParentSpanID([8]byte{parent})
		}
		sp.SetName("span")
		sp.SetStartTimestamp(pcommon.Timestamp(start))
		sp.SetEndTimestamp(pcommon.Timestamp(end))
		require.NoError(t, sp.Attributes().FromRaw(attrs))
	}
	add(1, 0, 2000, 1000, map[string]any{"gen_ai.operation.name": "invoke_agent"}) // ends before it starts
	for id := byte(2); id <= 3; id++ {
		add(id, 1, 1100, 1200, map[string]any{"gen_ai.operation.name": "chat",
			"gen_ai.usage.input_tokens": int64(math.MaxInt64), "gen_ai.usage.output_tokens": int64(1)})
	}
	rep := e.ScoreTrace(context.Background(), adapter.GroupByTrace(td)[tid])
	require.NotEmpty(t, rep.Problems)
	got := results(rep)
	require.Equal(t, evaluators.StatusError, got["token_usage"].Status, got["token_usage"].Reason)
	require.Contains(t, got["token_usage"].Reason, "overflow")
	require.Equal(t, evaluators.StatusError, got["latency"].Status, got["latency"].Reason)
	require.Contains(t, got["latency"].Reason, "before it starts")
}

// Shutdown does not wait past its context for queued or running judge
// tasks: with a judge that never answers, every trace is finished (done is
// called) and no goroutine of the engine is left (goleak in TestMain).
func TestShutdownFinishesQueuedJudgeTasks(t *testing.T) {
	srv, _ := judgetest.NewHeld(t, `{"score": 1}`)
	y := judgeYAML(srv.Endpoint(), 1, helpfulJudge())
	y["late_results"] = "drop"
	e := newEngine(t, y)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	const traces = 10
	done := make(chan Report, traces)
	for i := 0; i < traces; i++ {
		e.ScoreTraceAsync(context.Background(), loadTrace(t, semconvTrace), ScoreOptions{}, func(r Report) { done <- r })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, e.Shutdown(ctx))
	for i := 0; i < traces; i++ {
		r := results(<-done)["helpful"]
		require.NotEqual(t, evaluators.StatusPassed, r.Status, r.Reason)
	}
	// After Shutdown, judge work is refused at once, not queued.
	rep := e.ScoreTrace(context.Background(), loadTrace(t, semconvTrace))
	r := results(rep)["helpful"]
	require.Equal(t, evaluators.StatusError, r.Status)
	require.Contains(t, r.Reason, "not running")
}

// Two judges, one that hangs: each judge has its own workers (as many as
// its max_concurrency), so the hanging judge's tasks never take the
// workers of the other, whose evaluations all finish while the first hangs
// (issue 19: "one judge pool for all judges, a slow judge starves a fast one").
func TestHangingJudgeDoesNotTakeAnotherJudgesWorkers(t *testing.T) {
	slow, unblock := judgetest.NewHeld(t, `{"score": 0.9, "reason": "late"}`)
	var fastCalls atomic.Int32
	fast := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		fastCalls.Add(1)
		return judgetest.Reply{Content: `{"score": 0.9, "reason": "fine"}`}
	})
	const traces = 20
	y := map[string]any{
		"timeout": "2m",
		"judges": map[string]any{
			"slow": map[string]any{"endpoint": slow.Endpoint(), "model": "m", "max_concurrency": 2, "timeout": "2m"},
			"fast": map[string]any{"endpoint": fast.Endpoint(), "model": "m", "max_concurrency": 1, "cache_size": 0},
		},
		"evaluators": []any{
			map[string]any{"type": "llm_judge", "name": "slow_check", "judge": "slow", "criteria": "x"},
			map[string]any{"type": "llm_judge", "name": "fast_check", "judge": "fast", "criteria": "y"},
		},
	}
	e := newEngine(t, y)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	defer unblock() // before Shutdown, which waits for the slow calls
	require.Equal(t, []string{`judge "fast"`, `judge "slow"`}, e.pool.keys())

	var finished reports
	for range traces {
		e.ScoreTraceAsync(context.Background(), loadTrace(t, semconvTrace), ScoreOptions{}, finished.add)
	}
	// Every fast evaluation is made while the slow judge holds its calls:
	// with one shared pool (3 workers) the slow tasks took every worker
	// after 2 fast calls, and the rest waited for the slow judge.
	deadline := time.Now().Add(30 * time.Second)
	for fastCalls.Load() < traces && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, int32(traces), fastCalls.Load(), "fast judge calls made while the slow judge hangs")
	unblock()
	for _, rep := range finished.wait(t, traces) {
		rs := results(rep)
		require.Equal(t, evaluators.StatusPassed, rs["fast_check"].Status, rs["fast_check"].Reason)
		require.Equal(t, evaluators.StatusPassed, rs["slow_check"].Status, rs["slow_check"].Reason)
	}
}
