package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Kappa against figures published by others, each recomputed by hand in
// the comment beside it.
func TestKappaPublishedFigures(t *testing.T) {
	for _, tc := range []struct {
		source string
		m      [][]int
		want   float64
		tol    float64
	}{
		// Altman DG (1991), Practical Statistics for Medical Research,
		// §14.3, Table 14.3: two radiologists grading 85 xeromammograms
		// (normal, benign, suspected cancer, cancer); "κ = 0.47".
		// po = 54/85, pe = (33·28 + 22·38 + 29·16 + 1·3)/85² = 2227/7225.
		{"Altman 1991 Table 14.3", [][]int{{21, 12, 0, 0}, {4, 17, 1, 0}, {3, 9, 15, 2}, {0, 0, 0, 1}}, 0.47, 0.005},
		// scikit-learn, sklearn/metrics/tests/test_classification.py
		// test_cohen_kappa: "the contingency matrix from Artstein and
		// Poesio (2008), Table 1", asserted 0.348 to 3 decimals.
		// po = 0.7, pe = (40·30 + 60·70)/100² = 0.54, κ = 0.16/0.46.
		{"sklearn test_cohen_kappa, Artstein & Poesio 2008 Table 1", [][]int{{20, 20}, {10, 50}}, 0.348, 0.0005},
		// The same test's multiclass vectors (y1 = 46×0, 44×1, 10×2;
		// y2 = 52×0, 32×1, 16×2, paired by position), asserted 0.8013.
		// po = 0.88, pe = (46·52 + 44·32 + 10·16)/100² = 0.396.
		{"sklearn test_cohen_kappa multiclass", [][]int{{46, 0, 0}, {6, 32, 6}, {0, 0, 10}}, 0.8013, 0.00005},
		// ... and y2 = 50×0, 40×1, 10×2, asserted 0.9315 (unweighted).
		{"sklearn test_cohen_kappa multiclass 2", [][]int{{46, 0, 0}, {4, 40, 0}, {0, 0, 10}}, 0.9315, 0.00005},
		// scikit-learn's cohen_kappa_score docstring example:
		// y1 = [neg, pos, neg, neu, pos], y2 = [neg, pos, neg, neu, neg]
		// gives 0.6875 (po = 0.8, pe = 9/25).
		{"sklearn cohen_kappa_score docstring", [][]int{{2, 0, 0}, {0, 1, 0}, {1, 0, 1}}, 0.6875, 1e-12},
		// Cohen's kappa on Wikipedia, "Simple example": 50 grant
		// proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15:
		// po = 0.7, pe = 0.5, κ = 0.4.
		{"Wikipedia, Cohen's kappa, simple example", [][]int{{20, 5}, {10, 15}}, 0.4, 1e-12},
	} {
		got, err := Kappa(tc.m)
		if err != nil || math.Abs(got-tc.want) > tc.tol {
			t.Errorf("%s: kappa %.5f (%v), want %v ± %v", tc.source, got, err, tc.want, tc.tol)
		}
		// Kappa is symmetric in the raters.
		tr := make([][]int, len(tc.m))
		for i := range tc.m {
			for j := range tc.m {
				tr[i] = append(tr[i], tc.m[j][i])
			}
		}
		if back, _ := Kappa(tr); math.Abs(back-got) > 1e-12 {
			t.Errorf("%s: transposed kappa %v != %v", tc.source, back, got)
		}
	}
	// The 2×2 shortcut agrees with the general formula.
	b := Binary{{20, 5}, {10, 15}}
	if k, _ := b.Kappa(); math.Abs(k-b.rawKappa()) > 1e-12 {
		t.Errorf("rawKappa %v, Kappa %v", b.rawKappa(), k)
	}
	// Perfect agreement and agreement below chance.
	if k, _ := Kappa([][]int{{7, 0}, {0, 3}}); k != 1 {
		t.Errorf("perfect agreement: %v", k)
	}
	if k, _ := Kappa([][]int{{0, 5}, {5, 0}}); k != -1 {
		t.Errorf("perfect disagreement: %v", k)
	}
}

// No number where kappa says nothing.
func TestKappaUndefined(t *testing.T) {
	if _, err := Kappa([][]int{{0, 0}, {0, 0}}); !errors.Is(err, ErrNoItems) {
		t.Errorf("no items: %v", err)
	}
	// All one label on both sides: 0/0.
	_, err := Kappa([][]int{{9, 0}, {0, 0}})
	if !errors.Is(err, ErrConstantA) || !errors.Is(err, ErrConstantB) {
		t.Errorf("all one label: %v", err)
	}
	// One side constant: the formula gives 0, which would read as "no
	// better than chance" about a rater who never said fail.
	_, err = Kappa([][]int{{6, 4}, {0, 0}})
	if !errors.Is(err, ErrConstantA) || errors.Is(err, ErrConstantB) {
		t.Errorf("rater A constant: %v", err)
	}
	_, err = Kappa([][]int{{6, 0}, {4, 0}})
	if errors.Is(err, ErrConstantA) || !errors.Is(err, ErrConstantB) {
		t.Errorf("rater B constant: %v", err)
	}
	if _, _, err := KappaCI([][2]bool{{true, true}, {true, false}}, 0.95, 100, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrConstantA) {
		t.Errorf("interval of an undefined kappa: %v", err)
	}
	if _, _, err := KappaCI(nil, 0.95, 100, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrNoItems) {
		t.Errorf("interval of no pairs: %v", err)
	}
}

func pairsOf(b Binary) [][2]bool {
	var out [][2]bool
	for i := range 2 {
		for j := range 2 {
			for range b[i][j] {
				out = append(out, [2]bool{i == 0, j == 0})
			}
		}
	}
	return out
}

// fceSE is the large-sample standard error of kappa of Fleiss, Cohen and
// Everitt (1969), "Large sample standard errors of kappa and weighted
// kappa", Psychological Bulletin 72(5):323–327, eq. 13 — an independent
// figure the bootstrap must approach when n is large.
func fceSE(b Binary) float64 {
	n := float64(b.N())
	var p [2][2]float64
	var row, col [2]float64
	for i := range 2 {
		for j := range 2 {
			p[i][j] = float64(b[i][j]) / n
			row[i] += p[i][j]
			col[j] += p[i][j]
		}
	}
	pe := row[0]*col[0] + row[1]*col[1]
	k, _ := b.Kappa()
	var a, bb float64
	for i := range 2 {
		a += p[i][i] * math.Pow(1-(row[i]+col[i])*(1-k), 2)
		for j := range 2 {
			if i != j {
				bb += p[i][j] * math.Pow(col[i]+row[j], 2)
			}
		}
	}
	bb *= (1 - k) * (1 - k)
	c := math.Pow(k-pe*(1-k), 2)
	return math.Sqrt((a + bb - c) / (n * (1 - pe) * (1 - pe)))
}

// The bootstrap interval, at n = 1000, is the normal interval of the
// Fleiss–Cohen–Everitt standard error within Monte Carlo error; it is
// seeded (the same every run) and holds kappa.
func TestKappaCIAgainstLargeSampleSE(t *testing.T) {
	b := Binary{{400, 100}, {200, 300}} // Wikipedia's example ×20: κ = 0.4
	k, _ := b.Kappa()
	se := fceSE(b)
	lo, hi, err := KappaCI(pairsOf(b), 0.95, 4000, rand.New(rand.NewPCG(7, 11)))
	if err != nil {
		t.Fatal(err)
	}
	const z95 = 1.959963984540054
	if math.Abs(lo-(k-z95*se)) > 0.01 || math.Abs(hi-(k+z95*se)) > 0.01 {
		t.Errorf("bootstrap [%.4f, %.4f], large-sample [%.4f, %.4f] (se %.4f)", lo, hi, k-z95*se, k+z95*se, se)
	}
	t.Logf("bootstrap [%.4f, %.4f], large-sample [%.4f, %.4f]", lo, hi, k-z95*se, k+z95*se)
	lo2, hi2, _ := KappaCI(pairsOf(b), 0.95, 4000, rand.New(rand.NewPCG(7, 11)))
	if lo2 != lo || hi2 != hi {
		t.Errorf("same seed, different interval: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
}

// Few labels of one kind: 30 pairs, 3 human failures, all caught. Kappa is
// 1, but 4 % of resamples hold no failure at all; they count as 0, so the
// interval's lower bound shows how little three failures prove.
func TestKappaCIFewFailures(t *testing.T) {
	b := Binary{{27, 0}, {0, 3}}
	lo, hi, err := KappaCI(pairsOf(b), 0.95, 2000, rand.New(rand.NewPCG(7, 11)))
	if err != nil || lo != 0 || hi != 1 {
		t.Errorf("interval [%v, %v] (%v), want [0, 1]", lo, hi, err)
	}
	// Twice the evidence (60 pairs, 6 failures): 0.2 % of resamples hold
	// no failure, under the 2.5 % tail.
	lo, _, _ = KappaCI(pairsOf(Binary{{54, 0}, {0, 6}}), 0.95, 2000, rand.New(rand.NewPCG(7, 11)))
	if lo != 1 {
		t.Errorf("60 pairs in perfect agreement: lower bound %v", lo)
	}
}

// The sweep on a worked example (kappa by hand, 2(ad−bc)/((a+b)(b+d)+(a+c)(c+d))
// with a = machine pass & human pass, b = pass & fail, c = fail & pass, d = fail & fail):
//
//	score  0.1  0.3  0.4  0.6  0.7  0.9
//	human  fail fail pass fail pass pass
//
//	t=0.1 everything passes: undefined
//	t=0.3 a=3 b=2 c=0 d=1: 6/18  = 1/3
//	t=0.4 a=3 b=1 c=0 d=2: 12/18 = 2/3
//	t=0.6 a=2 b=1 c=1 d=2: 6/18  = 1/3
//	t=0.7 a=2 b=0 c=1 d=3: 12/18 = 2/3
//	t=0.9 a=1 b=0 c=2 d=3: 6/18  = 1/3
func TestSweepAndBestThreshold(t *testing.T) {
	scores := []float64{0.7, 0.1, 0.9, 0.4, 0.6, 0.3} // any order
	truth := []bool{true, false, true, true, false, false}
	want := []struct{ t, k float64 }{{0.1, math.NaN()}, {0.3, 1. / 3}, {0.4, 2. / 3}, {0.6, 1. / 3}, {0.7, 2. / 3}, {0.9, 1. / 3}}
	sw := Sweep(scores, truth)
	if len(sw) != len(want) {
		t.Fatalf("sweep %+v", sw)
	}
	for i, w := range want {
		got := sw[i]
		if got.Threshold != w.t || (math.IsNaN(w.k) != (got.Err != nil)) || (got.Err == nil && math.Abs(got.Kappa-w.k) > 1e-12) {
			t.Errorf("sweep[%d] = %+v, want threshold %v kappa %v", i, got, w.t, w.k)
		}
		if got.Err == nil {
			if k, _ := KappaAt(scores, truth, got.Threshold); math.Abs(k-got.Kappa) > 1e-12 {
				t.Errorf("KappaAt(%v) = %v, sweep says %v", got.Threshold, k, got.Kappa)
			}
		}
	}
	if !errors.Is(sw[0].Err, ErrConstantA) {
		t.Errorf("everything passing: %v", sw[0].Err)
	}
	// 0.4 and 0.7 tie at 2/3: the one nearer today's threshold wins.
	if best, ok := BestThreshold(sw, 0.5); !ok || best.Threshold != 0.4 {
		t.Errorf("best from 0.5: %+v", best)
	}
	if best, ok := BestThreshold(sw, 0.8); !ok || best.Threshold != 0.7 {
		t.Errorf("best from 0.8: %+v", best)
	}
	// Equal scores move together: one threshold per distinct score.
	if sw := Sweep([]float64{0.5, 0.5, 1}, []bool{false, true, true}); len(sw) != 2 || sw[1].Threshold != 1 || math.Abs(sw[1].Kappa-0.4) > 1e-12 {
		t.Errorf("ties: %+v", sw)
	}
	// Human labels all pass: no threshold has a kappa.
	if _, ok := BestThreshold(Sweep([]float64{0.2, 0.8}, []bool{true, true}), 0.5); ok {
		t.Error("a best threshold against constant human labels")
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 1: 5, 0.25: 2, 0.1: 1.4} {
		if got := Quantile(s, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
