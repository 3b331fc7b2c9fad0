package redact

import "strings"

// A gate says from a text's byte statistics whether a built-in's windows
// can hold anything.
type gate uint8

const (
	gateNone gate = iota // always open (patterns)
	gateEmail
	gatePhone
	gateCard
	gateIBAN
	gateIP
	gateSecret
)

// open is false only when the detector's windows would return none.
func (g gate) open(st *textStats) bool {
	switch g {
	case gateEmail:
		return st.at
	case gatePhone:
		return st.phoneRunDigits >= 7
	case gateCard: // card runs are within phone runs (cardAlphabet ⊂ phoneAlphabet)
		return st.phoneRunDigits >= 13
	case gateIBAN:
		return st.iban
	case gateIP: // IPv4 runs are within phone runs (ipv4Alphabet ⊂ phoneAlphabet)
		return st.v6RunColons >= 2 || (st.phoneRunDigits >= 4 && st.dots >= 3)
	case gateSecret:
		return st.secret
	}
	return true
}

// textStats is what one pass over a text's bytes tells the built-in
// detectors' gates, so a text with nothing any of them could find (most
// reasons) is not scanned once per detector.
type textStats struct {
	at     bool // an '@'
	iban   bool // an ibanWindows start
	secret bool // one of secretMarkers
	cut    bool // CutMarker
	// v6RunColons is the most colons in one run of ipv6Alphabet bytes.
	v6RunColons int
	dots        int
	// phoneRunDigits is the most digits in one run of phoneAlphabet bytes
	// (card and IPv4 runs lie within such runs).
	phoneRunDigits int
}

// Byte classes of scan.
const (
	clDigit   = 1 << iota // 0-9
	clPhone               // in phoneAlphabet
	clV6                  // in ipv6Alphabet
	clSpecial             // looked at closer: @ : . CutMarker[0], capitals, secret markers' first bytes
)

var byteClass = func() (cl [256]uint8) {
	for c := range 256 {
		if phoneAlphabet[c] {
			cl[c] |= clPhone
		}
		if ipv6Alphabet[c] {
			cl[c] |= clV6
		}
		if isDigit(byte(c)) {
			cl[c] |= clDigit
		}
		if b := byte(c); b == '@' || b == ':' || b == '.' || b == CutMarker[0] || (b >= 'A' && b <= 'Z') || secretMarkersByFirst[c] != nil {
			cl[c] |= clSpecial
		}
	}
	return cl
}()

func scan(text string) textStats {
	var st textStats
	run, colons := 0, 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		cl := byteClass[c]
		if cl&clV6 == 0 {
			colons = 0
		}
		if cl&clDigit != 0 {
			run++
			st.phoneRunDigits = max(st.phoneRunDigits, run)
			continue
		}
		if cl&clPhone == 0 {
			run = 0
		}
		if cl&clSpecial == 0 {
			continue
		}
		switch {
		case c == '@':
			st.at = true
		case c == ':':
			colons++
			st.v6RunColons = max(st.v6RunColons, colons)
		case c == '.':
			st.dots++
		case c == CutMarker[0]:
			st.cut = st.cut || strings.HasPrefix(text[i:], CutMarker)
		case c >= 'A' && c <= 'Z' && !st.iban && i+15 <= len(text) && (i == 0 || !isAlnum(text[i-1])):
			if d := text[i+1]; d >= 'A' && d <= 'Z' && isDigit(text[i+2]) && isDigit(text[i+3]) {
				st.iban = true
			}
		}
		if n := i + 1; !st.secret && n < len(text) && secretPairs[c][text[n]>>6]&(1<<(text[n]&63)) != 0 {
			st.secret = hasMarker(text[i:])
		}
	}
	return st
}

// hasMarker: s starts with one of secretMarkers.
func hasMarker(s string) bool {
	for _, m := range secretMarkersByFirst[s[0]] {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	return false
}
