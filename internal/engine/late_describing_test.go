package engine

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// A late result is what a monitor counts of a slow judge (the result on
// time says timeout, no case): its span carries the evaluated span's
// describing attributes, so it lands in the evaluated span's group
// (docs/contract.md §13: group_by reads the evaluated span's attributes),
// redacted as copied text is; not the evaluated span's content.
func TestLateResultCarriesTheEvaluatedSpansDescribingAttributes(t *testing.T) {
	srv, release := judgetest.NewHeld(t, `{"score": 0.25, "reason": "the hotel was never booked"}`)
	e, sink := lateEngine(t, helpfulJudgeYAML(srv.Endpoint()))
	spans := loadTrace(t, semconvTrace)
	agent := findSpan(spans, "invoke_agent travel_agent")
	agent.Attributes().PutStr("tenant.id", "acme")
	agent.Attributes().PutStr("user.email", "bob@example.com")
	agent.Attributes().PutStr("input.value", "book me a hotel")
	if r := results(scoreTimedOut(e, spans))["helpful"]; r.Status != evaluators.StatusTimeout {
		t.Fatalf("on the trace: %+v", r)
	}
	release()
	sink.wait(t)
	sink.mu.Lock()
	sp := sink.got[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	sink.mu.Unlock()
	attrs := sp.Attributes().AsRaw()
	if attrs["tenant.id"] != "acme" || attrs["gen_ai.agent.name"] != "travel_agent" {
		t.Errorf("late span attributes %v: want the evaluated span's tenant.id and agent name", attrs)
	}
	if email, _ := attrs["user.email"].(string); email == "" || strings.Contains(email, "bob@example.com") {
		t.Errorf("user.email on the late span = %q, want it redacted", email)
	}
	for _, k := range []string{"input.value", "gen_ai.operation.name"} {
		if _, ok := attrs[k]; ok {
			t.Errorf("%s copied onto the late span", k)
		}
	}
	if attrs["eval.helpful.status"] != "failed" || attrs["eval.late"] != true {
		t.Errorf("late span results: %v", attrs)
	}
}
