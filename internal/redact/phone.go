package redact

import "strings"

// findPhones finds phone numbers in the forms people write them:
//   - international: + (or 00) and a country code, then groups in any
//     separators (`+44 20 7946 0958`, `+1-555-123-4567`, `+15551234567`,
//     `+44 (0)20 …`, `+7 495 123-45-67`), 8 to 15 digits;
//   - North American: `555-123-4567`, `(800) 555-1234`, `1-800-555-1234`,
//     `1 (800) 555-1234`, `415.555.0132`;
//   - national with a trunk 0 in groups: `020 7946 0958`, `030 1234567`,
//     `030/1234567`, `06 12 34 56 78`, `(020) 7123 4567`, `098765 43210`,
//     9 to 12 digits;
//   - Indian mobile numbers in two groups of five: `98765 43210`;
//   - and, right after a phone cue (`tel:`, `phone=`, `mobile:`, `fax`,
//     `call`, a JSON key naming a phone; cued), any of 7 to 15 digits,
//     bare runs included (`tel:5551234567`).
//
// Dates, times, versions, prices and identifiers (`ORD-2024-001234`) are
// kept out by their shapes and what is around them. A run of digit groups
// is read once.
func findPhones(text, label string, out []span) []span {
	cued := label != "" && phoneKey(label)
	var gs []phoneGroup
	for i := 0; i < len(text); {
		c := text[i]
		start := c == '+' && isDigit(after(text, i+1)) ||
			c == '(' && isDigit(after(text, i+1)) ||
			isDigit(c) && !isDigit(before(text, i)) && before(text, i) != '+' && before(text, i) != '('
		if !start {
			i++
			continue
		}
		var e int
		gs, e = phoneRun(text, i, gs[:0])
		if len(gs) > 0 {
			if end, ok := phoneCheck(text, i, gs, cued && leadingSpace(text, i)); ok {
				out = append(out, span{i, end})
			}
		}
		i = max(e, i+1)
	}
	return out
}

// leadingSpace: only spaces before i.
func leadingSpace(text string, i int) bool {
	return strings.TrimLeft(text[:i], " \t\"'") == ""
}

type phoneGroup struct {
	start, end int  // the digits
	paren      bool // written in parentheses
	sep        byte // the separator before it (0 for the first)
}

// phoneRun reads the groups of digits from text[i] ('+', '(' or a digit):
// groups in parentheses or not, separated by one of " -./" (or " - ",
// or none around parentheses). It stops after 16 digits' worth of groups
// (no phone number is longer) at the end of the group; e is where the
// run ends.
func phoneRun(text string, i int, gs []phoneGroup) (_ []phoneGroup, e int) {
	j := i
	if text[j] == '+' {
		j++
	}
	digits := 0
	var sep byte
	for {
		g := phoneGroup{sep: sep}
		if after(text, j) == '(' {
			k := j + 1
			for k < len(text) && isDigit(text[k]) && k-j <= 5 {
				k++
			}
			if k == j+1 || after(text, k) != ')' || k-j > 5 {
				return gs, j
			}
			g.start, g.end, g.paren = j+1, k, true
			j = k + 1
		} else {
			k := j
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			if k == j {
				return gs, j
			}
			g.start, g.end = j, k
			j = k
		}
		gs = append(gs, g)
		digits += g.end - g.start
		if len(gs) == 1 && text[i] == '+' && digits >= 8 && !g.paren {
			return gs, j // +14155550123: written whole, nothing after it is part of it
		}
		if digits > 16 {
			// too long for a phone number: skip the rest of the run
			for j < len(text) && (isDigit(text[j]) || ((text[j] == ' ' || text[j] == '-' || text[j] == '.') && isDigit(after(text, j+1)))) {
				j++
			}
			return gs, j
		}
		// the separator to the next group
		switch c := after(text, j); {
		case c == '(' || (g.paren && isDigit(c)):
			sep = 0
		case (c == ' ' || c == '-' || c == '.' || c == '/') && (isDigit(after(text, j+1)) || after(text, j+1) == '('):
			sep = c
			j++
		case c == ' ' && after(text, j+1) == '-' && after(text, j+2) == ' ' && isDigit(after(text, j+3)):
			sep = '-'
			j += 3
		default:
			return gs, j
		}
	}
}

// phoneCheck decides whether the run (groups gs from text[i]) is a phone
// number, and where it ends.
func phoneCheck(text string, i int, gs []phoneGroup, cued bool) (int, bool) {
	end := gs[len(gs)-1].end
	if gs[len(gs)-1].paren {
		end++
	}
	digits := 0
	for _, g := range gs {
		digits += g.end - g.start
	}
	if digits < 7 || digits > 15 {
		return 0, false
	}
	intl := text[i] == '+' || (len(gs) > 1 && !gs[0].paren && strings.HasPrefix(text[gs[0].start:], "00") && gs[0].end-gs[0].start >= 3 && text[gs[0].start+2] != '0')
	cued = cued || phoneCue(text, i)
	if !phoneBoundaries(text, i, end, intl || cued) {
		return 0, false
	}
	m := text[i:end]
	if dateLike(strings.TrimLeft(m, "+(")) {
		return 0, false
	}
	// Dots with dashes, or dots where groups are not all written alike,
	// are versions and dates (1.2.3-4, 12.03.2024).
	var seps [256]bool
	for _, g := range gs[1:] {
		seps[g.sep] = true
	}
	if seps['.'] && (seps['-'] || seps['/'] || seps[' ']) {
		return 0, false
	}
	switch {
	case intl:
		n := digits
		if text[i] != '+' {
			n -= 2 // the 00
		}
		return end, n >= 8 && !seps['/']
	case cued:
		return end, true
	case seps['/']:
		// 030/1234567: a trunk 0, then one group
		return end, len(gs) == 2 && gs[0].end-gs[0].start >= 3 && text[gs[0].start] == '0' && digits >= 9
	case len(gs) == 1:
		return 0, false // a bare run of digits: only after a cue
	}
	l := func(k int) int { return gs[k].end - gs[k].start }
	first := text[gs[0].start]
	// North American: [1] area exchange line
	nanp := gs
	if len(nanp) == 4 && l(0) == 1 && first == '1' && !gs[0].paren {
		nanp = nanp[1:]
	}
	if len(nanp) == 3 && nanp[0].end-nanp[0].start == 3 && nanp[1].end-nanp[1].start == 3 && nanp[2].end-nanp[2].start == 4 &&
		text[nanp[0].start] >= '2' && !nanp[1].paren && !nanp[2].paren {
		return end, true
	}
	// National, with a trunk 0.
	if first == '0' && l(0) >= 2 && l(0) <= 6 && (l(0) < 2 || text[gs[0].start+1] != '0') && digits >= 9 && digits <= 12 && len(gs) <= 6 {
		for _, g := range gs[1:] {
			if g.paren {
				return 0, false
			}
		}
		return end, true
	}
	// Indian mobile numbers: 98765 43210.
	if len(gs) == 2 && l(0) == 5 && l(1) == 5 && first >= '6' && !gs[0].paren && (gs[1].sep == ' ' || gs[1].sep == '-') {
		return end, true
	}
	return 0, false
}

// phoneBoundaries: the number is not part of a longer token: no letter,
// digit or identifier punctuation glued to it (ORD-2024-001234, #123,
// $1 234 567, 10:30, 1,234,567, 12.5%). After a cue, or for a number
// with its +, a label may touch it (tel:5551234567, phone_5551234567).
func phoneBoundaries(text string, s, e int, labelled bool) bool {
	b := before(text, s)
	if !labelled {
		if isAlnum(b) || b == '_' || b == '#' || b == '$' || b == '/' || b == ':' || b == '@' {
			return false
		}
		if (b == '-' || b == '.' || b == ',') && isAlnum(before(text, s-1)) {
			return false
		}
		if b == ' ' && isDigit(before(text, s-1)) {
			return false // one more group before: a longer number
		}
	} else if text[s] == '+' && isLetter(b) {
		return false // 1e+10 (a digit before a + may end a value masked before it)
	} else if text[s] != '+' && isDigit(b) {
		return false
	}
	a := after(text, e)
	if isAlnum(a) || a == '_' || a == '%' || a == '@' {
		return false
	}
	if (a == '-' || a == '.' || a == ',' || a == ':' || a == '/') && isDigit(after(text, e+1)) {
		return false
	}
	return true
}

// dateLike: m starts with a date, year first or last (2024-01-15,
// 15.01.2024, 2024 01 15).
func dateLike(m string) bool {
	num := func(s string, lo, hi int) bool {
		n := 0
		for i := 0; i < len(s); i++ {
			if !isDigit(s[i]) {
				return false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n >= lo && n <= hi
	}
	sep := func(c byte) bool { return c == '-' || c == '.' || c == '/' || c == ' ' }
	if len(m) >= 10 && sep(m[4]) && sep(m[7]) && num(m[:4], 1900, 2099) && num(m[5:7], 1, 12) && num(m[8:10], 1, 31) {
		return true
	}
	return len(m) >= 10 && sep(m[2]) && sep(m[5]) && num(m[:2], 1, 31) && num(m[3:5], 1, 12) && num(m[6:10], 1900, 2099)
}

// phoneCue: right before i (past separators, and words like "number",
// "no.", "me at") is a word that names a phone: tel, phone, mobile, fax,
// cell, … (also inside a label: phone_number, contactPhone, "tel":), or
// the word call.
func phoneCue(text string, i int) bool {
	j := i
	for range 4 {
		k := j
		for k > 0 && j-k < 6 && cueSep[text[k-1]] {
			k--
		}
		prose := true // only spaces and colons between the word and what follows
		for x := k; x < j; x++ {
			if text[x] != ' ' && text[x] != ':' {
				prose = false
			}
		}
		w := k
		for w > 0 && k-w < 40 && (isAlnum(text[w-1]) || text[w-1] == '_' || text[w-1] >= 0x80) {
			w--
		}
		if w == k {
			return false
		}
		word := text[w:k]
		lw := strings.ToLower(word)
		if prose && (lw == "call" || lw == "ring" || lw == "text") {
			return true
		}
		if phoneKey(word) {
			return true
		}
		if !prose || !cueFiller[lw] {
			return false
		}
		j = w
	}
	return false
}

// cueSep are the bytes between a cue and its number: tel:…, phone=…,
// "phone":"…", Tel. …, mobile #: …
var cueSep = byteSet(` :="'.#-_/\`, "\t")

// cueFiller are words between a cue and its number: "phone number is",
// "call me at", "Tel. Nr.".
var cueFiller = map[string]bool{"no": true, "nr": true, "number": true, "num": true, "nummer": true, "is": true,
	"at": true, "on": true, "me": true, "us": true, "my": true, "mi": true, "ist": true, "est": true, "de": true, "es": true}

// phoneKey: a label or JSON key that names a phone: one of its words
// (split at _, -, . and case changes) is tel, phone, mobile, fax, cell, …
func phoneKey(key string) bool {
	if len(key) > 64 {
		return false
	}
	for _, w := range splitWords(key) {
		switch {
		case phoneWords[w],
			strings.HasPrefix(w, "phone"), strings.HasSuffix(w, "phone"), strings.HasPrefix(w, "telef"),
			strings.HasPrefix(w, "teleph"), strings.HasPrefix(w, "mobile"):
			return true
		}
	}
	return false
}

var phoneWords = map[string]bool{"tel": true, "tél": true, "tlf": true, "telp": true, "ph": true, "mobil": true, "mob": true,
	"cell": true, "cellular": true, "cel": true, "celular": true, "fax": true, "handy": true, "whatsapp": true, "msisdn": true,
	"sms": true, "móvil": true, "movil": true, "portable": true, "telefono": true, "teléfono": true}

// splitWords splits a label into lower-case words at _, -, ., spaces and
// a small letter followed by a capital (contactPhone).
func splitWords(key string) []string {
	var out []string
	start := 0
	for k := 0; k <= len(key); k++ {
		boundary := k == len(key) || strings.IndexByte("_-. :", key[k]) >= 0
		camel := k > 0 && k < len(key) && key[k] >= 'A' && key[k] <= 'Z' && key[k-1] >= 'a' && key[k-1] <= 'z'
		if boundary || camel {
			if k > start {
				out = append(out, strings.ToLower(key[start:k]))
			}
			start = k
			if boundary {
				start = k + 1
			}
		}
	}
	return out
}
