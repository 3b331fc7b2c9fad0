package redact

import (
	"net/netip"
	"strings"
)

// findIPs finds IPv4 addresses (four dotted numbers up to 255, not inside
// a longer dotted run and not after `v` or the word version) and IPv6
// addresses (what net/netip parses, with a digit, in a run of hex digits,
// colons and dots), after any label (`ip:192.168.1.10`, `host=10.0.0.1`,
// `addr:fe80::1`). Each run is read once.
func findIPs(text, label string, out []span) []span {
	var v4, v6 []span
	for i := 0; i < len(text); {
		if !isDigit(text[i]) || isDigit(before(text, i)) {
			i++
			continue
		}
		if e, ok := ipv4At(text, i); ok && !(versionWord(label) && leadingSpace(text, i)) {
			v4 = append(v4, span{i, e})
			i = e
			continue
		}
		for i < len(text) && isDigit(text[i]) {
			i++
		}
	}
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], ':')
		if k < 0 {
			break
		}
		// the run of hex digits, colons and dots around this colon
		s, e := i+k, i+k
		for s > i && ipv6Set[text[s-1]] {
			s--
		}
		for e < len(text) && ipv6Set[text[e]] {
			e++
		}
		if sp, ok := ipv6In(text, s, e); ok {
			v6 = append(v6, sp)
		}
		i = e
	}
	if len(v6) == 0 {
		return append(out, v4...)
	}
	// both in text order; an IPv4 inside an IPv6 (::ffff:10.0.0.1) is part of it
	return append(out, spansOf(mergeMatches(toMatches(v6), v4, 0))...)
}

var ipv6Set = byteSet("0-9", "a-f", "A-F", ":.")

func toMatches(ss []span) []match {
	out := make([]match, len(ss))
	for i, s := range ss {
		out[i] = match{s.start, s.end, 0}
	}
	return out
}

func spansOf(ms []match) []span {
	out := make([]span, len(ms))
	for i, m := range ms {
		out[i] = span{m.start, m.end}
	}
	return out
}

// ipv4At reads d.d.d.d at text[i] (a digit, not after one).
func ipv4At(text string, i int) (int, bool) {
	b := before(text, i)
	if b == '.' || isLetter(b) || (b == '-' && isAlnum(before(text, i-1))) || versionBefore(text, i) {
		return 0, false
	}
	j := i
	for part := range 4 {
		if part > 0 {
			if after(text, j) != '.' {
				return 0, false
			}
			j++
		}
		k, n := j, 0
		for k < len(text) && isDigit(text[k]) && k-j < 4 {
			n = n*10 + int(text[k]-'0')
			k++
		}
		if k == j || k-j > 3 || n > 255 || (k-j > 1 && text[j] == '0') {
			return 0, false
		}
		j = k
	}
	// not inside a longer dotted run (1.2.3.4.5, 1.2.3.4-beta) or a word
	a := after(text, j)
	if isAlnum(a) || ((a == '.' || a == '-') && isAlnum(after(text, j+1))) {
		return 0, false
	}
	return j, true
}

// versionBefore: the word before i is v, ver, version or build (a
// four-part version string, v1.2.3.4, "version 3.10.12.1").
func versionBefore(text string, i int) bool {
	j := i
	for j > 0 && i-j < 4 && strings.IndexByte(` :="'`, text[j-1]) >= 0 {
		j--
	}
	w := j
	for w > 0 && j-w < 8 && isLetter(text[w-1]) {
		w--
	}
	return !isAlnum(before(text, w)) && versionWord(text[w:j])
}

func versionWord(w string) bool {
	switch strings.ToLower(w) {
	case "v", "ver", "version", "build", "release":
		return true
	}
	return false
}

// ipv6In reads an IPv6 address in the run text[s:e]: a label's colon
// before it (addr:fe80::1) and a trailing colon or dot are not part of it.
func ipv6In(text string, s, e int) (span, bool) {
	if e-s > 50 || e-s < 3 || isAlnum(before(text, s)) && text[s] != ':' {
		return span{}, false
	}
	if text[s] == ':' && after(text, s+1) != ':' {
		s++ // ip:2001:db8::1
	} else if isAlnum(before(text, s)) {
		return span{}, false // Foo::bar
	}
	for e > s && (text[e-1] == '.' || (text[e-1] == ':' && before(text, e-1) != ':')) {
		e--
	}
	m := text[s:e]
	if strings.Count(m, ":") < 2 || strings.IndexAny(m, "0123456789") < 0 || isAlnum(after(text, e)) {
		return span{}, false
	}
	addr, err := netip.ParseAddr(m)
	if err != nil || !addr.Is6() {
		return span{}, false
	}
	hex := 0
	for i := 0; i < len(m); i++ {
		if m[i] != ':' && m[i] != '.' {
			hex++
		}
	}
	if hex < 3 && m != "::1" {
		return span{}, false
	}
	return span{s, e}, true
}
