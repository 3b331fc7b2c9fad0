package redact

import (
	"regexp"
)

// A detector finds values in a decoded text (a view). The built-ins are
// byte scanners, each one pass over the text plus a bounded look around
// each candidate, so their cost is linear in the text whatever it holds
// (docs/contract.md §20); user patterns are RE2 expressions, linear too.
type detector struct {
	name string
	// find appends the values in text to out, in text order and not
	// overlapping; label is the JSON key text is the value of ("" for
	// none): a key naming a phone is a phone cue, one naming a version
	// keeps a four-part version from being an address.
	find func(text, label string, out []span) []span
	// gate, for the built-ins, says whether find can find anything
	// (gate.go).
	gate gate
}

type span struct{ start, end int }

func builtin(name string) detector {
	switch name {
	case Email:
		return detector{name: name, find: findEmails, gate: gateEmail}
	case Phone:
		return detector{name: name, find: findPhones, gate: gatePhone}
	case CreditCard:
		return detector{name: name, find: findCards, gate: gateCard}
	case IBAN:
		return detector{name: name, find: findIBANs, gate: gateIBAN}
	case IPAddress:
		return detector{name: name, find: findIPs, gate: gateIP}
	case Secret:
		return detector{name: name, find: findSecrets, gate: gateSecret}
	}
	panic("redact: unknown detector " + name)
}

func patternDetector(name string, re *regexp.Regexp) detector {
	return detector{name: name, find: func(text, _ string, out []span) []span {
		for _, loc := range re.FindAllStringIndex(text, -1) {
			if loc[0] < loc[1] {
				out = append(out, span{loc[0], loc[1]})
			}
		}
		return out
	}}
}

type match struct {
	start, end int
	det        int
}

// find returns the values of every detector in text, not overlapping:
// where two claim the same characters, the earlier detector's wins. In
// text order.
func (r *Redactor) find(text, label string) []match {
	var taken []match
	var found []span
	st := scan(text)
	for di := range r.dets {
		if g := r.dets[di].gate; g != nil && !g(st) {
			continue
		}
		found = r.dets[di].find(text, label, found[:0])
		if len(found) == 0 {
			continue
		}
		taken = mergeMatches(taken, found, di)
	}
	return taken
}

// mergeMatches adds to taken (sorted, not overlapping) the spans of found
// (sorted, not overlapping) that overlap none of them: one pass over both.
func mergeMatches(taken []match, found []span, di int) []match {
	if len(taken) == 0 {
		out := make([]match, len(found))
		for i, f := range found {
			out[i] = match{f.start, f.end, di}
		}
		return out
	}
	out := make([]match, 0, len(taken)+len(found))
	i := 0
	for _, f := range found {
		for i < len(taken) && taken[i].end <= f.start {
			out = append(out, taken[i])
			i++
		}
		if i < len(taken) && taken[i].start < f.end {
			continue // overlaps taken[i]
		}
		out = append(out, match{f.start, f.end, di})
	}
	return append(out, taken[i:]...)
}

// Byte classes.
func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isLetter(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}
func isAlnum(b byte) bool { return isDigit(b) || isLetter(b) }

// before and after are the bytes around a span (0 at the edges).
func before(text string, i int) byte {
	if i <= 0 || i > len(text) {
		return 0
	}
	return text[i-1]
}

func after(text string, i int) byte {
	if i < 0 || i >= len(text) {
		return 0
	}
	return text[i]
}
