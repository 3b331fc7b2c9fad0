// Alignment of actual tool calls with expected ones: longest common
// subsequence (Hirschberg in linear space for long sequences), maximum
// bipartite matching for the unordered modes, positional pairing, all
// bounded by the evaluation's context. The argument matcher that decides
// whether two calls are equal is in argmatch.go.

package evaluators

import (
	"context"
	"errors"
	"fmt"
)

// pairs maps expected index -> actual index (-1 when unmatched).
type pairs []int

func (p pairs) count() int {
	n := 0
	for _, j := range p {
		if j >= 0 {
			n++
		}
	}
	return n
}

func unpaired(n int) pairs {
	p := make(pairs, n)
	for i := range p {
		p[i] = -1
	}
	return p
}

// hashCalls lets tests and benchmarks turn the hashed comparison of calls
// off, to compare it with the pairwise one it replaces.
var hashCalls = true

// eqFunc says whether expected i and actual j match.
type eqFunc func(i, j int) bool

// smallCells bounds the (n+1)·(m+1) table of the quadratic algorithms kept
// for small inputs (2 MB of ints): below it they run as they always did, so
// the pairs they choose, and the reasons that name them, do not change.
// Above it the linear-memory ones run.
const smallCells = 1 << 18

// tinyCells bounds the LCS tables kept on the stack.
const tinyCells = 256

// hirschbergTable is the sub-problem size Hirschberg solves with the table
// (a variable so tests can make it recurse on small inputs).
var hirschbergTable = smallCells / 4

// errMatchingWork is returned when an unordered matching would need more
// than maxMatchingWork comparisons (only when calls cannot be hashed).
var errMatchingWork = errors.New("matching work cap reached")

// maxMatchingWork caps the comparisons of one unordered matching that
// cannot use hashed classes (non-exact argument modes on large inputs).
var maxMatchingWork = 10_000_000

// checkEvery is how many cells or comparisons pass between context checks.
const checkEvery = 1 << 14

// boolMatrix is an n×m table of booleans in one slice.
type boolMatrix struct {
	cells []bool
	m     int
}

func (b boolMatrix) at(i, j int) bool { return b.cells[i*b.m+j] }

// eqMatrix evaluates eq once for every (expected, actual) pair.
func eqMatrix(ctx context.Context, n, m int, eq eqFunc) (boolMatrix, error) {
	return eqMatrixIn(ctx, n, m, eq, make([]bool, n*m))
}

// eqMatrixIn is eqMatrix in the n*m cells given.
func eqMatrixIn(ctx context.Context, n, m int, eq eqFunc, cells []bool) (boolMatrix, error) {
	for i := 0; i < n; i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return boolMatrix{}, ctx.Err()
		}
		row := cells[i*m : (i+1)*m]
		for j := range row {
			row[j] = eq(i, j)
		}
	}
	return boolMatrix{cells: cells, m: m}, nil
}

// lcs returns a longest common subsequence of expected (n) and actual (m)
// under eq, as expected -> actual pairs. Small inputs use the full table;
// larger ones Hirschberg's linear-space algorithm (two rows of m+1 ints at
// a time), so 10k × 10k calls need a few hundred KB instead of ~1 GB.
func lcs(ctx context.Context, n, m int, eq eqFunc) (pairs, error) {
	if (n+1)*(m+1) <= tinyCells {
		// the usual few calls: the tables on the stack
		var cells [tinyCells]bool
		var dp [tinyCells]int
		adj, err := eqMatrixIn(ctx, n, m, eq, cells[:n*m])
		if err != nil {
			return nil, err
		}
		return lcsTableIn(n, m, adj, dp[:(n+1)*(m+1)]), nil
	}
	if (n+1)*(m+1) <= smallCells {
		adj, err := eqMatrix(ctx, n, m, eq)
		if err != nil {
			return nil, err
		}
		return lcsTable(n, m, adj), nil
	}
	h := hirschberg{ctx: ctx, eq: eq, p: unpaired(n), fw: make([]int, m+1), bw: make([]int, m+1)}
	if err := h.run(0, n, 0, m); err != nil {
		return nil, err
	}
	return h.p, nil
}

// lcsTable is the textbook dynamic programme with traceback.
func lcsTable(n, m int, adj boolMatrix) pairs {
	return lcsTableIn(n, m, adj, make([]int, (n+1)*(m+1)))
}

// lcsTableIn is lcsTable with the table in dp ((n+1)*(m+1) zeroes).
func lcsTableIn(n, m int, adj boolMatrix, dp []int) pairs {
	at := func(i, j int) int { return dp[i*(m+1)+j] }
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			v := at(i-1, j)
			if w := at(i, j-1); w > v {
				v = w
			}
			if adj.at(i-1, j-1) {
				if w := at(i-1, j-1) + 1; w > v {
					v = w
				}
			}
			dp[i*(m+1)+j] = v
		}
	}
	p := unpaired(n)
	for i, j := n, m; i > 0 && j > 0; {
		switch {
		case adj.at(i-1, j-1) && at(i, j) == at(i-1, j-1)+1:
			p[i-1] = j - 1
			i, j = i-1, j-1
		case at(i-1, j) >= at(i, j-1):
			i--
		default:
			j--
		}
	}
	return p
}

// hirschberg finds an LCS in O(n·m) time and O(m) memory: the LCS lengths
// of the top half forward and of the bottom half backward (one row each)
// say where an optimal path crosses the middle row; the halves recurse.
type hirschberg struct {
	ctx    context.Context
	eq     eqFunc
	p      pairs
	fw, bw []int
	cells  int
}

func (h *hirschberg) run(a0, a1, b0, b1 int) error {
	if a1 <= a0 || b1 <= b0 {
		return nil
	}
	if a1-a0 == 1 {
		// One expected call: the first actual call it matches.
		for j := b0; j < b1; j++ {
			if h.eq(a0, j) {
				h.p[a0] = j
				return nil
			}
		}
		return h.tick(b1 - b0)
	}
	if (a1-a0+1)*(b1-b0+1) <= hirschbergTable {
		// Small enough for the table: solve it directly.
		n, m := a1-a0, b1-b0
		adj, err := eqMatrix(h.ctx, n, m, func(i, j int) bool { return h.eq(a0+i, b0+j) })
		if err != nil {
			return err
		}
		for i, j := range lcsTable(n, m, adj) {
			if j >= 0 {
				h.p[a0+i] = b0 + j
			}
		}
		return nil
	}
	mid := (a0 + a1) / 2
	w := b1 - b0
	fw, bw := h.fw[:w+1], h.bw[:w+1]
	if err := h.forward(a0, mid, b0, b1, fw); err != nil {
		return err
	}
	if err := h.backward(mid, a1, b0, b1, bw); err != nil {
		return err
	}
	// fw[k]: LCS of a[a0:mid] and b[b0:b0+k]; bw[k]: of a[mid:a1] and b[b1-k:b1].
	best, split := -1, 0
	for k := 0; k <= w; k++ {
		if v := fw[k] + bw[w-k]; v > best {
			best, split = v, k
		}
	}
	if err := h.run(a0, mid, b0, b0+split); err != nil {
		return err
	}
	return h.run(mid, a1, b0+split, b1)
}

// forward fills row[k] with the LCS length of a[a0:a1] and b[b0:b0+k].
func (h *hirschberg) forward(a0, a1, b0, b1 int, row []int) error {
	return h.sweep(a0, a1, b0, b1, row, false)
}

// backward fills row[k] with the LCS length of a[a0:a1] and b[b1-k:b1].
func (h *hirschberg) backward(a0, a1, b0, b1 int, row []int) error {
	return h.sweep(a0, a1, b0, b1, row, true)
}

// sweep keeps one row of the LCS table, walking the rows of a and the
// columns of b from the start (forward) or from the end (backward).
func (h *hirschberg) sweep(a0, a1, b0, b1 int, row []int, backward bool) error {
	clear(row)
	w := b1 - b0
	for step := 0; step < a1-a0; step++ {
		i := a0 + step
		if backward {
			i = a1 - 1 - step
		}
		diag := 0 // row[k-1] of the previous row
		for k := 1; k <= w; k++ {
			j := b0 + k - 1
			if backward {
				j = b1 - k
			}
			up := row[k]
			v := up
			if row[k-1] > v {
				v = row[k-1]
			}
			if diag+1 > v && h.eq(i, j) {
				v = diag + 1
			}
			diag = up
			row[k] = v
		}
		if err := h.tick(w); err != nil {
			return err
		}
	}
	return nil
}

func (h *hirschberg) tick(n int) error {
	h.cells += n
	if h.cells >= checkEvery {
		h.cells = 0
		return h.ctx.Err()
	}
	return nil
}

// maxMatching is a maximum bipartite matching between expected (n) and
// actual (m) calls under eq, so repeated tool names are paired optimally
// rather than greedily. With classes (hashable calls) it is linear; small
// inputs use Kuhn's augmenting paths on the full table as before; larger
// ones Kuhn on the fly after a greedy start, within maxMatchingWork
// comparisons.
func maxMatching(ctx context.Context, n, m int, eq eqFunc, cl *callClasses) (pairs, error) {
	if n*m <= smallCells {
		adj, err := eqMatrix(ctx, n, m, eq)
		if err != nil {
			return nil, err
		}
		return kuhn(ctx, n, m, adj.at, false)
	}
	if cl != nil {
		return cl.matching(n, m), nil
	}
	return kuhn(ctx, n, m, eq, true)
}

func kuhn(ctx context.Context, n, m int, eq eqFunc, greedy bool) (pairs, error) {
	matchActual := make([]int, m)
	for j := range matchActual {
		matchActual[j] = -1
	}
	p := unpaired(n)
	work := 0
	var stop error
	probe := func(i, j int) bool {
		work++
		if work%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				stop = err
			} else if greedy && work > maxMatchingWork {
				stop = errMatchingWork
			}
		}
		return stop == nil && eq(i, j)
	}
	if greedy {
		// A first free match for each expected call settles the common
		// case (most calls match one call) without augmenting paths.
		for i := 0; i < n && stop == nil; i++ {
			for j := 0; j < m && stop == nil; j++ {
				if matchActual[j] < 0 && probe(i, j) {
					matchActual[j], p[i] = i, j
					break
				}
			}
		}
	}
	visited := make([]bool, m)
	var augment func(i int) bool
	augment = func(i int) bool {
		for j := 0; j < m && stop == nil; j++ {
			if visited[j] || !probe(i, j) {
				continue
			}
			visited[j] = true
			if matchActual[j] < 0 || augment(matchActual[j]) {
				matchActual[j] = i
				return true
			}
		}
		return false
	}
	for i := 0; i < n && stop == nil; i++ {
		if p[i] >= 0 {
			continue
		}
		clear(visited)
		augment(i)
	}
	if stop != nil {
		return nil, stop
	}
	p = unpaired(n)
	for j, i := range matchActual {
		if i >= 0 {
			p[i] = j
		}
	}
	return p, nil
}

// callClasses number the calls so that matching is integer comparison:
// an expected call with arguments matches an actual call of the same full
// class (name and canonical arguments); one without arguments matches any
// actual call of the same name class.
type callClasses struct {
	expName, expFull []int32
	expArgs          []bool
	actName, actFull []int32
}

func (cl *callClasses) eq(i, j int) bool {
	if cl.expArgs[i] {
		return cl.expFull[i] == cl.actFull[j]
	}
	return cl.expName[i] == cl.actName[j]
}

// matching is a maximum matching in O(n+m): per full class, expected calls
// with arguments take the actual calls of their class in order; expected
// calls without arguments then take what is left of their name in order.
// (Exchange argument: a call without arguments can use any call of its
// name, one with arguments only its class, so serving the latter first
// within each class never loses a match.)
func (cl *callClasses) matching(n, m int) pairs {
	p := unpaired(n)
	byFull := map[int32][]int{}
	for j := 0; j < m; j++ {
		byFull[cl.actFull[j]] = append(byFull[cl.actFull[j]], j)
	}
	used := make([]bool, m)
	for i := 0; i < n; i++ {
		if !cl.expArgs[i] {
			continue
		}
		if q := byFull[cl.expFull[i]]; len(q) > 0 {
			p[i], used[q[0]] = q[0], true
			byFull[cl.expFull[i]] = q[1:]
		}
	}
	byName := map[int32][]int{}
	for j := 0; j < m; j++ {
		if !used[j] {
			byName[cl.actName[j]] = append(byName[cl.actName[j]], j)
		}
	}
	for i := 0; i < n; i++ {
		if cl.expArgs[i] {
			continue
		}
		if q := byName[cl.expName[i]]; len(q) > 0 {
			p[i] = q[0]
			byName[cl.expName[i]] = q[1:]
		}
	}
	return p
}

// interner numbers strings.
type interner map[string]int32

func (in interner) id(s string) int32 {
	if v, ok := in[s]; ok {
		return v
	}
	v := int32(len(in))
	in[s] = v
	return v
}

// positional pairs expected i with actual i when they match.
func positional(n, m int, eq eqFunc) pairs {
	p := unpaired(n)
	for i := range p {
		if i < m && eq(i, i) {
			p[i] = i
		}
	}
	return p
}

// stopped turns an error of the matching algorithms into the result to
// report: timeout when the trace's deadline passed, skipped at the work cap.
func stopped(ctx context.Context, err error, what string) Result {
	if errors.Is(err, errMatchingWork) {
		return Skipped("%s needs more than %d comparisons (the matching work cap; arguments are compared one pair at a time "+
			"under this argument mode); not evaluated", what, maxMatchingWork)
	}
	return timedOut(ctx, what)
}

// timedOut is the result of an evaluator that stopped at the trace's deadline.
func timedOut(ctx context.Context, what string) Result {
	cause := "the trace's evaluation timeout passed"
	if errors.Is(ctx.Err(), context.Canceled) {
		cause = "the evaluation was canceled"
	}
	return Result{Status: StatusTimeout, Reason: fmt.Sprintf("%s while %s; not evaluated", cause, what)}
}
