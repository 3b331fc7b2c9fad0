package stats

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
)

// Why Cohen's kappa can be undefined. Kappa compares the agreement of two
// raters with what their own label frequencies give by chance; with no
// item, or with a rater who used one label only, that comparison says
// nothing (the formula is 0/0, or 0 by construction), so no number is given.
var (
	ErrNoItems = errors.New("no item rated by both")
	// ErrConstantA and ErrConstantB: rater A (B) gave every item the same
	// label. Both may hold at once (errors.Is finds each).
	ErrConstantA = errors.New("the first rater gave one label only")
	ErrConstantB = errors.New("the second rater gave one label only")
)

// Kappa is Cohen's (1960) kappa of a k×k confusion matrix: m[i][j] items
// that rater A put in category i and rater B in category j.
// kappa = (po − pe) / (1 − pe), po the share of items on the diagonal, pe
// the agreement expected from the raters' marginal frequencies. The error
// is ErrNoItems, or ErrConstantA and/or ErrConstantB when a rater used one
// category only.
func Kappa(m [][]int) (float64, error) {
	k := len(m)
	rows, cols := make([]int, k), make([]int, k)
	n, diag := 0, 0
	for i := range m {
		for j, c := range m[i] {
			rows[i] += c
			cols[j] += c
			n += c
		}
		diag += m[i][i]
	}
	if n == 0 {
		return 0, ErrNoItems
	}
	if err := constant(rows, cols); err != nil {
		return 0, err
	}
	// In counts rather than shares: n²·po and n²·pe are exact integers.
	var chance int
	for i := range k {
		chance += rows[i] * cols[i]
	}
	nn := n * n
	return float64(n*diag-chance) / float64(nn-chance), nil
}

func constant(rows, cols []int) error {
	used := func(xs []int) int {
		u := 0
		for _, x := range xs {
			if x > 0 {
				u++
			}
		}
		return u
	}
	var errs []error
	if used(rows) < 2 {
		errs = append(errs, ErrConstantA)
	}
	if used(cols) < 2 {
		errs = append(errs, ErrConstantB)
	}
	return errors.Join(errs...)
}

// Binary is a 2×2 confusion matrix of two raters' pass/fail labels:
// the first index is rater A's label, the second rater B's (0 pass, 1 fail).
type Binary [2][2]int

// Add counts one item.
func (b *Binary) Add(aPass, bPass bool) { b[idx(aPass)][idx(bPass)]++ }

func idx(pass bool) int {
	if pass {
		return 0
	}
	return 1
}

// N is the number of items.
func (b Binary) N() int { return b[0][0] + b[0][1] + b[1][0] + b[1][1] }

// Kappa is Kappa of the matrix.
func (b Binary) Kappa() (float64, error) {
	return Kappa([][]int{b[0][:], b[1][:]})
}

// rawKappa is kappa without the checks, for the bootstrap's inner loop:
// 2(ad − bc) / ((a+b)(b+d) + (a+c)(c+d)), Cohen's formula for 2×2 tables
// rearranged, and 0 where that is 0/0 (both raters constant).
func (b Binary) rawKappa() float64 {
	a, bb, c, d := b[0][0], b[0][1], b[1][0], b[1][1]
	den := (a+bb)*(bb+d) + (a+c)*(c+d)
	if den == 0 {
		return 0
	}
	return float64(2*(a*d-bb*c)) / float64(den)
}

// KappaCI is the percentile-bootstrap interval of the kappa of pairs
// (each item's labels by rater A and rater B, true for pass) at the given
// level (0.95): resamples of the pairs with replacement, drawn from rng,
// so that a seeded rng gives the same interval every time.
//
// A resample in which a rater used one label only has no defined kappa; it
// counts as 0 (no agreement beyond chance: what the formula gives when
// one side alone is constant) rather than being left out. Leaving it out
// would let a handful of labels of one kind look certain: 30 pairs with 3
// human failures, all caught, resample to a perfect kappa whenever they
// hold a failure, and to none of the interval's information when they
// hold none (4 % of resamples). The interval is undefined when the kappa
// of the pairs themselves is.
func KappaCI(pairs [][2]bool, level float64, resamples int, rng *rand.Rand) (lo, hi float64, err error) {
	var all Binary
	for _, p := range pairs {
		all.Add(p[0], p[1])
	}
	if _, err := all.Kappa(); err != nil {
		return 0, 0, err
	}
	n := uint64(len(pairs))
	ks := make([]float64, resamples)
	for r := range ks {
		var m Binary
		for range n {
			// Lemire's multiply-shift: an index in [0, n) from 64 random bits.
			i, _ := bits.Mul64(rng.Uint64(), n)
			m.Add(pairs[i][0], pairs[i][1])
		}
		ks[r] = m.rawKappa()
	}
	slices.Sort(ks)
	tail := (1 - level) / 2
	return Quantile(ks, tail), Quantile(ks, 1-tail), nil
}

// Quantile of sorted xs (not empty) with linear interpolation between
// order statistics (the R-7 / NumPy default definition).
func Quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// ThresholdKappa is the kappa of a scorer's pass/fail (score >= Threshold)
// against reference labels.
type ThresholdKappa struct {
	Threshold float64
	Kappa     float64
	Err       error // why Kappa is undefined at this threshold
}

// KappaAt is the kappa of "score >= threshold" as rater A against truth
// (true for pass) as rater B.
func KappaAt(scores []float64, truth []bool, threshold float64) (float64, error) {
	var m Binary
	for i, s := range scores {
		m.Add(s >= threshold, truth[i])
	}
	return m.Kappa()
}

// Sweep is the kappa of "score >= t" against truth at every threshold t
// that gives a different split of the items: each distinct score (the
// lowest score that passes), in increasing order. A threshold above every
// score fails everything and has no kappa; it is not listed.
func Sweep(scores []float64, truth []bool) []ThresholdKappa {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	// Start with everything passing (t = the lowest score), then move the
	// items of each score value from pass to fail as t rises past it.
	var m Binary
	for i := range scores {
		m.Add(true, truth[i])
	}
	var out []ThresholdKappa
	for at := 0; at < len(order); {
		t := scores[order[at]]
		k, err := m.Kappa()
		out = append(out, ThresholdKappa{Threshold: t, Kappa: k, Err: err})
		for ; at < len(order) && scores[order[at]] == t; at++ {
			h := idx(truth[order[at]])
			m[0][h]--
			m[1][h]++
		}
	}
	return out
}

// BestThreshold is the threshold of the sweep with the highest kappa; of
// thresholds with equal kappa, the one nearest current (today's threshold:
// the smallest change that gets there), then the lower. ok is false when
// no threshold has a kappa.
func BestThreshold(sweep []ThresholdKappa, current float64) (best ThresholdKappa, ok bool) {
	const tie = 1e-12
	for _, tk := range sweep {
		if tk.Err != nil {
			continue
		}
		switch {
		case !ok, tk.Kappa > best.Kappa+tie:
			best, ok = tk, true
		case tk.Kappa >= best.Kappa-tie && math.Abs(tk.Threshold-current) < math.Abs(best.Threshold-current):
			best = tk
		}
	}
	return best, ok
}
