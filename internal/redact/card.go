package redact

// findCards finds card numbers: 13 to 19 digits with a card network's
// prefix and a valid Luhn check digit, written plain or in the groups
// cards are printed in (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4) with one kind of
// separator, after any label or punctuation (`Card:4111…`). A run of
// digit groups is read once; from each group at most the 19 digits after
// it are tried, so the cost is linear in the run (a run of `1-1-1-…` or of
// `1234 1234 …` costs a few steps per group).
func findCards(text, _ string, out []span) []span {
	var groups []span
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		// the run of digit groups from i, one separator between groups
		groups = groups[:0]
		var sep byte
		j := i
		for {
			k := j
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			groups = append(groups, span{j, k})
			if k+1 < len(text) && (text[k] == ' ' || text[k] == '-') && isDigit(text[k+1]) && (sep == 0 || sep == text[k]) {
				sep = text[k]
				j = k + 1
				continue
			}
			j = k
			break
		}
		out = cardsInRun(text, groups, out)
		i = j
	}
	return out
}

// cardsInRun adds the card numbers among groups (one run).
func cardsInRun(text string, groups []span, out []span) []span {
	runStart, runEnd := groups[0].start, groups[len(groups)-1].end
	// Part of a decimal, a range or a longer dotted number: not a card.
	if b := before(text, runStart); (b == '.' || b == ',' || b == '-' || b == '+' || b == '/') && isDigit(before(text, runStart-1)) || b == '+' {
		return out
	}
	if a := after(text, runEnd); (a == '.' || a == ',') && isDigit(after(text, runEnd+1)) {
		return out
	}
	if groupedCodeBefore(text, runStart) {
		return out
	}
	// A run glued to letters (DE44 5001 0517 …, an IBAN's digits) is
	// part of a code: a card only from its start.
	glued := isLetter(before(text, runStart))
	if p := runStart - 2; p >= 0 && text[p] == '0' && (text[p+1] == 'x' || text[p+1] == 'X') && !isAlnum(before(text, p)) {
		return out // a hex literal: 0x4111…
	}
	if inHexID(text, runStart, runEnd) {
		return out
	}
	var ds [19]byte
	for a := 0; a < len(groups) && !(glued && a > 0); {
		best := -1
		n := 0
		for b := a; b < len(groups); b++ {
			g := groups[b]
			if n+g.end-g.start > 19 {
				break
			}
			n += copy(ds[n:], text[g.start:g.end])
			if n >= 13 && cardGrouping(groups[a:b+1]) && cardPrefix(ds[:n]) && luhn(ds[:n]) {
				best = b
			}
			if b > a && !cardGroupingPrefix(groups[a:b+1]) {
				break
			}
		}
		if best < 0 {
			a++
			continue
		}
		out = append(out, span{groups[a].start, groups[best].end})
		a = best + 1
	}
	return out
}

// cardGrouping: one group, or groups as cards are printed: fours with a
// shorter last group, or 4-6-5 / 4-6-4 (Amex, Diners).
func cardGrouping(gs []span) bool {
	if len(gs) == 1 {
		return true
	}
	l := func(i int) int { return gs[i].end - gs[i].start }
	if len(gs) == 3 && l(0) == 4 && l(1) == 6 && (l(2) == 5 || l(2) == 4) {
		return true
	}
	for i := 0; i < len(gs)-1; i++ {
		if l(i) != 4 {
			return false
		}
	}
	return l(len(gs)-1) >= 1 && l(len(gs)-1) <= 4
}

// cardGroupingPrefix: gs can still grow into a card grouping.
func cardGroupingPrefix(gs []span) bool {
	l := func(i int) int { return gs[i].end - gs[i].start }
	if l(0) != 4 {
		return false
	}
	if len(gs) >= 2 && l(1) == 6 {
		return len(gs) == 2 || (len(gs) == 3 && l(2) <= 5)
	}
	for i := 1; i < len(gs)-1; i++ {
		if l(i) != 4 {
			return false
		}
	}
	return true
}

// cardPrefix: the number's network takes numbers of its length (Visa,
// Mastercard, Amex, Discover, Diners, JCB, UnionPay, Maestro).
func cardPrefix(d []byte) bool {
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	switch {
	case d[0] == '4':
		return len(d) == 13 || len(d) == 16 || len(d) == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720:
		return len(d) == 16
	case p2 == 34 || p2 == 37:
		return len(d) == 15
	case p2 == 36 || p2 == 38 || p2 == 39 || (p2 == 30 && d[2] <= '5'):
		return len(d) >= 14 && len(d) <= 19
	case p4 == 6011 || p2 == 65 || (p4 >= 6440 && p4 <= 6499) || p2 == 62:
		return len(d) >= 16
	case p2 == 35:
		return len(d) >= 16
	case p2 == 50 || (p2 >= 56 && p2 <= 58) || p2 == 63 || p2 == 67:
		return len(d) >= 12
	}
	return false
}

func luhn(ds []byte) bool {
	sum := 0
	double := false
	for i := len(ds) - 1; i >= 0; i-- {
		d := int(ds[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// groupedCodeBefore: the digits at i continue a code written in groups
// whose first group is a word of letters then digits (an IBAN: DE44 5001
// 0517 …; a tracking number): they are part of it, not a number of their
// own. (A word that starts with a digit may end a value masked before it:
// deciding on it would make a second redaction find more.)
func groupedCodeBefore(text string, i int) bool {
	b := before(text, i)
	if b != ' ' && b != '-' {
		return false
	}
	j := i - 1
	k := j
	for k > 0 && j-k < 8 && isAlnum(text[k-1]) {
		k--
	}
	if k == j || isAlnum(before(text, k)) || !isLetter(text[k]) {
		return false
	}
	var letter, digit bool
	for _, c := range []byte(text[k:j]) {
		letter = letter || isLetter(c)
		digit = digit || isDigit(c)
	}
	return letter && digit
}

// inHexID says whether the digits [start, end) are part of a hexadecimal
// id or hash: a word of at least 16 hex digits with a letter among them
// (a trace or span id, a digest). Random hex ids hold a 16-digit run that
// passes the Luhn check often enough that webhook alerts named
// "250488e[REDACTED:credit_card#1]fa0ff…" as their trace.
func inHexID(text string, start, end int) bool {
	for start > 0 && isAlnum(text[start-1]) {
		start--
	}
	for end < len(text) && isAlnum(text[end]) {
		end++
	}
	if end-start < 16 {
		return false
	}
	letter := false
	for i := start; i < end; i++ {
		c := text[i] | 0x20
		switch {
		case isDigit(text[i]):
		case c >= 'a' && c <= 'f':
			letter = true
		default:
			return false
		}
	}
	return letter
}
