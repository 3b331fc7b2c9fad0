package redact

import (
	"strings"
	"unicode/utf8"
)

// A view is a text as the detectors read it: with its escapes decoded, so
// `bob%40example.com`, `bob\u0040example.com`, `bob\\u0040example.com`
// (a JSON string inside a JSON string) and `Bearer%20abc…` read as what
// they spell. Each byte of the decoded text knows where its escape starts
// in the original, so a value found in the view is replaced in the
// original whole, escapes included, and nothing around it changes.
type view struct {
	text string
	// orig[i] is the offset in the original of the escape (or byte) that
	// decoded byte i comes from; orig[len(text)] is the original's length.
	// Nil when nothing was decoded (the view is the original).
	orig []int32
}

// span maps [s, e) of the view to the original.
func (v *view) span(s, e int) (int, int) {
	if v.orig == nil {
		return s, e
	}
	return int(v.orig[s]), int(v.orig[e])
}

// needsDecoding says the text holds something decode would change.
func needsDecoding(text string) bool {
	if strings.IndexByte(text, '%') < 0 && strings.IndexByte(text, '\\') < 0 && strings.IndexByte(text, '&') < 0 {
		return false
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '%', '\\', '&':
			if _, n := decodeAt(text, i); n > 0 {
				return true
			}
		}
	}
	return false
}

// newView decodes text: %XX (repeated: %2540 is @), a run of backslashes
// before an escape letter (\n, \", \u0040 at any depth of JSON in JSON
// strings: \\u0040, \\\\u0040), \xXX, and the numeric character
// references &#64; and &#x40;.
func newView(text string) view {
	if !needsDecoding(text) {
		return view{text: text}
	}
	var b strings.Builder
	b.Grow(len(text))
	orig := make([]int32, 0, len(text)+1)
	for i := 0; i < len(text); {
		if c := text[i]; c == '%' || c == '\\' || c == '&' {
			if dec, n := decodeAt(text, i); n > 0 {
				for range len(dec) {
					orig = append(orig, int32(i))
				}
				b.WriteString(dec)
				i += n
				continue
			}
		}
		orig = append(orig, int32(i))
		b.WriteByte(text[i])
		i++
	}
	orig = append(orig, int32(len(text)))
	return view{text: b.String(), orig: orig}
}

// decodeAt decodes the escape at text[i:]: what it stands for and its
// length in text; n is 0 when there is no escape there.
func decodeAt(text string, i int) (string, int) {
	switch text[i] {
	case '%':
		c, ok := hexByte(text, i+1)
		if !ok || c >= 0x80 { // ASCII only: what the detectors read
			return "", 0
		}
		n := 3
		for c == '%' { // %2540: an encoded %40
			c2, ok := hexByte(text, i+n)
			if !ok || c2 >= 0x80 {
				break
			}
			c, n = c2, n+2
		}
		return string(rune(c)), n
	case '\\':
		j := i
		for j < len(text) && text[j] == '\\' {
			j++
		}
		if j >= len(text) {
			return "", 0
		}
		switch text[j] {
		case 'n':
			return "\n", j + 1 - i
		case 't':
			return "\t", j + 1 - i
		case 'r':
			return "\r", j + 1 - i
		case 'b', 'f':
			return " ", j + 1 - i
		case '"', '\'', '/':
			return text[j : j+1], j + 1 - i
		case 'x':
			if c, ok := hexByte(text, j+1); ok && c < 0x80 {
				return string(rune(c)), j + 3 - i
			}
		case 'u':
			r, ok := hexRune(text, j+1)
			if !ok {
				return "", 0
			}
			n := j + 5 - i
			if r >= 0xD800 && r < 0xDC00 { // a surrogate pair (\ud83d\ude00), both at the same depth
				k, nb := j+5, j-i
				if k+nb+5 <= len(text) && strings.Count(text[k:k+nb], "\\") == nb && text[k+nb] == 'u' {
					if r2, ok := hexRune(text, k+nb+1); ok && r2 >= 0xDC00 && r2 < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
						n = k + nb + 5 - i
					}
				}
			}
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			return string(r), n
		}
		return "", 0
	case '&':
		// &#64; &#x40;
		if i+3 >= len(text) || text[i+1] != '#' {
			return "", 0
		}
		j, base := i+2, 10
		if text[j] == 'x' || text[j] == 'X' {
			j, base = j+1, 16
		}
		r, k := 0, j
		for k < len(text) && k-j < 6 {
			d := hexVal(text[k])
			if d < 0 || d >= base {
				break
			}
			r = r*base + d
			k++
		}
		if k == j || k >= len(text) || text[k] != ';' || r == 0 || !utf8.ValidRune(rune(r)) {
			return "", 0
		}
		return string(rune(r)), k + 1 - i
	}
	return "", 0
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hexByte(text string, i int) (byte, bool) {
	if i+2 > len(text) {
		return 0, false
	}
	h, l := hexVal(text[i]), hexVal(text[i+1])
	if h < 0 || l < 0 {
		return 0, false
	}
	return byte(h<<4 | l), true
}

func hexRune(text string, i int) (rune, bool) {
	if i+4 > len(text) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		d := hexVal(text[k])
		if d < 0 {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
