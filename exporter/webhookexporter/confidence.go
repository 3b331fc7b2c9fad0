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
