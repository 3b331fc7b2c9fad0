package adapter

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A token count or latency that is not a number of tokens or nanoseconds is
// bad input: a problem names it and the case says the counts are invalid, so
// no limit can pass on it.
func TestBadCountsAreInvalid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       any
		problem string
	}{
		{"negative int", int64(-5), "-5 is negative"},
		{"negative string", "-7", "-7 is negative"},
		{"negative double", -2.5, "-2.5 is negative"},
		{"NaN double", math.NaN(), "NaN is not a count"},
		{"NaN string", "NaN", "NaN is not a count"},
		{"+Inf double", math.Inf(1), "+Inf is not a count"},
		{"-Inf string", "-Inf", "-Inf is not a count"},
		{"huge double", 1e30, "overflows a 64-bit count"},
		{"huge string", "99999999999999999999999", "overflows a 64-bit count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB(t)
			b.span("chat", 1, 0, 0, 10, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": tc.v})
			cases, problems := Adapt(b.refs())
			if !containsSub(problems, tc.problem) || !containsSub(problems, "gen_ai.usage.input_tokens") {
				t.Fatalf("no problem %q in %q", tc.problem, problems)
			}
			for _, c := range cases {
				if !strings.Contains(c.Usage.Invalid, tc.problem) {
					t.Errorf("%s case: Usage.Invalid = %q", c.Level, c.Usage.Invalid)
				}
				if c.Usage.InputTokens != 0 {
					t.Errorf("%s case: bad count kept as %d", c.Level, c.Usage.InputTokens)
				}
			}
		})
	}
}

func TestValidCountsStayValid(t *testing.T) {
	b := newTB(t)
	b.span("chat", 1, 0, 0, 10, map[string]any{"gen_ai.operation.name": "chat",
		"gen_ai.usage.input_tokens": 12.0, "gen_ai.usage.output_tokens": " 30 ", "gen_ai.usage.total_tokens": int64(0)})
	cases, problems := Adapt(b.refs())
	if len(problems) != 0 {
		t.Fatalf("problems %q", problems)
	}
	u := cases[0].Usage
	if u.Invalid != "" || u.InputTokens != 12 || u.OutputTokens != 30 || !u.HasTotalTokens || u.TotalTokens != 0 {
		t.Fatalf("usage %+v", u)
	}
}

// The run's usage is the sum of its LLM calls: a sum that overflows int64
// saturates and marks the counts invalid instead of wrapping negative
// (int64 max + 1 was −9223372036854775808, a count under every limit).
func TestUsageSumOverflowIsInvalid(t *testing.T) {
	b := newTB(t)
	b.span("agent", 1, 0, 0, 100, map[string]any{"gen_ai.operation.name": "invoke_agent"})
	for id := byte(2); id <= 3; id++ {
		b.span("chat", id, 1, 10, 20, map[string]any{"gen_ai.operation.name": "chat",
			"gen_ai.usage.input_tokens": int64(math.MaxInt64), "gen_ai.usage.output_tokens": int64(1)})
	}
	cases, _ := Adapt(b.refs())
	var agent *Case
	for i := range cases {
		if cases[i].Level == LevelAgent {
			agent = &cases[i]
		}
	}
	if agent == nil {
		t.Fatal("no agent case")
	}
	if agent.Usage.InputTokens != math.MaxInt64 || !strings.Contains(agent.Usage.Invalid, "overflow") {
		t.Fatalf("usage %+v", agent.Usage)
	}
	// One LLM call alone is valid, but its input + output overflows: Total
	// saturates rather than wrapping.
	u := Usage{InputTokens: math.MaxInt64, OutputTokens: 5, HasInputTokens: true, HasOutputTokens: true}
	if n, ok := u.Total(); !ok || n != math.MaxInt64 {
		t.Fatalf("total %d %v", n, ok)
	}
}

func TestBadLatency(t *testing.T) {
	b := newTB(t)
	b.span("chat", 1, 0, 50, 10, map[string]any{"gen_ai.operation.name": "chat"}) // ends before it starts
	cases, problems := Adapt(b.refs())
	if !containsSub(problems, "ends 40ms before it starts") {
		t.Fatalf("problems %q", problems)
	}
	if cases[0].Latency != 0 || !strings.Contains(cases[0].LatencyInvalid, "before it starts") {
		t.Fatalf("latency %v %q", cases[0].Latency, cases[0].LatencyInvalid)
	}

	b = newTB(t)
	sp := b.span("chat", 1, 0, 0, 0, map[string]any{"gen_ai.operation.name": "chat"})
	sp.SetStartTimestamp(1)
	sp.SetEndTimestamp(math.MaxUint64)
	cases, _ = Adapt(b.refs())
	if !strings.Contains(cases[0].LatencyInvalid, "overflows") {
		t.Fatalf("latency %v %q", cases[0].Latency, cases[0].LatencyInvalid)
	}

	// An unset timestamp is unknown, not bad.
	sp.SetStartTimestamp(0)
	cases, problems = Adapt(b.refs())
	if cases[0].Latency != 0 || cases[0].LatencyInvalid != "" || len(problems) != 0 {
		t.Fatalf("latency %v %q %q", cases[0].Latency, cases[0].LatencyInvalid, problems)
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// FuzzAdaptNumbers feeds token counts (as int, double or string attributes)
// and timestamps into an agent run of two LLM calls: whatever they are, the
// counts the cases carry are never negative, a count or latency that is not
// valid is said so (and reported as a problem), and nothing panics.
func FuzzAdaptNumbers(f *testing.F) {
	f.Add(int64(12), 30.0, "40", uint64(1), uint64(2), byte(0))
	f.Add(int64(math.MaxInt64), math.NaN(), "-1", uint64(5), uint64(1), byte(1))
	f.Add(int64(-1), math.Inf(1), "1e30", uint64(0), uint64(math.MaxUint64), byte(2))
	f.Add(int64(math.MaxInt64), 9.3e18, "9223372036854775807", uint64(1), uint64(math.MaxInt64+2), byte(3))
	f.Add(int64(0), -0.0, " 7 ", uint64(math.MaxUint64), uint64(math.MaxUint64), byte(4))
	f.Fuzz(func(t *testing.T, i int64, d float64, s string, start, end uint64, shape byte) {
		b := newTB(t)
		b.span("agent", 1, 0, 0, 100, map[string]any{"gen_ai.operation.name": "invoke_agent"})
		vals := []any{i, d, s}
		keys := []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.total_tokens"}
		for id := byte(2); id <= 3; id++ {
			a := map[string]any{"gen_ai.operation.name": "chat"}
			for k := range keys {
				a[keys[k]] = vals[(k+int(shape)+int(id))%3]
			}
			sp := b.span("chat", id, 1, 10, 20, a)
			sp.SetStartTimestamp(pcommon.Timestamp(start))
			sp.SetEndTimestamp(pcommon.Timestamp(end))
		}
		cases, problems := Adapt(b.refs())
		for _, c := range cases {
			u := c.Usage
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalTokens < 0 {
				t.Fatalf("%s case: negative count %+v", c.Level, u)
			}
			if n, ok := u.Total(); ok && n < 0 {
				t.Fatalf("%s case: negative total %d", c.Level, n)
			}
			if u.Invalid != "" && len(problems) == 0 {
				t.Fatalf("invalid counts without a problem: %q", u.Invalid)
			}
			if c.Latency < 0 || (c.LatencyInvalid != "" && c.Latency != 0) {
				t.Fatalf("latency %v %q", c.Latency, c.LatencyInvalid)
			}
			if c.LatencyInvalid != "" && !containsSub(problems, "not a valid latency") {
				t.Fatalf("invalid latency without a problem: %q", problems)
			}
		}
	})
}
