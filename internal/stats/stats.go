// Package stats holds the interval estimates that evalctl's gates and the
// webhook exporter's monitors both compute.
package stats

import "math"

// Wilson is the Wilson score interval of a proportion: k successes in n
// trials, at the normal quantile z (1.96 for 95 %), within [0, 1]. Unlike
// p ± z·√(p(1−p)/n) it does not collapse to a point at 0 or n successes.
// With no trial (n <= 0) it is the whole range [0, 1].
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}
