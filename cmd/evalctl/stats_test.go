package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Published 95 % Wilson intervals, to four decimals: Newcombe, "Two-sided
// confidence intervals for the single proportion: comparison of seven
// methods", Stat. Med. 17 (1998), Table I, method 3 (81/263, 15/148, 0/20,
// 1/29); and the edges 0/n, n/n and small n of a 10-case suite.
func TestWilsonPublishedValues(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{5, 10, 0.2366, 0.7634},
		{1, 10, 0.0179, 0.4042},
		{95, 100, 0.8882, 0.9785},
		{0, 1, 0, 0.7935},
		{1, 1, 0.2065, 1},
	} {
		t.Run(fmt.Sprintf("%d of %d", tc.k, tc.n), func(t *testing.T) {
			lo, hi, ok := wilson(tc.k, tc.n)
			if !ok || math.Abs(lo-tc.lo) > 1e-4 || math.Abs(hi-tc.hi) > 1e-4 {
				t.Errorf("wilson(%d, %d) = [%.5f, %.5f], want [%.4f, %.4f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

func TestWilsonEdges(t *testing.T) {
	// Exactly 0 and 1 at the edges, never outside [0, 1], and no interval
	// without trials.
	for n := 1; n <= 1000; n *= 10 {
		if lo, _, _ := wilson(0, n); lo != 0 {
			t.Errorf("0/%d: low %v, want exactly 0", n, lo)
		}
		if _, hi, _ := wilson(n, n); hi != 1 {
			t.Errorf("%d/%d: high %v, want exactly 1", n, n, hi)
		}
		for k := 0; k <= n; k++ {
			lo, hi, _ := wilson(k, n)
			p := float64(k) / float64(n)
			if lo < 0 || hi > 1 || lo > p || hi < p {
				t.Fatalf("%d/%d: [%v, %v] does not hold %v within [0, 1]", k, n, lo, hi, p)
			}
		}
	}
	for _, kn := range [][2]int{{0, 0}, {1, 0}, {-1, 3}, {4, 3}} {
		if _, _, ok := wilson(kn[0], kn[1]); ok {
			t.Errorf("wilson(%d, %d) gave an interval", kn[0], kn[1])
		}
	}
	// Symmetric: k of n mirrors n-k of n.
	lo, hi, _ := wilson(3, 17)
	lo2, hi2, _ := wilson(14, 17)
	if math.Abs(lo-(1-hi2)) > 1e-12 || math.Abs(hi-(1-lo2)) > 1e-12 {
		t.Errorf("3/17 [%v %v] is not the mirror of 14/17 [%v %v]", lo, hi, lo2, hi2)
	}
}

func TestBootstrapMeanCI(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(i%5) / 4 // 0, .25, .5, .75, 1: mean .5, sd ≈ .354
	}
	lo, hi, ok := bootstrapMeanCI("booking_flow", xs)
	if !ok {
		t.Fatal("no interval")
	}
	// The normal-theory interval is .5 ± 1.96·.354/√200 = [.451, .549];
	// the percentile bootstrap agrees within its own resampling noise.
	if math.Abs(lo-0.451) > 0.012 || math.Abs(hi-0.549) > 0.012 {
		t.Errorf("[%v, %v], want ≈ [0.451, 0.549]", lo, hi)
	}
	// Seeded: the same input gives the same interval, run after run.
	lo2, hi2, _ := bootstrapMeanCI("booking_flow", xs)
	if lo2 != lo || hi2 != hi {
		t.Errorf("not reproducible: [%v %v] then [%v %v]", lo, hi, lo2, hi2)
	}
	// Constant scores: a point; one score: a point; none: no interval.
	if lo, hi, _ := bootstrapMeanCI("x", []float64{1, 1, 1}); lo != 1 || hi != 1 {
		t.Errorf("constant: [%v %v]", lo, hi)
	}
	if lo, hi, _ := bootstrapMeanCI("x", []float64{0.3}); lo != 0.3 || hi != 0.3 {
		t.Errorf("single: [%v %v]", lo, hi)
	}
	if _, _, ok := bootstrapMeanCI("x", nil); ok {
		t.Error("an interval of nothing")
	}
}

// The bootstrap's cost against scoring: the examples scored with the plain
// summary, and with the gates, JUnit and the report on top.
func BenchmarkRunExamples(b *testing.B) {
	dir := b.TempDir()
	base := append([]string{"run", "--config", "../../examples/evalctl.yaml", "--summary", "json"}, exampleTraces...)
	for _, bc := range []struct {
		name  string
		extra []string
	}{
		{"summary", nil},
		{"gates+junit+report", []string{"--min-pass-rate", "booking_flow=0.9", "--junit", dir + "/j.xml", "--report", dir + "/r.html"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := append(append([]string{}, base...), bc.extra...)
			for b.Loop() {
				var out, errb strings.Builder
				run(context.Background(), args, strings.NewReader(""), &out, &errb)
			}
		})
	}
}

func BenchmarkBootstrap1000(b *testing.B) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i%7) / 6
	}
	for b.Loop() {
		bootstrapMeanCI("x", xs)
	}
}

// The floor the bootstrap is measured against: the same number of
// additions over the scores in order, without drawing an index.
func BenchmarkBootstrap1000Floor(b *testing.B) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i%7) / 6
	}
	for b.Loop() {
		means := make([]float64, bootstrapResamples)
		for r := range means {
			sum := 0.0
			for _, x := range xs {
				sum += x
			}
			means[r] = sum
		}
	}
}
