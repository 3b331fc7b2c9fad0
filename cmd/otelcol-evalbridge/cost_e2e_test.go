package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// TestEndToEndJudgeCostBehindACascade: the collector with a priced judge
// behind a deterministic check. Only the run whose tool failed is judged;
// the cost metric on the collector's Prometheus endpoint is exactly the
// price of the tokens the judge reported.
func TestEndToEndJudgeCostBehindACascade(t *testing.T) {
	const verdict = `{"accomplished": false, "complete": false, "grounded": true, "failed_or_errored": true, "reason": "the payment failed and the agent said it booked"}`
	judgeSrv := judgetest.New(t, judgetest.Counting(verdict))
	be := testkit.NewSink(t)
	grpcAddr, promAddr := freeAddr(t), freeAddr(t)
	_, promPort, _ := net.SplitHostPort(promAddr)
	startCollector(t, testkit.Config(t, "testdata/judge-cost.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Judge": judgeSrv.Endpoint(), "PromPort": promPort}))

	ctx := context.Background()
	tp := newSDK(t, grpcAddr, "cost-e2e")
	tr := tp.Tracer("e2e")
	for i := range 4 {
		fail := ""
		if i == 2 {
			fail = "book_flight"
		}
		agentRun(ctx, tr, fmt.Sprintf("run%d", i), "", []string{"search_flights", "book_flight"}, fail)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	const want = 4 * 6
	deadline := time.Now().Add(20 * time.Second)
	for be.SpanCount() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if be.SpanCount() != want {
		t.Fatalf("backend received %d spans, want %d", be.SpanCount(), want)
	}
	for i := range 4 {
		s, _ := be.Span(fmt.Sprintf("run%d invoke_agent travel_agent", i))
		st, _ := s.Attributes().Get("eval.failure_review.status")
		reason, _ := s.Attributes().Get("eval.failure_review.reason")
		if i == 2 && st.Str() != "failed" || i != 2 && (st.Str() != "skipped" || reason.Str() != "run_if") {
			t.Errorf("run%d: failure_review %s (%s)", i, st.Str(), reason.Str())
		}
	}
	reqs := judgeSrv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("judge got %d requests, want 1 (the failed run only)", len(reqs))
	}
	price := judge.PriceConfig{InputPerMillionTokens: 0.15, OutputPerMillionTokens: 0.60, Currency: "USD"}
	wantCost := price.Cost(reqs[0].PromptTokens(), judgetest.CountTokens(verdict))

	resp, err := http.Get("http://" + promAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got []string
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "otelcol_processor_eval_judge_cost") {
			continue
		}
		got = append(got, line)
		if strings.HasPrefix(line, "otelcol_processor_eval_judge_cost{") {
			if !strings.Contains(line, `evaluator="failure_review"`) || !strings.Contains(line, `judge="default"`) {
				t.Errorf("labels: %s", line)
			}
			v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			if err != nil || v != wantCost {
				t.Errorf("cost metric %s, want exactly %v", line, wantCost)
			}
		}
	}
	if !strings.Contains(strings.Join(got, "\n"), "otelcol_processor_eval_judge_cost{") {
		t.Fatalf("no otelcol_processor_eval_judge_cost on /metrics; cost lines: %q", got)
	}
}
