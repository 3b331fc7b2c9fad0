package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// capturingJudge answers at once and keeps the last prompt.
type capturingJudge struct{ last []judge.Message }

func (j *capturingJudge) Complete(_ context.Context, msgs []judge.Message) (string, error) {
	j.last = msgs
	return `{"score": 0.8, "reason": "ok"}`, nil
}
func (j *capturingJudge) MaxFieldBytes() int { return 8192 }

// benchCase is an agent run with three tool calls and an answer of about
// size bytes; with pii, the user typed an e-mail address, a phone number
// and a card number, which the tool calls carry too.
func benchCase(size int, pii bool) adapter.Case {
	filler := strings.Repeat("The flight leaves at 10:45 on 2026-06-12 from gate B12, order ORD-2024-001234, fare $1,234.56. ", size/64+1)[:size]
	c := adapter.Case{
		Level:  adapter.LevelAgent,
		Input:  "I am jane.doe@example.com, call +44 20 7946 0958, charge 4111 1111 1111 1111. Book SFO to LIS on June 12.",
		Output: "Booked for jane.doe@example.com. " + filler,
	}
	email, card := "jane.doe@example.com", "4111111111111111"
	if !pii {
		c.Input = "I am Jane, a frequent flyer. Book SFO to LIS on June 12, window seat, no checked bags please."
		c.Output = "Booked for Jane. " + filler
		email, card = "on file", "on file"
	}
	for i, n := range []string{"search_flights", "book_flight", "charge_card"} {
		c.ToolCalls = append(c.ToolCalls, adapter.ToolCall{Name: n,
			Arguments: map[string]any{"email": email, "card": card, "n": i},
			Result:    `{"status":"ok","id":"` + fmt.Sprint(550+i) + `e8400-e29b-41d4-a716-446655440000"}`, HasResult: true})
	}
	return c
}

// BenchmarkRedactionPerPrompt measures, in the same run and interleaved,
// building an llm_judge prompt for a case (the evaluator's whole work with
// a judge that answers at once: fields, JSON, messages, reply decoding)
// and redacting that prompt the way the engine does before it is sent
// (every built-in detector); it reports the redaction's cost as a ratio
// of the building's.
func BenchmarkRedactionPerPrompt(b *testing.B) {
	for _, bc := range []struct {
		size int
		pii  bool
	}{{512, true}, {4096, true}, {512, false}, {4096, false}} {
		b.Run(fmt.Sprintf("answer=%dB/pii=%v", bc.size, bc.pii), func(b *testing.B) {
			j := &capturingJudge{}
			insts, err := evaluators.Build([]evaluators.Config{{Type: "llm_judge", Judge: "default",
				Options: map[string]any{"criteria": "Is the answer helpful?", "inputs": []any{"input", "output", "tool_calls"}}}},
				evaluators.Deps{Judges: map[string]evaluators.Judge{"default": j}, Telemetry: componenttest.NewNopTelemetrySettings()})
			if err != nil {
				b.Fatal(err)
			}
			r, err := redact.New(redact.NewDefaultConfig(), nil)
			if err != nil {
				b.Fatal(err)
			}
			c := benchCase(bc.size, bc.pii)
			ctx := context.Background()
			var build, red time.Duration
			promptBytes := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				insts[0].Evaluate(ctx, &c)
				t1 := time.Now()
				s := r.NewSession()
				for _, m := range j.last {
					_ = redactPrompt(s, m.Content)
				}
				build += t1.Sub(t0)
				red += time.Since(t1)
				if i == 0 {
					for _, m := range j.last {
						promptBytes += len(m.Content)
					}
				}
			}
			b.ReportMetric(float64(build.Nanoseconds())/float64(b.N), "build_ns/prompt")
			b.ReportMetric(float64(red.Nanoseconds())/float64(b.N), "redact_ns/prompt")
			b.ReportMetric(float64(red)/float64(build), "redact/build")
			b.ReportMetric(float64(promptBytes), "prompt_B")
		})
	}
}
