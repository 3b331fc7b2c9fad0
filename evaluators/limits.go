package evaluators

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

type latencyOptions struct {
	Max any `mapstructure:"max"`
}

type latency struct{ max time.Duration }

func newLatency(opts *confmap.Conf, _ Deps) (Evaluator, error) {
	var o latencyOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if o.Max == nil {
		return nil, fmt.Errorf("option `max` is required: a duration such as 2s or 1500ms, or a number of seconds")
	}
	d, err := parseLimitDuration(o.Max)
	if err != nil {
		return nil, fmt.Errorf("option `max`: %v", err)
	}
	if d <= 0 {
		return nil, fmt.Errorf("option `max`: %v must be a positive duration such as 2s", o.Max)
	}
	return &latency{max: d}, nil
}

// parseLimitDuration reads `max`: a Go duration string ("2s", "1500ms",
// "1m30s"), or a number of seconds given as a YAML number (2, 1.5) or as a
// string of digits ("2"). A bare number means seconds, the unit OpenTelemetry
// uses for durations (gen_ai.client.operation.duration); a YAML number must
// not silently become nanoseconds, as a time.Duration field would make it.
func parseLimitDuration(v any) (time.Duration, error) {
	secs := func(f float64) (time.Duration, error) {
		if f != f || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%v seconds is out of range", f)
		}
		return time.Duration(math.Round(f * float64(time.Second))), nil
	}
	if n, ok := toNumber(v); ok {
		return secs(n.float())
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("want a duration such as 2s or a number of seconds, got %v", v)
	}
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return secs(f)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 2s or 1500ms, nor a number of seconds", s)
	}
	return d, nil
}

// canonicalOptions spells `max` as a Go duration (spelledOptions): 2s,
// 2000ms, 2 and "2" are one limit.
func (l *latency) canonicalOptions(kept map[string]any) map[string]any {
	return respelled(kept, []string{"max"}, map[string]any{"max": l.max.String()})
}

func (l *latency) Evaluate(_ context.Context, c *adapter.Case) Result {
	// Bad timestamps are the adapter's problem (counted there); here they
	// are an error, never a latency that passes.
	if c.LatencyInvalid != "" {
		return Errored("bad input: %s; latency not checked", c.LatencyInvalid)
	}
	if c.Latency <= 0 {
		return Skipped("latency unknown")
	}
	m := map[string]float64{"latency_ms": float64(c.Latency) / float64(time.Millisecond), "max_ms": float64(l.max) / float64(time.Millisecond)}
	if c.Latency <= l.max {
		return Scored(1, fmt.Sprintf("latency %v within the limit of %v", c.Latency, l.max), m)
	}
	return Scored(0, fmt.Sprintf("latency %v exceeds the limit of %v", c.Latency, l.max), m)
}

type tokenOptions struct {
	// Max is the contract's `max` (the options of latency and token_usage
	// are listed together): for token_usage, the limit on the total.
	Max       *int64 `mapstructure:"max"`
	MaxInput  *int64 `mapstructure:"max_input"`
	MaxOutput *int64 `mapstructure:"max_output"`
	MaxTotal  *int64 `mapstructure:"max_total"`
}

type tokenUsage struct {
	o tokenOptions
	metricsOff
}

func newTokenUsage(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o tokenOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if o.MaxInput == nil && o.MaxOutput == nil && o.MaxTotal == nil && o.Max == nil {
		return nil, fmt.Errorf("at least one of the options `max_input`, `max_output`, `max_total` (or `max`, the total) is required")
	}
	if o.Max != nil && o.MaxTotal != nil && *o.Max != *o.MaxTotal {
		return nil, fmt.Errorf("options `max` and `max_total` both limit the total; give one")
	}
	if o.MaxTotal == nil {
		o.MaxTotal = o.Max
	}
	for name, v := range map[string]*int64{"max_input": o.MaxInput, "max_output": o.MaxOutput, "max_total": o.MaxTotal} {
		if v != nil && *v <= 0 {
			return nil, fmt.Errorf("option `%s`: %d must be > 0", name, *v)
		}
	}
	return &tokenUsage{o: o, metricsOff: metricsOff(deps.NoMetrics)}, nil
}

// canonicalOptions spells `max`, the alias of `max_total`, as `max_total`
// (spelledOptions).
func (t *tokenUsage) canonicalOptions(kept map[string]any) map[string]any {
	var total any
	if t.o.MaxTotal != nil {
		total = *t.o.MaxTotal
	}
	return respelled(kept, []string{"max", "max_total"}, map[string]any{"max_total": total})
}

// Evaluate checks every limit whose count is known; it skips only when no
// limited count is known.
func (t *tokenUsage) Evaluate(_ context.Context, c *adapter.Case) Result {
	u := c.Usage
	// Bad counts (negative, NaN, infinite, overflowing) are the adapter's
	// problem (counted there); here they are an error, never a pass.
	if u.Invalid != "" {
		return Errored("bad input: token counts are not valid (%s); limits not checked", u.Invalid)
	}
	total, hasTotal := u.Total()
	if !u.HasTotalTokens && hasTotal {
		if _, of := adapter.AddCounts(u.InputTokens, u.OutputTokens); of {
			return Errored("bad input: input tokens %d + output tokens %d overflow a 64-bit count; limits not checked",
				u.InputTokens, u.OutputTokens)
		}
	}
	type lim struct {
		name, key string
		max       *int64
		value     int64
		known     bool
	}
	lims := [...]lim{
		{"input", "input_tokens", t.o.MaxInput, u.InputTokens, u.HasInputTokens},
		{"output", "output_tokens", t.o.MaxOutput, u.OutputTokens, u.HasOutputTokens},
		{"total", "total_tokens", t.o.MaxTotal, total, hasTotal},
	}
	var m map[string]float64
	if !t.metricsOff {
		m = map[string]float64{}
	}
	// the limits over, within and unknown, by index in lims (no strings
	// until the reason is written, in one buffer)
	var overBuf, withinBuf, unknownBuf [len(lims)]int
	over, within, unknown := overBuf[:0], withinBuf[:0], unknownBuf[:0]
	for k, l := range lims {
		if l.max == nil {
			continue
		}
		if !l.known {
			unknown = append(unknown, k)
			continue
		}
		if m != nil {
			m[l.key] = float64(l.value)
		}
		if l.value > *l.max {
			over = append(over, k)
		} else {
			within = append(within, k)
		}
	}
	names := func(b *strings.Builder, idx []int) {
		for j, k := range idx {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(lims[k].name)
		}
	}
	if len(over)+len(within) == 0 {
		var b strings.Builder
		names(&b, unknown)
		return Skipped("token counts unknown (%s)", b.String())
	}
	// "<name> tokens <value> <op> <max>" for each limit of list
	head, list, op, score := "within the limits: ", within, " <= ", 1.0
	if len(over) > 0 {
		head, list, op, score = "over the limit: ", over, " > ", 0
	}
	var b strings.Builder
	b.Grow(128)
	b.WriteString(head)
	var num [20]byte
	for j, k := range list {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(lims[k].name)
		b.WriteString(" tokens ")
		b.Write(strconv.AppendInt(num[:0], lims[k].value, 10))
		b.WriteString(op)
		b.Write(strconv.AppendInt(num[:0], *lims[k].max, 10))
	}
	if len(unknown) > 0 {
		b.WriteString("; not checked (count unknown): ")
		names(&b, unknown)
	}
	return Scored(score, b.String(), m)
}
