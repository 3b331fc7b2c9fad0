package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// A judge that answers after the trace's timeout: the evaluated span says
// `timeout`, and the answer arrives as a span of its own, child of and linked
// to the evaluated span, carrying the same eval.* attributes and event.
func TestLateJudgeResultBecomesLinkedSpan(t *testing.T) {
	srv, release := judgetest.NewHeld(t, `{"score": 0.25, "reason": "the hotel was never booked"}`)
	e, sink := lateEngine(t, helpfulJudgeYAML(srv.Endpoint()))
	spans := loadTrace(t, semconvTrace)
	// The trace's time is up before the judge answers.
	if r := results(scoreTimedOut(e, spans))["helpful"]; r.Status != evaluators.StatusTimeout || !strings.Contains(r.Reason, "late result follows") {
		t.Fatalf("on the trace: %+v", r)
	}
	agent := findSpan(spans, "invoke_agent travel_agent")
	release()

	sink.wait(t)
	sink.mu.Lock()
	td := sink.got[0]
	sink.mu.Unlock()
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

// A late result is redacted like one on time: the judge that answers after
// the trace's timeout quotes a planted e-mail address and IBAN; the
// late-result span's reason and explanation carry placeholders.
func TestLateResultIsRedacted(t *testing.T) {
	srv, release := judgetest.NewHeld(t, `{"score": 0.25, "reason": "refund to jane.doe@example.com, IBAN DE89 3704 0044 0532 0130 00"}`)
	e, sink := lateEngine(t, helpfulJudgeYAML(srv.Endpoint()))
	require.Equal(t, evaluators.StatusTimeout, results(scoreTimedOut(e, loadTrace(t, semconvTrace)))["helpful"].Status)
	release()
	sp := sink.firstSpan(t)
	const want = "judge scored 0.25 on [0, 1]; judge: refund to [REDACTED:email#1], IBAN [REDACTED:iban#1]"
	v, _ := sp.Attributes().Get("eval.helpful.reason")
	assert.Equal(t, want, v.Str())
	ex, _ := sp.Events().At(0).Attributes().Get("gen_ai.evaluation.explanation")
	assert.Equal(t, want, ex.Str())
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
	got := results(e.ScoreTrace(ctx, loadTrace(t, semconvTrace)))
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
	srv, _ := judgetest.NewHeld(t, `{"score": 1}`)
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "judge": "default", "criteria": "x"})
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	scoreTimedOut(e, loadTrace(t, semconvTrace))
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
	srv, release := judgetest.NewHeld(t, `{"score": 0.25, "reason": "r"}`)
	y := judgeYAML(srv.Endpoint(), 4,
		map[string]any{"type": "llm_judge", "name": "one", "judge": "default", "criteria": "x"},
		map[string]any{"type": "llm_judge", "name": "two", "judge": "default", "criteria": "y"})
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 16)
	defer func() { _ = e.Shutdown(context.Background()) }()

	spans := loadTrace(t, semconvTrace)
	var target *lateTarget
	ref := spans[0]
	t1 := e.newJudgeTask(&e.instances[0], &adapter.Case{}, ref, nil, &target, new(evaluators.Result))
	t2 := e.newJudgeTask(&e.instances[1], &adapter.Case{}, ref, nil, &target, new(evaluators.Result))
	if t1.target == nil || t1.target != t2.target {
		t.Fatalf("targets not shared: %p %p", t1.target, t2.target)
	}

	scoreTimedOut(e, spans)
	release()
	sink.wait(t)
	sink.wait(t)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, td := range sink.got {
		if sn, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("service.name"); sn.Str() != "travel-agent" {
			t.Errorf("late span resource service.name = %q", sn.Str())
		}
	}
}
