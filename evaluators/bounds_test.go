package evaluators

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// bigCase is an agent run of n calls cycling over a few tools with
// arguments, expecting e calls of the same kind (shifted by one, so the
// comparison has work to do).
func bigCase(n, e int) *adapter.Case {
	made := make([]adapter.ToolCall, n)
	for i := range made {
		made[i] = call(fmt.Sprintf("tool_%d", i%7), obj("q", fmt.Sprintf("v%d", i%13), "n", float64(i%5)))
	}
	want := make([]adapter.ExpectedCall, e)
	for i := range want {
		want[i] = exp(fmt.Sprintf("tool_%d", (i+1)%7), obj("q", fmt.Sprintf("v%d", (i+1)%13), "n", float64((i+1)%5)))
	}
	return caseWith(want, made)
}

func build(t testing.TB, cfg Config) *Instance {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	insts, err := Build([]Config{cfg}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return insts[0]
}

func intp(v int) *int { return &v }

func TestMaxToolCalls(t *testing.T) {
	traj := build(t, Config{Type: "tool_trajectory"})
	if traj.MaxToolCalls != defaultMaxToolCalls {
		t.Fatalf("default cap %d", traj.MaxToolCalls)
	}
	r := traj.Evaluate(context.Background(), bigCase(1001, 3))
	check(t, r, skipped("1001 tool calls, more than max_tool_calls (1000)"))
	r = traj.Evaluate(context.Background(), bigCase(3, 1001))
	check(t, r, skipped("expects 1001 tool calls (eval.expected.tool_calls), more than max_tool_calls (1000)"))
	// At the cap it runs.
	if r = traj.Evaluate(context.Background(), bigCase(1000, 1000)); !r.Scored() {
		t.Fatalf("at the cap: %s %s", r.Status, r.Reason)
	}
	// Raised, it runs above the default.
	eff := build(t, Config{Type: "tool_efficiency", MaxToolCalls: intp(5000)})
	if r = eff.Evaluate(context.Background(), bigCase(2000, 0)); !r.Scored() {
		t.Fatalf("raised cap: %s %s", r.Status, r.Reason)
	}
	// Types that do not read calls have no cap, and reject the key.
	if lat := build(t, Config{Type: "latency", Options: obj("max", "1s")}); lat.MaxToolCalls != 0 {
		t.Fatalf("latency cap %d", lat.MaxToolCalls)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Type: "latency", MaxToolCalls: intp(10), Options: obj("max", "1s")}, "applies only to the evaluators of tool calls"},
		{Config{Type: "tool_error", MaxToolCalls: intp(0)}, "max_tool_calls 0 must be positive"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.cfg.Type, err, tc.want)
		}
	}
}

// Every evaluator of calls stops at the trace's deadline, in every mode,
// including those that compare arguments pair by pair.
func TestLargeCasesStopAtTheDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	fuzzy := obj("mode", "fuzzy")
	c := bigCase(20000, 20000)
	for _, cfg := range []Config{
		{Type: "tool_trajectory", Options: obj("mode", "in_order")},
		{Type: "tool_trajectory", Options: obj("mode", "in_order", "arguments", fuzzy)},
		{Type: "tool_trajectory", Options: obj("mode", "any_order", "arguments", fuzzy)},
		{Type: "tool_trajectory", Options: obj("mode", "f1", "arguments", obj("mode", "subset"))},
		{Type: "tool_correctness", Options: obj("mode", "names_and_order")},
		{Type: "tool_correctness", Options: obj("mode", "names_and_args", "arguments", fuzzy)},
		{Type: "tool_efficiency", Options: obj("arguments", obj("mode", "subset"))},
	} {
		cfg.MaxToolCalls = intp(50000)
		in := build(t, cfg)
		r := in.Evaluate(ctx, c)
		if r.Status != StatusTimeout || !strings.Contains(r.Reason, "timeout passed while") {
			t.Errorf("%s %v: %s %q", cfg.Type, cfg.Options, r.Status, r.Reason)
		}
	}
}

// An unordered matching that must compare arguments pair by pair stops at
// the work cap with a reason, instead of running for minutes.
func TestMatchingWorkCap(t *testing.T) {
	old := maxMatchingWork
	maxMatchingWork = 100_000
	defer func() { maxMatchingWork = old }()
	in := build(t, Config{Type: "tool_trajectory", MaxToolCalls: intp(5000),
		Options: obj("mode", "any_order", "arguments", obj("mode", "fuzzy"))})
	// Expected calls that match nothing: every augmenting path scans all calls.
	c := bigCase(3000, 0)
	for i := 0; i < 3000; i++ {
		c.Expected.ToolCalls = append(c.Expected.ToolCalls, exp("tool_0", obj("q", "none")))
	}
	r := in.Evaluate(context.Background(), c)
	check(t, r, skipped("needs more than 100000 comparisons"))
}

// Hirschberg's linear-space LCS finds an LCS as long as the table's, and a
// valid one, on random inputs (forced to recurse on small sizes).
func TestHirschbergMatchesTable(t *testing.T) {
	old := hirschbergTable
	hirschbergTable = 4
	defer func() { hirschbergTable = old }()
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 500; round++ {
		n, m := rng.Intn(40), rng.Intn(40)
		alpha := 1 + rng.Intn(5)
		a, b := make([]int, n), make([]int, m)
		for i := range a {
			a[i] = rng.Intn(alpha)
		}
		for j := range b {
			b[j] = rng.Intn(alpha)
		}
		eq := func(i, j int) bool { return a[i] == b[j] }
		adj, _ := eqMatrix(context.Background(), n, m, eq)
		want := lcsTable(n, m, adj).count()
		h := hirschberg{ctx: context.Background(), eq: eq, p: unpaired(n), fw: make([]int, m+1), bw: make([]int, m+1)}
		if err := h.run(0, n, 0, m); err != nil {
			t.Fatal(err)
		}
		if got := h.p.count(); got != want {
			t.Fatalf("round %d: LCS %d, table %d (a=%v b=%v)", round, got, want, a, b)
		}
		last := -1
		for i, j := range h.p {
			if j < 0 {
				continue
			}
			if j <= last || !eq(i, j) {
				t.Fatalf("round %d: invalid pair %d->%d", round, i, j)
			}
			last = j
		}
	}
}

// The hashed classes give the same matches as the argument matcher, and
// their linear matching is as large as Kuhn's.
func TestCallClassesAgreeWithMatcher(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	values := []any{1.0, int64(1), "a", " a", "A", true, nil, []any{1.0, "x"}, map[string]any{"k": 2.0}, map[string]any{}}
	randArgs := func() map[string]any {
		switch rng.Intn(4) {
		case 0:
			return nil
		case 1:
			return map[string]any{}
		}
		m := map[string]any{}
		for k := 0; k < 1+rng.Intn(2); k++ {
			m[string(rune('x'+rng.Intn(2)))] = values[rng.Intn(len(values))]
		}
		return m
	}
	for _, argOpts := range []map[string]any{nil, obj("trim_strings", true), obj("mode", "ignore")} {
		cc, err := newCallComparer(callCompareOptions{Arguments: argOptions(t, argOpts)})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 300; round++ {
			exp := make([]adapter.ExpectedCall, rng.Intn(12))
			for i := range exp {
				a := randArgs()
				exp[i] = adapter.ExpectedCall{Name: []string{"f", "g"}[rng.Intn(2)], Arguments: a, HasArguments: a != nil}
			}
			act := make([]adapter.ToolCall, rng.Intn(12))
			for j := range act {
				act[j] = call([]string{"f", "g"}[rng.Intn(2)], randArgs())
			}
			cl, ok := cc.classes(exp, act)
			if !ok {
				t.Fatalf("%v: not hashable", argOpts)
			}
			for i := range exp {
				for j := range act {
					if cl.eq(i, j) != cc.match(exp[i], act[j]) {
						t.Fatalf("%v: %+v vs %+v: classes %v, matcher %v", argOpts, exp[i], act[j], cl.eq(i, j), cc.match(exp[i], act[j]))
					}
				}
			}
			kp, _ := kuhn(context.Background(), len(exp), len(act), cl.eq, false)
			lp := cl.matching(len(exp), len(act))
			if kp.count() != lp.count() {
				t.Fatalf("matching %d, kuhn %d", lp.count(), kp.count())
			}
			for i, j := range lp {
				if j >= 0 && !cl.eq(i, j) {
					t.Fatalf("invalid pair")
				}
			}
		}
	}
	// Modes that are not equivalences are not hashed.
	cc, _ := newCallComparer(callCompareOptions{Arguments: argOptions(t, obj("mode", "subset"))})
	if _, ok := cc.classes([]adapter.ExpectedCall{exp("f", obj("a", 1))}, []adapter.ToolCall{call("f", obj("a", 1))}); ok {
		t.Fatal("subset mode hashed")
	}
}

func argOptions(t *testing.T, m map[string]any) *argumentOptions {
	t.Helper()
	if m == nil {
		return nil
	}
	var o struct {
		A *argumentOptions `mapstructure:"a"`
	}
	if err := decodeOptions(confmap.NewFromStringMap(map[string]any{"a": m}), &o); err != nil {
		t.Fatal(err)
	}
	return o.A
}

// tool_efficiency by hashing agrees with the pairwise comparison it replaced.
func TestEfficiencyHashedAgreesWithPairwise(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	eff := build(t, Config{Type: "tool_efficiency", Options: obj("arguments", obj("trim_strings", true))})
	for round := 0; round < 300; round++ {
		made := make([]adapter.ToolCall, 65+rng.Intn(60)) // above the size where hashing starts
		for i := range made {
			made[i] = call([]string{"f", "g"}[rng.Intn(2)], obj("q", []any{"a", " a", 1.0, int64(1), "b"}[rng.Intn(5)]))
		}
		c := &adapter.Case{ToolCalls: made}
		got := eff.Evaluate(context.Background(), c)
		hashCalls = false
		want := eff.Evaluate(context.Background(), c)
		hashCalls = true
		if got.Score != want.Score || got.Reason != want.Reason {
			t.Fatalf("hashed %v %q, pairwise %v %q", got.Score, got.Reason, want.Score, want.Reason)
		}
	}
}

// distinctCase is n calls with distinct arguments (the worst case for
// finding repeats pair by pair) and e expected calls shifted by one.
func distinctCase(n, e int) *adapter.Case {
	made := make([]adapter.ToolCall, n)
	for i := range made {
		made[i] = call(fmt.Sprintf("tool_%d", i%7), obj("q", fmt.Sprintf("v%d", i), "n", float64(i%5)))
	}
	want := make([]adapter.ExpectedCall, e)
	for i := range want {
		want[i] = exp(fmt.Sprintf("tool_%d", (i+1)%7), obj("q", fmt.Sprintf("v%d", i+1), "n", float64((i+1)%5)))
	}
	return caseWith(want, made)
}

// BenchmarkInOrderLarge: tool_trajectory in_order over n calls and n
// expected calls. "table" is the algorithm this replaced (a bool matrix of
// pairwise matches and an (n+1)² table of ints, ~1 GB at 10k), measured at
// the sizes a shared machine can afford; "linear" is the hashed classes and
// Hirschberg's two-row LCS.
func BenchmarkInOrderLarge(b *testing.B) {
	benchTrajectoryLarge(b, "in_order", []int{1000, 3000, 10000}, "table", "linear", func(n, m int, adj boolMatrix) {
		lcsTable(n, m, adj)
	})
}

// BenchmarkAnyOrderLarge: tool_trajectory any_order; "kuhn" is the
// augmenting paths over a pairwise matrix it replaced, "classes" the
// linear matching over hashed calls.
func BenchmarkAnyOrderLarge(b *testing.B) {
	benchTrajectoryLarge(b, "any_order", []int{1000, 3000, 10000, 50000}, "kuhn", "classes", func(n, m int, adj boolMatrix) {
		_, _ = kuhn(context.Background(), n, m, adj.at, false)
	})
}

// benchTrajectoryLarge measures tool_trajectory in mode over n calls and n
// expected calls for each size: as newName the evaluator, and, up to 3000,
// as oldName the algorithm it replaced, replaced(n, m, the pairwise match
// matrix).
func benchTrajectoryLarge(b *testing.B, mode string, sizes []int, oldName, newName string, replaced func(n, m int, adj boolMatrix)) {
	traj := build(b, Config{Type: "tool_trajectory", MaxToolCalls: intp(100000), Options: obj("mode", mode)})
	cc := traj.Evaluator.(*modeCalls).cc
	for _, n := range sizes {
		c := bigCase(n, n)
		if n <= 3000 {
			b.Run(fmt.Sprintf("%s/%d", oldName, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					exp, act := c.Expected.ToolCalls, c.ToolCalls
					adj, _ := eqMatrix(context.Background(), len(exp), len(act), func(i, j int) bool { return cc.match(exp[i], act[j]) })
					replaced(len(exp), len(act), adj)
				}
			})
		}
		b.Run(fmt.Sprintf("%s/%d", newName, n), func(b *testing.B) { benchScored(b, traj, c) })
	}
}

// BenchmarkEfficiencyLarge: tool_efficiency over n distinct calls;
// "pairwise" is the comparison with every earlier distinct call it
// replaced, "hashed" the canonical argument keys.
func BenchmarkEfficiencyLarge(b *testing.B) {
	eff := build(b, Config{Type: "tool_efficiency", MaxToolCalls: intp(100000)})
	for _, n := range []int{1000, 5000, 50000} {
		c := distinctCase(n, 0)
		for _, hashed := range []bool{false, true} {
			if !hashed && n > 5000 {
				continue
			}
			name := map[bool]string{false: "pairwise", true: "hashed"}[hashed]
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				hashCalls = hashed
				defer func() { hashCalls = true }()
				benchScored(b, eff, c)
			})
		}
	}
}

// benchScored measures in on c, which it must score.
func benchScored(b *testing.B, in *Instance, c *adapter.Case) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := in.Evaluate(context.Background(), c); !r.Scored() {
			b.Fatal(r.Reason)
		}
	}
}

// structural_match in lenient mode compares array elements pair by pair:
// it stops at the deadline too.
func TestStructuralMatchStopsAtTheDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	var exp, act []string
	for i := 0; i < 5000; i++ {
		exp = append(exp, fmt.Sprintf(`{"a": %d}`, i))
		act = append(act, fmt.Sprintf(`{"a": %d}`, -i))
	}
	c := &adapter.Case{Output: "[" + strings.Join(act, ",") + "]"}
	c.Expected.Output, c.Expected.HasOutput = "["+strings.Join(exp, ",")+"]", true
	in := build(t, Config{Type: "structural_match", Options: obj("mode", "lenient")})
	r := in.Evaluate(ctx, c)
	if r.Status != StatusTimeout {
		t.Fatalf("%s %q", r.Status, r.Reason)
	}
	small := &adapter.Case{Output: "[" + strings.Join(act[:50], ",") + "]"}
	small.Expected.Output, small.Expected.HasOutput = "["+strings.Join(exp[:50], ",")+"]", true
	if r = in.Evaluate(context.Background(), small); !r.Scored() {
		t.Fatalf("without a deadline: %s %q", r.Status, r.Reason)
	}
}
