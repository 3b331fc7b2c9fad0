package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

const judgeE2EConfig = `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[1]s
processors:
  eval:
    wait: 200ms
    judges:
      default:
        endpoint: %[3]s
        model: judge-model
        api_key: ${env:E2E_JUDGE_KEY}
        max_concurrency: 2
        cache_size: 0        # the runs ask the same question: one request per run, not one cached answer
    evaluators:
      - type: llm_judge
        name: helpful
        judge: default
        criteria: The answer says what was booked.
        inputs: [input, output]
        score_range: [1, 5]
        threshold: 0.75
exporters:
  otlp_http:
    endpoint: %[2]s
    retry_on_failure:
      enabled: false
` + quietService + `    traces:
      receivers: [otlp]
      processors: [eval]
      exporters: [otlp_http]
`

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
	be := &backend{spans: map[string]ptrace.Span{}}
	srv := httptest.NewServer(be)
	defer srv.Close()
	grpcAddr := freeAddr(t)
	startCollector(t, fmt.Sprintf(judgeE2EConfig, grpcAddr, srv.URL, judgeSrv.Endpoint()))

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
	for be.count() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if be.count() != want {
		t.Fatalf("backend received %d spans, want %d", be.count(), want)
	}
	for i := 0; i < 5; i++ {
		s, _ := be.get(fmt.Sprintf("run%d invoke_agent travel_agent", i))
		checkResult(t, s, "helpful", 0.75, "passed") // (4-1)/(5-1)
	}
	g, _ := be.get("garbage invoke_agent travel_agent")
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
