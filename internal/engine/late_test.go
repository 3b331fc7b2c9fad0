package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

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
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return sink
}

// firstSpan waits (10 s at most) for a late result and returns the first
// late span.
func (s *lateSink) firstSpan(t *testing.T) ptrace.Span {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no late result was delivered")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
}

// A judge that answers after the trace's timeout: the evaluated span says
// `timeout`, and the answer arrives as a span of its own, child of and linked
// to the evaluated span, carrying the same eval.* attributes and event.
func TestLateJudgeResultBecomesLinkedSpan(t *testing.T) {
	release := make(chan struct{})
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-release
		return judgetest.Reply{Content: `{"score": 0.25, "reason": "the hotel was never booked"}`}
	})
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "name": "helpful", "judge": "default", "criteria": "x"})
	y["timeout"] = "5s"
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	defer func() { _ = e.Shutdown(context.Background()) }()

	spans := loadTrace(t, "../../examples/traces/travel-agent-semconv.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { done <- r })
	// The trace's time is up before the judge answers.
	cancel()
	rep := <-done
	if r := results(rep)["helpful"]; r.Status != evaluators.StatusTimeout || !strings.Contains(r.Reason, "late result follows") {
		t.Fatalf("on the trace: %+v", r)
	}
	agent := findSpan(spans, "invoke_agent travel_agent")
	close(release)

	select {
	case <-sink.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no late result was delivered")
	}
	td := sink.got[0]
	if td.SpanCount() != 1 {
		t.Fatalf("late batch has %d spans", td.SpanCount())
	}
	rs := td.ResourceSpans().At(0)
	if sn, _ := rs.Resource().Attributes().Get("service.name"); sn.Str() != "travel-agent" {
		t.Errorf("late span resource service.name = %q", sn.Str())
	}
	sp := rs.ScopeSpans().At(0).Spans().At(0)
	if sp.TraceID() != agent.TraceID() || sp.ParentSpanID() != agent.SpanID() || sp.SpanID() == agent.SpanID() {
		t.Errorf("late span ids: trace %s parent %s", sp.TraceID(), sp.ParentSpanID())
	}
	if sp.Links().Len() != 1 || sp.Links().At(0).SpanID() != agent.SpanID() || sp.Links().At(0).TraceID() != agent.TraceID() {
		t.Errorf("late span is not linked to the evaluated span")
	}
	attrs := sp.Attributes().AsRaw()
	if attrs["eval.helpful.score"] != 0.25 || attrs["eval.helpful.status"] != "failed" || attrs["eval.late"] != true {
		t.Errorf("late span attributes: %v", attrs)
	}
	if f, _ := sp.Attributes().Get("eval.failed"); f.Slice().Len() != 1 {
		t.Errorf("eval.failed on the late span: %v", f.AsRaw())
	}
	if sp.Events().Len() != 1 || sp.Events().At(0).Name() != "gen_ai.evaluation.result" {
		t.Errorf("late span events: %d", sp.Events().Len())
	}
}

func TestLateResultsDropDeliversNothing(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 300 * time.Millisecond, Content: `{"score": 1}`}
	})
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"})
	y["late_results"] = "drop"
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got := results(e.ScoreTrace(ctx, loadTrace(t, "../../examples/traces/travel-agent-semconv.json")))
	if r := got["llm_judge"]; r.Status != evaluators.StatusTimeout || strings.Contains(r.Reason, "late result") {
		t.Fatalf("llm_judge: %+v", r)
	}
	// Shutdown waits for every judge goroutine; nothing may have been sent.
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sink.got) != 0 {
		t.Errorf("late_results: drop delivered %d spans", len(sink.got))
	}
}

// Shutdown cuts late judge calls short: it returns once no goroutine of the
// engine runs, even with a judge that never answers.
func TestShutdownStopsLateJudgeCalls(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-block
		return judgetest.Reply{Content: `{"score": 1}`}
	})
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"})
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, loadTrace(t, "../../examples/traces/travel-agent-semconv.json"), ScoreOptions{}, func(r Report) { done <- r })
	cancel()
	<-done
	sctx, scancel := context.WithCancel(context.Background())
	scancel() // no time left
	if err := e.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.got) != 0 {
		t.Errorf("a call cut short by Shutdown delivered %d late spans", len(sink.got))
	}
}

// The judge tasks of one case share one late target: its resource is copied
// once, however many judge evaluators run on the case, and both late spans
// still carry it (run with -race: the shared copy is only read).
func TestLateTargetSharedByTheTasksOfOneCase(t *testing.T) {
	release := make(chan struct{})
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-release
		return judgetest.Reply{Content: `{"score": 0.25, "reason": "r"}`}
	})
	y := judgeYAML(srv.Endpoint(), 4,
		map[string]any{"type": "llm_judge", "name": "one", "judge": "default", "criteria": "x"},
		map[string]any{"type": "llm_judge", "name": "two", "judge": "default", "criteria": "y"})
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 16)
	defer func() { _ = e.Shutdown(context.Background()) }()

	spans := loadTrace(t, "../../examples/traces/travel-agent-semconv.json")
	var target *lateTarget
	ref := spans[0]
	t1 := e.newJudgeTask(&e.instances[0], &adapter.Case{}, ref, nil, &target, new(evaluators.Result))
	t2 := e.newJudgeTask(&e.instances[1], &adapter.Case{}, ref, nil, &target, new(evaluators.Result))
	if t1.target == nil || t1.target != t2.target {
		t.Fatalf("targets not shared: %p %p", t1.target, t2.target)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { done <- r })
	cancel()
	<-done
	close(release)
	for i := 0; i < 2; i++ {
		select {
		case <-sink.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("late result %d not delivered", i+1)
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, td := range sink.got {
		if sn, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("service.name"); sn.Str() != "travel-agent" {
			t.Errorf("late span resource service.name = %q", sn.Str())
		}
	}
}
