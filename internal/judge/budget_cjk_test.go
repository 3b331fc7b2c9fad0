package judge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// cjkTokens counts a text as a tokenizer that spends two tokens on each
// non-ASCII character does (cl100k on less common CJK characters): the
// ASCII part by judgetest.CountTokens, plus two per other rune.
func cjkTokens(s string) int64 {
	var ascii strings.Builder
	n := int64(0)
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii.WriteRune(r)
		} else {
			ascii.WriteByte(' ')
			n += 2
		}
	}
	return n + judgetest.CountTokens(ascii.String())
}

// The suspicion of issue 34: a budget booked len/4 tokens for a prompt
// before the call, so CJK prompts (3 bytes a character, 1-2 tokens each)
// were booked at a fraction of what they cost, and calls made at once
// together spent past cost_per_hour / tokens_per_hour. Confirmed: 40 calls
// on 8 connections with prompts of 1,500 CJK characters spent 1.29x the
// tokens budget and 1.31x the cost budget. A call now books the most it
// can spend (one token a byte, max_tokens for the reply) and settles on
// the reply, so what the replies report stays within the budget.
func TestBudgetHoldsForCJKPrompts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*judge.Config)
		// spent is what the replies reported, in the budget's unit, and
		// the budget.
		spent func(in, out int64) float64
		limit float64
	}{
		{"tokens_per_hour", func(c *judge.Config) { c.Budget.TokensPerHour = 40000 },
			func(in, out int64) float64 { return float64(in + out) }, 40000},
		{"cost_per_hour", func(c *judge.Config) {
			c.Price = judge.PriceConfig{InputPerMillionTokens: 1000, OutputPerMillionTokens: 4000, Currency: "USD"}
			c.Budget.CostPerHour = 40
		}, func(in, out int64) float64 {
			return judge.PriceConfig{InputPerMillionTokens: 1000, OutputPerMillionTokens: 4000}.Cost(in, out)
		}, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var in, out int64
			srv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
				const verdict = `{"score": 1, "reason": "好"}`
				rin := int64(0)
				for _, m := range r.Messages {
					rin += cjkTokens(m.Content) + 4
				}
				rout := cjkTokens(verdict)
				mu.Lock()
				in, out = in+rin, out+rout
				mu.Unlock()
				return judgetest.Reply{Delay: 30 * time.Millisecond, Content: verdict, InputTokens: rin, OutputTokens: rout}
			})
			cfg := testConfig(srv.Endpoint())
			cfg.CacheSize = 0
			cfg.MaxConcurrency = 8
			cfg.MaxTokens = 64
			tc.edit(&cfg)
			c := start(t, cfg)

			const calls, conns = 40, 8
			prompt := strings.Repeat("请评估这个代理是否完成了用户的预订任务。", 75) // 1,500 characters, 4,500 bytes
			work := make(chan int, calls)
			for i := range calls {
				work <- i
			}
			close(work)
			var wg sync.WaitGroup
			var refused, answered sync.Map
			for range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range work {
						msgs := []judge.Message{{Role: "system", Content: "你是评审。"}, {Role: "user", Content: fmt.Sprintf("%s (%d)", prompt, i)}}
						_, err := c.Complete(context.Background(), msgs)
						switch {
						case errors.Is(err, judge.ErrBudgetExhausted):
							refused.Store(i, true)
						case err != nil:
							t.Errorf("call %d: %v", i, err)
						default:
							answered.Store(i, true)
						}
					}
				}()
			}
			wg.Wait()
			n := 0
			answered.Range(func(any, any) bool { n++; return true })
			spent := tc.spent(in, out)
			t.Logf("%d calls answered, %d input and %d output tokens reported: %.4g spent of a budget of %.4g (%.2fx)",
				n, in, out, spent, tc.limit, spent/tc.limit)
			if n == 0 {
				t.Fatal("no call was answered: the test measured nothing")
			}
			if spent > tc.limit {
				t.Errorf("%s: the replies spent %.4g, %.2fx the budget of %.4g", tc.name, spent, spent/tc.limit, tc.limit)
			}
		})
	}
}
