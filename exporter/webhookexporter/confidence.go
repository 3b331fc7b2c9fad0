package webhookexporter

import "math"

// Intervals for monitors with `confidence` (docs/contract.md §13,
// docs/monitors.md): the figure of a window is an estimate from a sample
// of cases; the interval says how far the true figure may be from it.

// zScore is the two-sided normal quantile of a confidence level: 1.96 for
// 0.95 (the Φ⁻¹((1+c)/2) = √2·erf⁻¹(c)).
func zScore(confidence float64) float64 {
	return math.Sqrt2 * math.Erfinv(confidence)
}

// wilson is the Wilson score interval of a proportion: passed of n cases,
// at the normal quantile z. Unlike p ± z·√(p(1−p)/n) it stays within [0, 1]
// and does not collapse to a point at 0 or n passes.
func wilson(passed, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(passed) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// meanInterval is the normal interval of a mean: mean ± z·s/√n with s the
// sample standard deviation (n−1). Fewer than two scores give no interval
// (ok is false): one score says nothing of the spread.
func meanInterval(sum, sumSq float64, n int, z float64) (lo, hi float64, ok bool) {
	if n < 2 {
		return 0, 0, false
	}
	nf := float64(n)
	mean := sum / nf
	variance := max(0, (sumSq-nf*mean*mean)/(nf-1))
	half := z * math.Sqrt(variance/nf)
	return mean - half, mean + half, true
}
