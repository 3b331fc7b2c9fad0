package evaluators

// sequenceRatio is Python's difflib.SequenceMatcher(None, a, b).ratio() over
// Unicode code points, including the autojunk heuristic (for b of 200 or
// more elements, elements occurring in more than 1% of b are not used to
// seed matches). Axion's ToolCorrectness uses this ratio for fuzzy
// parameter matching; reproducing it keeps fuzzy_threshold meaning the same.
func sequenceRatio(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	total := len(ra) + len(rb)
	if total == 0 {
		return 1
	}
	return 2 * float64(matchingChars(ra, rb)) / float64(total)
}

func matchingChars(a, b []rune) int {
	b2j := make(map[rune][]int, len(b))
	for j, r := range b {
		b2j[r] = append(b2j[r], j)
	}
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for r, idx := range b2j {
			if len(idx) > ntest {
				delete(b2j, r)
			}
		}
	}
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(a), 0, len(b)}}
	matched := 0
	j2len := map[int]int{}
	newj2len := map[int]int{}
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		// find_longest_match(alo, ahi, blo, bhi)
		besti, bestj, bestsize := s.alo, s.blo, 0
		clear(j2len)
		for i := s.alo; i < s.ahi; i++ {
			clear(newj2len)
			for _, j := range b2j[a[i]] {
				if j < s.blo {
					continue
				}
				if j >= s.bhi {
					break
				}
				k := j2len[j-1] + 1
				newj2len[j] = k
				if k > bestsize {
					besti, bestj, bestsize = i-k+1, j-k+1, k
				}
			}
			j2len, newj2len = newj2len, j2len
		}
		for besti > s.alo && bestj > s.blo && a[besti-1] == b[bestj-1] {
			besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
		}
		for besti+bestsize < s.ahi && bestj+bestsize < s.bhi && a[besti+bestsize] == b[bestj+bestsize] {
			bestsize++
		}
		if bestsize == 0 {
			continue
		}
		matched += bestsize
		if s.alo < besti && s.blo < bestj {
			queue = append(queue, span{s.alo, besti, s.blo, bestj})
		}
		if besti+bestsize < s.ahi && bestj+bestsize < s.bhi {
			queue = append(queue, span{besti + bestsize, s.ahi, bestj + bestsize, s.bhi})
		}
	}
	return matched
}
