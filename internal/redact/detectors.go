package redact

import (
	"net/netip"
	"regexp"
	"strings"
)

// A detector finds candidate spans with an RE2 expression and keeps those
// its check accepts: regular expressions find what looks like a value, the
// checks (Luhn, mod 97, address parsing, digit counts, what surrounds the
// match) keep order numbers, timestamps and versions out.
type detector struct {
	name string
	re   *regexp.Regexp
	// group, when > 0, is the submatch that is replaced (`Bearer <value>`
	// keeps the word Bearer).
	group int
	// check, when set, accepts or trims a match: it returns the replaced
	// range within text, ok false to skip it.
	check func(text string, start, end int) (int, int, bool)
	// groupCheck is check for matches where group matched.
	groupCheck func(text string, start, end int) (int, int, bool)
	// windows, when set, returns the parts of text that may hold a value
	// (found by a byte scan, much faster than the expression); the
	// expression runs on those alone. Nil: on the whole text.
	windows func(text string) [][2]int
	// gate, when set, says from the text's byte statistics whether windows
	// can return anything (see open).
	gate gate
}

func builtin(name string) detector {
	switch name {
	case Email:
		return detector{name: name, re: emailRE, check: emailCheck, windows: emailWindows, gate: gateEmail}
	case Phone:
		return detector{name: name, re: phoneRE, check: phoneCheck, windows: phoneWindows, gate: gatePhone}
	case CreditCard:
		return detector{name: name, re: cardRE, check: cardCheck, windows: cardWindows, gate: gateCard}
	case IBAN:
		return detector{name: name, re: ibanRE, check: ibanCheck, windows: ibanWindows, gate: gateIBAN}
	case IPAddress:
		return detector{name: name, re: ipRE, check: ipCheck, windows: ipWindows, gate: gateIP}
	case Secret:
		return detector{name: name, re: secretRE, group: 1, groupCheck: bearerCheck, windows: secretWindows, gate: gateSecret}
	}
	panic("redact: unknown detector " + name)
}

var (
	emailRE = regexp.MustCompile(`[\p{L}\p{N}](?:[\p{L}\p{N}._%+-]{0,63})@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}`)

	// Phone numbers in the forms people write them: international (+ or 00
	// and a country code), a parenthesised area code, North American
	// 3-3-4 groups, and national numbers with a trunk 0 in groups.
	phoneRE = regexp.MustCompile(`(?:\+|\b00)[1-9](?:[ .-]?(?:\(\d{1,4}\)|\d))+` +
		`|\(\d{2,5}\)[ .-]?\d(?:[ .-]?\d)+` +
		`|\b\d{3}[ .-]\d{3}[ .-]\d{4}\b` +
		`|\b0\d{1,4}[ -]\d(?:[ -]?\d)+\b`)

	cardRE = regexp.MustCompile(`\b\d(?:[ -]?\d)+\b`)

	ibanRE = regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,32}`)

	ipRE = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b|[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*`)

	// Secrets: API-key-shaped tokens, JWTs and Bearer values (group 1).
	secretRE = regexp.MustCompile(`(?i:\bbearer)\s+([A-Za-z0-9._~+/-]{12,}=*)` +
		`|\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}` +
		`|\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{20,}` +
		`|\b[spr]k_(?:live|test)_[A-Za-z0-9]{16,}` +
		`|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` +
		`|\bgh[pousr]_[A-Za-z0-9]{30,}` +
		`|\bgithub_pat_[A-Za-z0-9_]{30,}` +
		`|\bxox[abposre]-[A-Za-z0-9-]{10,}` +
		`|\bglpat-[A-Za-z0-9_-]{20}` +
		`|\bAIza[0-9A-Za-z_-]{35}` +
		`|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)
)

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isAlnum(b byte) bool {
	return isDigit(b) || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

// before and after are the bytes around a match (0 at the edges).
func before(text string, i int) byte {
	if i <= 0 {
		return 0
	}
	return text[i-1]
}

func after(text string, i int) byte {
	if i >= len(text) {
		return 0
	}
	return text[i]
}

func emailCheck(text string, s, e int) (int, int, bool) {
	// Part of a longer word or path (a@b.c/d is a URL's user info).
	if b := before(text, s); b == '@' || b == '/' || b == '\\' || isAlnum(b) || b >= 0x80 {
		return 0, 0, false
	}
	return s, e, true
}

// phoneCheck keeps 7 to 15 digits that are not part of a longer number, a
// date, a time, a version or an identifier.
func phoneCheck(text string, s, e int) (int, int, bool) {
	m := text[s:e]
	digits := 0
	for i := 0; i < len(m); i++ {
		if isDigit(m[i]) {
			digits++
		}
	}
	intl := m[0] == '+' || (strings.HasPrefix(m, "00") && len(m) > 2 && m[2] != '0')
	if digits < 7 || digits > 15 || (!intl && digits < 9) {
		return 0, 0, false
	}
	b, a := before(text, s), after(text, e)
	// inside a longer token: digits, letters, dotted numbers, paths,
	// identifiers like ORD-2024-…, times 10:30
	if isAlnum(b) || b == '_' || b == '/' || b == ':' || b == '#' || b == '$' {
		return 0, 0, false
	}
	if (b == '-' || b == '.') && isAlnum(before(text, s-1)) {
		return 0, 0, false
	}
	// one more group of digits before it: part of a longer number (a card,
	// an account reference) written in groups
	if !intl && b == ' ' && isDigit(before(text, s-1)) {
		return 0, 0, false
	}
	if isAlnum(a) || a == '_' || a == '/' || a == ':' || a == '%' {
		return 0, 0, false
	}
	if (a == '-' || a == '.' || a == ',') && isDigit(after(text, e+1)) {
		return 0, 0, false
	}
	// A date or a time shape inside: 2024-01-15, 12.03.2024.
	if dateLike.MatchString(m) {
		return 0, 0, false
	}
	// The same separator between every group, or spaces with one other:
	// what people write. Mixed dots and dashes are versions and dates.
	if strings.ContainsRune(m, '.') && (strings.ContainsRune(m, '-') || !intl && strings.Count(m, ".") != 2) {
		return 0, 0, false
	}
	return s, e, true
}

var dateLike = regexp.MustCompile(`^(?:19|20)\d\d[-./](?:0[1-9]|1[0-2])[-./](?:0[1-9]|[12]\d|3[01])` +
	`|^(?:0[1-9]|[12]\d|3[01])[-./](?:0[1-9]|1[0-2])[-./](?:19|20)\d\d`)

// cardCheck keeps 13 to 19 digits with a card network's prefix that pass
// the Luhn check, written plain or in groups with one kind of separator.
// When the whole run fails, its trailing groups are dropped one by one (a
// card number followed by its security code).
func cardCheck(text string, s, e int) (int, int, bool) {
	if b := before(text, s); b == '.' || b == '-' || b == '+' || b == '/' || b == ':' || isAlnum(b) {
		return 0, 0, false
	}
	if a := after(text, e); (a == '.' || a == '-' || a == ',') && isDigit(after(text, e+1)) {
		return 0, 0, false
	}
	for {
		m := text[s:e]
		if strings.ContainsRune(m, ' ') && strings.ContainsRune(m, '-') {
			return 0, 0, false
		}
		ds := make([]byte, 0, 24)
		for i := 0; i < len(m); i++ {
			if isDigit(m[i]) {
				ds = append(ds, m[i])
			}
		}
		if len(ds) < 13 {
			return 0, 0, false
		}
		if len(ds) <= 19 && cardPrefix(string(ds)) && luhn(ds) {
			return s, e, true
		}
		cut := strings.LastIndexAny(m, " -")
		if cut < 0 {
			return 0, 0, false
		}
		e = s + cut
	}
}

// cardPrefix: Visa, Mastercard, Amex, Discover, Diners, JCB, UnionPay,
// Maestro ranges.
func cardPrefix(d string) bool {
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

// ibanLengths are the IBAN lengths of the registry's countries.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// ibanCheck trims the candidate to its country's length (the expression
// may run into a following word) and keeps it when mod 97 gives 1.
func ibanCheck(text string, s, e int) (int, int, bool) {
	if isAlnum(before(text, s)) {
		return 0, 0, false
	}
	want, ok := ibanLengths[text[s:s+2]]
	if !ok {
		return 0, 0, false
	}
	var compact []byte
	end := s
	for i := s; i < e && len(compact) < want; i++ {
		if text[i] != ' ' {
			compact = append(compact, text[i])
		}
		end = i + 1
	}
	if len(compact) != want || isAlnum(after(text, end)) {
		return 0, 0, false
	}
	// Move the first four characters to the end, letters as 10..35.
	rem := 0
	for _, c := range append(compact[4:], compact[:4]...) {
		switch {
		case isDigit(c):
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return 0, 0, false
		}
	}
	if rem != 1 {
		return 0, 0, false
	}
	return s, end, true
}

// ipCheck keeps what net/netip parses as an address: four dotted numbers
// up to 255 not inside a longer dotted run (versions), or an IPv6 address
// with at least three hex digits (not `::`, not a time like 10:30:00).
func ipCheck(text string, s, e int) (int, int, bool) {
	m := strings.TrimRight(text[s:e], ".")
	e = s + len(m)
	b, a := before(text, s), after(text, e)
	if strings.Count(m, ":") == 0 {
		if b == '.' || b == ':' || b == 'v' || b == 'V' || isAlnum(b) || ((a == '.' || a == '-') && isAlnum(after(text, e+1))) || isAlnum(a) {
			return 0, 0, false
		}
		if addr, err := netip.ParseAddr(m); err != nil || !addr.Is4() {
			return 0, 0, false
		}
		return s, e, true
	}
	if isAlnum(b) || b == ':' || isAlnum(a) || a == ':' {
		return 0, 0, false
	}
	addr, err := netip.ParseAddr(m)
	if err != nil || !addr.Is6() {
		return 0, 0, false
	}
	hex := 0
	for i := 0; i < len(m); i++ {
		if m[i] != ':' && m[i] != '.' {
			hex++
		}
	}
	if hex < 3 && m != "::1" {
		return 0, 0, false
	}
	return s, e, true
}

// bearerCheck keeps a Bearer value that is not a plain word: it has a
// digit, or mixes cases ("Bearer tokens are" is prose).
func bearerCheck(text string, s, e int) (int, int, bool) {
	var digit, lower, upper bool
	for i := s; i < e; i++ {
		switch c := text[i]; {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return s, e, digit || (lower && upper)
}

// alphabet is a set of bytes.
type alphabet [256]bool

func newAlphabet(ranges ...string) *alphabet {
	var a alphabet
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for c := int(r[0]); c <= int(r[2]); c++ {
				a[c] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			a[r[i]] = true
		}
	}
	return &a
}

var (
	cardAlphabet  = newAlphabet("0-9", " -")
	phoneAlphabet = newAlphabet("0-9", " -.()+")
	ipv4Alphabet  = newAlphabet("0-9", ".")
	ipv6Alphabet  = newAlphabet("0-9", "a-f", "A-F", ":.")
)

// runs returns the maximal runs of bytes in the alphabet that hold at
// least minDigits digits and minSpecial bytes special (when special is
// not 0).
func runs(text string, in *alphabet, minDigits int, special byte, minSpecial int) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		if !in[text[i]] {
			i++
			continue
		}
		j, digits, specials := i, 0, 0
		for ; j < len(text) && in[text[j]]; j++ {
			if c := text[j]; c >= '0' && c <= '9' {
				digits++
			} else if c == special {
				specials++
			}
		}
		if digits >= minDigits && specials >= minSpecial {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	return out
}

func cardWindows(text string) [][2]int { return runs(text, cardAlphabet, 13, 0, 0) }

// phoneWindows: 9 digits at least (7 with an international prefix, which
// the + marks; "00" prefixes have 9 with their country code and number).
func phoneWindows(text string) [][2]int {
	ws := runs(text, phoneAlphabet, 7, '+', 0)
	out := ws[:0]
	for _, w := range ws {
		digits := 0
		for i := w[0]; i < w[1]; i++ {
			if isDigit(text[i]) {
				digits++
			}
		}
		if digits >= 9 || strings.IndexByte(text[w[0]:w[1]], '+') >= 0 {
			out = append(out, w)
		}
	}
	return out
}

func ipWindows(text string) [][2]int {
	v4 := runs(text, ipv4Alphabet, 4, '.', 3)
	v6 := runs(text, ipv6Alphabet, 0, ':', 2)
	return append(v6, v4...) // overlapping windows find the same match twice: find keeps the first
}

// ibanWindows: two capital letters and two digits at the start of a word.
func ibanWindows(text string) [][2]int {
	var out [][2]int
	for i := 0; i+15 <= len(text); i++ {
		c := text[i]
		if c < 'A' || c > 'Z' || (i > 0 && isAlnum(text[i-1])) {
			continue
		}
		if d := text[i+1]; d >= 'A' && d <= 'Z' && isDigit(text[i+2]) && isDigit(text[i+3]) {
			out = append(out, [2]int{i, min(len(text), i+4+32*2)})
		}
	}
	return out
}

func emailWindows(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		l, r := i, i+1
		for l > 0 && (isAlnum(text[l-1]) || text[l-1] >= 0x80 || strings.IndexByte("._%+-", text[l-1]) >= 0) {
			l--
		}
		for r < len(text) && (isAlnum(text[r]) || text[r] == '.' || text[r] == '-') {
			r++
		}
		if n := len(out); n > 0 && out[n-1][1] >= l {
			out[n-1][1] = r
		} else {
			out = append(out, [2]int{l, r})
		}
		i = r - 1
	}
	return out
}

// secretMarkers are the literal parts every secret shape starts with.
var secretMarkers = []string{"earer", "EARER", "eyJ", "sk-", "k_live_", "k_test_", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "glpat-", "AIza", "-----BEGIN"}

// secretMarkersByFirst are secretMarkers by their first byte;
// secretPairs, the sets of their first two bytes (bit c2 of entry c1).
var secretMarkersByFirst, secretPairs = func() (out [256][]string, pairs [256][4]uint64) {
	for _, m := range secretMarkers {
		out[m[0]] = append(out[m[0]], m)
		pairs[m[0]][m[1]>>6] |= 1 << (m[1] & 63)
	}
	return out, pairs
}()

func secretWindows(text string) [][2]int {
	for _, m := range secretMarkers {
		if strings.Contains(text, m) {
			return [][2]int{{0, len(text)}}
		}
	}
	return nil
}
