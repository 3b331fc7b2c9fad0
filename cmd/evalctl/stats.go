package main

import (
	"hash/fnv"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/evalbridge/evalbridge/internal/stats"
)

// z95 is the two-sided 95 % normal quantile, Φ⁻¹(0.975).
const z95 = 1.959963984540054

// wilson is the 95 % Wilson score interval for k successes in n trials.
// Unlike the normal approximation it stays inside [0, 1] and is not
// zero-width at 0/n and n/n, which is what keeps a 10-case suite with 10
// passes from looking like proof of a 100 % pass rate. ok is false for n = 0.
func wilson(k, n int) (lo, hi float64, ok bool) {
	if n <= 0 || k < 0 || k > n {
		return 0, 0, false
	}
	lo, hi = stats.Wilson(k, n, z95)
	// At the edges the exact bounds are 0 and 1; rounding must not leave
	// 1e-17 or 0.9999999999999999 for a reader to puzzle over.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi, true
}

// bootstrapResamples is enough for stable 2.5/97.5 % percentiles (the
// bounds move by well under 0.01 between seeds at n ≥ 20).
const bootstrapResamples = 2000

// bootstrapMeanCI is the 95 % percentile-bootstrap interval of the mean of
// xs. The generator is seeded from the evaluator's name, so the same input
// gives the same interval on every run and machine (a gate must not flip
// on a re-run), while two evaluators do not share one resampling sequence.
func bootstrapMeanCI(name string, xs []float64) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return 0, 0, false
	}
	if n == 1 {
		return xs[0], xs[0], true
	}
	rng := seededRand(name)
	means := make([]float64, bootstrapResamples)
	un := uint64(n)
	for b := range means {
		sum := 0.0
		for range n {
			// Lemire's multiply-shift: an index in [0, n) from 64 random
			// bits (bias under n/2^64), without IntN's rejection loop.
			i, _ := bits.Mul64(rng.Uint64(), un)
			sum += xs[i]
		}
		means[b] = sum / float64(n)
	}
	slices.Sort(means)
	return stats.Quantile(means, 0.025), stats.Quantile(means, 0.975), true
}

// seededRand is the generator of an evaluator's bootstrap: seeded from its
// name, so the same input gives the same interval on every run and
// machine (a gate must not flip on a re-run), while two evaluators do not
// share one resampling sequence.
func seededRand(name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return rand.New(rand.NewPCG(0x6576616c62726467, h.Sum64())) // "evalbrdg"
}
