package evalprocessor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// arrivals records when each trace first reaches the next consumer.
type arrivals struct {
	mu sync.Mutex
	at map[pcommon.TraceID]time.Time
}

func (a *arrivals) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (a *arrivals) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		if _, ok := a.at[r.Span.TraceID()]; !ok {
			a.at[r.Span.TraceID()] = now
		}
	})
	return nil
}

func (a *arrivals) get(id pcommon.TraceID) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id]
	return t, ok
}

// BenchmarkJudgeSaturated: a judge that answers in 200ms with
// max_concurrency 8 can judge at most 40 traces/s. It reports judged
// traces/s (and the ratio to that ideal) and the forwarding delay of traces
// that need no judge, sent meanwhile: in the first and the second half of
// the run, to show it does not grow while the judge is saturated.
//
//	go test -run x -bench JudgeSaturated -benchtime 1x ./processor/evalprocessor/
func BenchmarkJudgeSaturated(b *testing.B) {
	const (
		judged    = 120
		judgeTime = 200 * time.Millisecond
		conc      = 8
		wait      = 10 * time.Millisecond
	)
	srv := judgetest.New(b, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: judgeTime, Content: `{"score": 0.9, "reason": "fine"}`}
	})
	for b.Loop() {
		cfg := createDefaultConfig()
		cfg.Wait = wait
		cfg.Workers = 4
		jc := judge.NewDefaultConfig()
		jc.Endpoint, jc.Model, jc.MaxConcurrency = srv.Endpoint(), "judge", conc
		cfg.Judges = map[string]judge.Config{"default": jc}
		cfg.Evaluators = []evaluators.Config{
			{Type: "tool_error"},
			{Type: "llm_judge", Name: "helpful", Judge: "default",
				When:    []string{`attributes["gen_ai.agent.name"] == "slow_agent"`},
				Options: map[string]any{"criteria": "Is the answer helpful?", "inputs": []any{"input", "output"}}},
		}
		sink := &arrivals{at: map[pcommon.TraceID]time.Time{}}
		p, err := newProcessor(processortest.NewNopSettings(Type), cfg, sink, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var judgedIDs []pcommon.TraceID
		sent := map[pcommon.TraceID]time.Time{}
		var plainIDs []pcommon.TraceID
		for i := 0; i < judged; i++ {
			jb := newBatch()
			id := byte(i)
			slowAgentTrace(jb, id)
			// A distinct prompt per trace, so the verdict cache does not answer.
			setTraceID(jb.td, pcommon.TraceID{1, byte(i), byte(i >> 8)})
			setInput(jb.td, fmt.Sprintf("book me a flight, request %d", i))
			judgedIDs = append(judgedIDs, pcommon.TraceID{1, byte(i), byte(i >> 8)})
			if err := p.ConsumeTraces(context.Background(), jb.td); err != nil {
				b.Fatal(err)
			}
			// Every few judged traces, one that needs no judge.
			if i%4 == 0 {
				pb := newBatch()
				agentTrace(pb, id, false)
				pid := pcommon.TraceID{2, byte(i), byte(i >> 8)}
				setTraceID(pb.td, pid)
				sent[pid] = time.Now()
				plainIDs = append(plainIDs, pid)
				if err := p.ConsumeTraces(context.Background(), pb.td); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(5 * time.Millisecond) // arrivals at ~200 traces/s, faster than the judge
		}
		var last time.Time
		for _, id := range judgedIDs {
			for {
				if t, ok := sink.get(id); ok {
					last = maxTime(last, t)
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if err := p.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		rate := float64(judged) / last.Sub(start).Seconds()
		ideal := float64(conc) / judgeTime.Seconds()
		b.ReportMetric(rate, "judged_traces/s")
		b.ReportMetric(rate/ideal, "ratio_to_ideal")
		var delays []time.Duration
		for _, id := range plainIDs {
			t, _ := sink.get(id)
			delays = append(delays, t.Sub(sent[id])-wait)
		}
		half := len(delays) / 2
		b.ReportMetric(float64(median(delays[:half]).Microseconds())/1000, "unjudged_delay_ms_first_half")
		b.ReportMetric(float64(median(delays[half:]).Microseconds())/1000, "unjudged_delay_ms_second_half")
		b.ReportMetric(float64(slices.Max(delays).Microseconds())/1000, "unjudged_delay_ms_max")
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func setTraceID(td ptrace.Traces, id pcommon.TraceID) {
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { r.Span.SetTraceID(id) })
}

func setInput(td ptrace.Traces, text string) {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for k := 0; k < spans.Len(); k++ {
		if s := spans.At(k); s.Name() == "chat gpt-4o" {
			s.Attributes().PutStr("gen_ai.input.messages", js([]any{map[string]any{"role": "user", "parts": []any{
				map[string]any{"type": "text", "content": text}}}}))
		}
	}
}
