package evaluators

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

// eqMatrix evaluates eq once for every (expected, actual) pair.
func eqMatrix(n, m int, eq func(i, j int) bool) [][]bool {
	cells := make([]bool, n*m)
	rows := make([][]bool, n)
	for i := 0; i < n; i++ {
		rows[i] = cells[i*m : (i+1)*m]
		for j := 0; j < m; j++ {
			rows[i][j] = eq(i, j)
		}
	}
	return rows
}

// lcs returns a longest common subsequence of expected (n) and actual (m)
// under adj, as expected -> actual pairs.
func lcs(n, m int, adj [][]bool) pairs {
	dp := make([]int, (n+1)*(m+1))
	at := func(i, j int) int { return dp[i*(m+1)+j] }
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			v := at(i-1, j)
			if w := at(i, j-1); w > v {
				v = w
			}
			if adj[i-1][j-1] {
				if w := at(i-1, j-1) + 1; w > v {
					v = w
				}
			}
			dp[i*(m+1)+j] = v
		}
	}
	p := make(pairs, n)
	for i := range p {
		p[i] = -1
	}
	for i, j := n, m; i > 0 && j > 0; {
		switch {
		case adj[i-1][j-1] && at(i, j) == at(i-1, j-1)+1:
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

// maxMatching is a maximum bipartite matching between expected (n) and
// actual (m) calls under adj (Kuhn's augmenting paths), so repeated tool
// names are paired optimally rather than greedily.
func maxMatching(n, m int, adj [][]bool) pairs {
	matchActual := make([]int, m)
	for j := range matchActual {
		matchActual[j] = -1
	}
	visited := make([]bool, m)
	var augment func(i int) bool
	augment = func(i int) bool {
		for j := 0; j < m; j++ {
			if !adj[i][j] || visited[j] {
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
	for i := 0; i < n; i++ {
		clear(visited)
		augment(i)
	}
	p := make(pairs, n)
	for i := range p {
		p[i] = -1
	}
	for j, i := range matchActual {
		if i >= 0 {
			p[i] = j
		}
	}
	return p
}

// positional pairs expected i with actual i when they match.
func positional(n, m int, adj [][]bool) pairs {
	p := make(pairs, n)
	for i := range p {
		p[i] = -1
		if i < m && adj[i][i] {
			p[i] = i
		}
	}
	return p
}
