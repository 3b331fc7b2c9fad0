package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/evalbridge/evalbridge/internal/judge/internal/metadata"
)

// Judge cost (docs/contract.md §21, docs/cost.md): the tokens each reply
// reports in `usage` are the source of truth for the cost and for both
// budgets; a reply without `usage` is booked with the estimate (input: the
// prompt's bytes/4 + 8 a message; output: the reply's bytes/4 + 8) and
// counted as estimated.

// ErrEstimateOnly is returned (wrapped) by a client in estimate mode
// (SetEstimateOnly): the call was recorded, not made. Judge evaluators
// report it as `skipped`.
var ErrEstimateOnly = errors.New("estimate only: the judge was not called")

// maxCostBudget bounds budget.cost_per_hour/day so that the budget's nano
// units fit in an int64.
const maxCostBudget = 1e9

// nanos is a cost in nano units of its currency, rounded up: the cost
// budget's unit (a budget is a bound, so rounding errs on spending less).
func nanos(cost float64) int64 { return int64(math.Ceil(cost * 1e9)) }

type evaluatorKey struct{}

// WithEvaluator returns ctx naming the evaluator instance a judge call is
// made for: the cost metric and Spend attribute the call's tokens to it.
func WithEvaluator(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, evaluatorKey{}, name)
}

// EvaluatorOf is the evaluator name WithEvaluator put in ctx, or "".
func EvaluatorOf(ctx context.Context) string {
	s, _ := ctx.Value(evaluatorKey{}).(string)
	return s
}

// EstimateInputTokens is the documented estimate of a request's input
// tokens: per message, its content's bytes / 4 (integer division) plus 8
// for the role and the message framing. It is what budgets and the token
// rate book before a reply says, what `evalctl estimate` reports, and what
// a reply without `usage` is booked with.
func EstimateInputTokens(msgs []Message) int64 {
	n := int64(0)
	for _, m := range msgs {
		n += estimateText(m.Content)
	}
	return n
}

func estimateText(s string) int64 { return int64(len(s))/4 + 8 }

// Spend is the judge work of one judge for one evaluator instance so far.
type Spend struct {
	Judge, Evaluator string
	// Calls counts the replies; Estimated those without `usage`, whose
	// tokens are estimates.
	Calls, Estimated int64
	// InputTokens and OutputTokens: reported, plus estimated for replies
	// without usage; EstimatedInputTokens/OutputTokens are that part.
	InputTokens, OutputTokens                   int64
	EstimatedInputTokens, EstimatedOutputTokens int64
	// Priced says the judge has a `price`; then Cost is
	// Price.Cost(InputTokens, OutputTokens) and EstimatedCost the part of
	// it from estimated tokens, in Currency.
	Priced              bool
	Cost, EstimatedCost float64
	Currency            string
}

// costBook sums the tokens of replies by evaluator.
type costBook struct {
	mu    sync.Mutex
	judge string
	price PriceConfig
	by    map[string]*Spend
}

func (b *costBook) add(evaluator string, in, out int64, estimated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.by[evaluator]
	if s == nil {
		s = &Spend{Judge: b.judge, Evaluator: evaluator}
		b.by[evaluator] = s
	}
	s.Calls++
	s.InputTokens += in
	s.OutputTokens += out
	if estimated {
		s.Estimated++
		s.EstimatedInputTokens += in
		s.EstimatedOutputTokens += out
	}
}

// snapshot lists the spend by evaluator name, with the costs computed
// from the token totals (never summed call by call, so they are exact
// functions of the totals).
func (b *costBook) snapshot() []Spend {
	b.mu.Lock()
	out := make([]Spend, 0, len(b.by))
	for _, s := range b.by {
		out = append(out, *s)
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Evaluator < out[j].Evaluator })
	if b.price.Set() {
		for i := range out {
			s := &out[i]
			s.Priced, s.Currency = true, b.price.Currency
			s.Cost = b.price.Cost(s.InputTokens, s.OutputTokens)
			s.EstimatedCost = b.price.Cost(s.EstimatedInputTokens, s.EstimatedOutputTokens)
		}
	}
	return out
}

// Spend lists what the judge's replies cost so far, by evaluator.
func (c *Client) Spend() []Spend { return c.book.snapshot() }

// Price is the judge's configured price (zero when none).
func (c *Client) Price() PriceConfig { return c.cfg.Price }

// MaxTokens is the `max_tokens` each request carries (0: none).
func (c *Client) MaxTokens() int { return c.cfg.MaxTokens }

// reserve books the most a call can spend, in tokens and cost, in the
// budgets before it is made (the reply's usage settles them, see account).
// It returns the booked amounts, or an error wrapping ErrBudgetExhausted.
//
// Booking the estimate (bytes/4) instead let calls made at once spend past
// a budget by what the estimate missed: CJK text takes 1-2 tokens a
// character, 3 bytes, so 40 calls on 8 connections spent 1.29x
// tokens_per_hour (issue 34, TestBudgetHoldsForCJKPrompts). A tokenizer
// makes at most one token of each byte (byte-level BPE, and SentencePiece
// with byte fallback), so the input bound is the bytes plus the framing,
// and the reply's is max_tokens (256 when it is not set: then a longer
// reply may pass the budget by what it is longer). The bound is 4x the
// estimate for English, refunded when the reply comes: it only refuses a
// call earlier near a budget's end.
func (c *Client) reserve(ctx context.Context, msgs []Message) (tokens, cost int64, err error) {
	in, out := inputBound(msgs), replyBound(c.cfg.MaxTokens)
	tokens = in + out
	now := c.now()
	if ok, window, used, limit := c.budget.reserve(now, tokens); !ok {
		c.tel.request(ctx, "budget_exhausted", 0)
		return 0, 0, fmt.Errorf("judge %q: %w: budget.%s is %d and %d are used in the window; this call may need up to %d",
			c.name, ErrBudgetExhausted, window, limit, used, tokens)
	}
	cost = nanos(c.cfg.Price.Cost(in, out))
	if ok, window, used, limit := c.costBudget.reserve(now, cost); !ok {
		c.budget.adjust(now, -tokens)
		c.tel.request(ctx, "budget_exhausted", 0)
		return 0, 0, fmt.Errorf("judge %q: %w: budget.%s is %g %s and %g are used in the window; this call may cost up to %g",
			c.name, ErrBudgetExhausted, window, float64(limit)/1e9, c.cfg.Price.Currency, float64(used)/1e9, float64(cost)/1e9)
	}
	return tokens, cost, nil
}

// inputBound is the most input tokens a request can count: one a byte,
// plus 8 a message for the role and framing.
func inputBound(msgs []Message) int64 {
	n := int64(0)
	for _, m := range msgs {
		n += int64(len(m.Content)) + 8
	}
	return n
}

// replyBound is the most reply tokens booked: max_tokens, or 256 without.
func replyBound(maxTokens int) int64 {
	if maxTokens > 0 {
		return int64(maxTokens)
	}
	return 256
}

// refund returns a reservation when no reply came.
func (c *Client) refund(tokens, cost int64) {
	now := c.now()
	c.budget.adjust(now, -tokens)
	c.costBudget.adjust(now, -cost)
}

// account books a reply: the tokens its `usage` reports, or, without
// usage, the estimate of its request and reply, counted as estimated.
// The budgets are corrected from the reservation to what was booked.
func (c *Client) account(ctx context.Context, msgs []Message, content string, u usage, tokens, cost int64) {
	in, out, estimated := u.in, u.out, false
	booked := in + out
	if in <= 0 && out <= 0 {
		in, out, estimated = EstimateInputTokens(msgs), estimateText(content), true
		booked = in + out
		if u.all > 0 { // only total_tokens: it is still the truth for the token budget
			booked = u.all
		}
		c.tel.usageEstimated(ctx)
	}
	now := c.now()
	c.budget.adjust(now, booked-tokens)
	c.costBudget.adjust(now, nanos(c.cfg.Price.Cost(in, out))-cost)
	c.book.add(EvaluatorOf(ctx), in, out, estimated)
}

// Call is one judge call an estimate recorded instead of making it.
type Call struct {
	Judge, Evaluator string
	// InputTokens is EstimateInputTokens of the request; MaxOutputTokens
	// its max_tokens (0: the request sets no bound).
	InputTokens, MaxOutputTokens int64
	// Cached says an identical request came before: with the verdict
	// cache on (cache_size > 0) a real run answers it from the cache.
	Cached bool
}

// estimator is the estimate mode of a client.
type estimator struct {
	mu     sync.Mutex
	record func(Call)
	seen   map[string]bool
}

// SetEstimateOnly puts the client in estimate mode: Complete records each
// request with record and returns an error wrapping ErrEstimateOnly; no
// request is sent and no budget is booked. Call it before the first
// Complete; the client needs no Start.
func (c *Client) SetEstimateOnly(record func(Call)) {
	c.est = &estimator{record: record, seen: map[string]bool{}}
}

func (c *Client) estimateCall(ctx context.Context, msgs []Message, key string) (string, error) {
	call := Call{Judge: c.name, Evaluator: EvaluatorOf(ctx), InputTokens: EstimateInputTokens(msgs), MaxOutputTokens: int64(c.cfg.MaxTokens)}
	c.est.mu.Lock()
	call.Cached = c.cfg.CacheSize > 0 && c.est.seen[key]
	c.est.seen[key] = true
	c.est.mu.Unlock()
	c.est.record(call)
	return "", fmt.Errorf("judge %q: %w", c.name, ErrEstimateOnly)
}

// costTelemetry reports the cost counters of a priced judge: observable
// counters reporting the cost of the token totals, so the metric is
// exactly Price.Cost of the tokens the replies reported.
//
//	otelcol_processor_eval_judge_cost            {judge, evaluator}  in the price's currency
//	otelcol_processor_eval_judge_cost_estimated  {judge, evaluator}  the part of it from replies without usage
func costTelemetry(tb *metadata.TelemetryBuilder, judgeAttr attribute.KeyValue, book *costBook) error {
	observe := func(part func(Spend) float64) metric.Float64Callback {
		return func(_ context.Context, o metric.Float64Observer) error {
			for _, s := range book.snapshot() {
				o.Observe(part(s), metric.WithAttributes(judgeAttr, attribute.String("evaluator", s.Evaluator)))
			}
			return nil
		}
	}
	return errors.Join(
		tb.RegisterProcessorEvalJudgeCostCallback(observe(func(s Spend) float64 { return s.Cost })),
		tb.RegisterProcessorEvalJudgeCostEstimatedCallback(observe(func(s Spend) float64 { return s.EstimatedCost })))
}
