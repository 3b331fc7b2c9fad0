package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	const z95 = 1.959963984540054
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{5, 10, 0.2366, 0.7634}, // the textbook value
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{0, 0, 0, 1}, // no trial: nothing is known
	} {
		lo, hi := Wilson(tc.k, tc.n, z95)
		if math.Abs(lo-tc.lo) > 5e-5 || math.Abs(hi-tc.hi) > 5e-5 {
			t.Errorf("Wilson(%d, %d) = [%.5f, %.5f], want [%.4f, %.4f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}
