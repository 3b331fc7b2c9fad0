package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// TestEndToEndJudge: OTLP in -> eval with llm_judge against an
// OpenAI-compatible server -> OTLP out. The request has the chat-completions
// shape, the score is normalised from the judge's 1..5 scale, at most
// max_concurrency requests are in flight, and a judge that answers garbage
// gives `error` while the spans still go through.
func TestEndToEndJudge(t *testing.T) {
	judgeSrv := judgetest.New(t, func(n int, r judgetest.Request) judgetest.Reply {
		if strings.Contains(r.User(), "garbage please") {
			return judgetest.Reply{Content: "I refuse to answer in JSON."}
		}
		return judgetest.Reply{Delay: 50 * time.Millisecond, Content: "Verdict:\n```json\n{\"score\": 4, \"reason\": \"booked, no price\"}\n```"}
	})
	t.Setenv("E2E_JUDGE_KEY", "sk-e2e-judge")
	be := testkit.NewSink(t)
	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/judge.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Judge": judgeSrv.Endpoint()}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "judge-e2e")
	tr := tp.Tracer("e2e")
	for i := 0; i < 5; i++ {
		agentRun(ctx, tr, fmt.Sprintf("run%d", i), "", []string{"search_flights"}, "")
	}
	// A run whose final answer makes the scripted judge answer garbage.
	agentRunWithAnswer(ctx, tr, "garbage", "garbage please")
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	const want = 5*4 + 3
	deadline := time.Now().Add(20 * time.Second)
	for be.SpanCount() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if be.SpanCount() != want {
		t.Fatalf("backend received %d spans, want %d", be.SpanCount(), want)
	}
	for i := 0; i < 5; i++ {
		s, _ := be.Span(fmt.Sprintf("run%d invoke_agent travel_agent", i))
		checkResult(t, s, "helpful", 0.75, "passed") // (4-1)/(5-1)
	}
	g, _ := be.Span("garbage invoke_agent travel_agent")
	if v, _ := g.Attributes().Get("eval.helpful.status"); v.Str() != "error" {
		t.Errorf("garbage verdict: status %q, want error", v.Str())
	}
	reqs := judgeSrv.Requests()
	if len(reqs) != 6 {
		t.Errorf("judge got %d requests, want one per agent run (6)", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" || r.Model != "judge-model" || r.Temperature == nil || *r.Temperature != 0 ||
			r.Header.Get("Authorization") != "Bearer sk-e2e-judge" {
			t.Errorf("request shape: %+v", r)
			break
		}
	}
	if m := judgeSrv.MaxInFlight(); m > 2 {
		t.Errorf("%d judge requests in flight, max_concurrency is 2", m)
	}
}

// agentRunWithAnswer is one agent run with an LLM span whose final answer
// is text.
func agentRunWithAnswer(ctx context.Context, tr trace.Tracer, prefix, answer string) {
	ctx, agent := tr.Start(ctx, prefix+" invoke_agent travel_agent", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "travel_agent")))
	_, s := tr.Start(ctx, prefix+" chat gpt-4o", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Book a flight"}]}]`),
		attribute.String("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+answer+`"}]}]`)))
	s.End()
	_, h := tr.Start(ctx, prefix+" GET /health")
	h.End()
	agent.End()
}
