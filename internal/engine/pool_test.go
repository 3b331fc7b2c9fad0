package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// Two judges, one that hangs: each judge has its own workers (as many as
// its max_concurrency), so the hanging judge's tasks never take the
// workers of the other, whose evaluations all finish while the first hangs
// (issue 19: "one judge pool for all judges, a slow judge starves a fast one").
func TestHangingJudgeDoesNotTakeAnotherJudgesWorkers(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	slow := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-release
		return judgetest.Reply{Content: `{"score": 0.9, "reason": "late"}`}
	})
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
	cfg := NewDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(y).Unmarshal(&cfg))
	require.NoError(t, confmap.Validate(&cfg))
	e, err := New(&cfg, componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	defer unblock() // before Shutdown, which waits for the slow calls
	require.Equal(t, []string{`judge "fast"`, `judge "slow"`}, e.pool.keys())

	var mu sync.Mutex
	var finished []Report
	for range traces {
		e.ScoreTraceAsync(context.Background(), loadTrace(t, "../../examples/traces/travel-agent-semconv.json"), ScoreOptions{}, func(r Report) {
			mu.Lock()
			finished = append(finished, r)
			mu.Unlock()
		})
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
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(finished) == traces
	}, 30*time.Second, 10*time.Millisecond)
	for _, rep := range finished {
		rs := results(rep)
		require.Equal(t, evaluators.StatusPassed, rs["fast_check"].Status, rs["fast_check"].Reason)
		require.Equal(t, evaluators.StatusPassed, rs["slow_check"].Status, rs["slow_check"].Reason)
	}
}
