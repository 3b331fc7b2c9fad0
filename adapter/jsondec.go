package adapter

import (
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeFast decodes the JSON text s into plain Go values exactly as
// json.Unmarshal into an `any` does (map[string]any, []any, string,
// float64, bool, nil), with fewer allocations: strings without escapes are
// substrings of s, and arrays and objects are allocated at their final
// size. ok is false when s is not valid JSON, nests deeper than maxDepth
// or holds something this decoder leaves to encoding/json (a number out of
// float64 range); the caller then tells why (jsonTooDeep, or the error of
// json.Unmarshal). Bounding the depth here spares a scan of s before it.
func decodeFast(s string) (v any, ok bool) { return decodeSelect(s, nil) }

// decoders keep their scratch space between decodes.
var decoders = sync.Pool{New: func() any {
	return &jsonDecoder{scratch: make([]any, 0, 64), keys: make([]string, 0, 32)}
}}

type jsonDecoder struct {
	s       string
	i       int
	depth   int      // arrays and objects open at i (reset on errors)
	scratch []any    // elements of the arrays and values of the objects being decoded
	keys    []string // keys of the objects being decoded
}

func (d *jsonDecoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value() (any, bool) {
	if d.i >= len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.lit("true")
	case c == 'f':
		return false, d.lit("false")
	case c == 'n':
		return nil, d.lit("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *jsonDecoder) lit(want string) bool {
	if len(d.s)-d.i < len(want) || d.s[d.i:d.i+len(want)] != want {
		return false
	}
	d.i += len(want)
	return true
}

func (d *jsonDecoder) number() (any, bool) {
	f, ok := d.float()
	if !ok {
		return nil, false
	}
	return f, true
}

// float reads a JSON number at d.i.
func (d *jsonDecoder) float() (float64, bool) {
	start := d.i
	s := d.s
	i := d.i
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		n := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i > n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		digits()
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil {
		return 0, false // out of range: encoding/json reports it
	}
	d.i = i
	return f, true
}

// str reads a JSON string at d.i (the opening quote).
func (d *jsonDecoder) str() (string, bool) {
	s := d.s
	start := d.i + 1
	ascii := true
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			if ascii || utf8.ValidString(s[start:i]) {
				return s[start:i], true
			}
			return d.unquote(start)
		case c == '\\':
			return d.unquote(start)
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// unquote decodes the string starting at start (after the opening quote)
// with escapes or invalid UTF-8, as encoding/json does.
func (d *jsonDecoder) unquote(start int) (string, bool) {
	s := d.s
	b := make([]byte, 0, 32)
	for i := start; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(b), true
		case c == '\\':
			i++
			if i >= len(s) {
				return "", false
			}
			switch s[i] {
			case '"', '\\', '/':
				b = append(b, s[i])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s, i+1)
				if !ok {
					return "", false
				}
				i += 5
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", false
			}
			i++
		case c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD
		}
	}
	return "", false
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// each reads the elements of the array, or the members of the object,
// whose bracket is at i: read reads one, closing is the closing bracket.
func (d *jsonDecoder) each(closing byte, read func() bool) bool {
	d.i++ // [ or {
	if d.depth++; d.depth > maxDepth {
		return false
	}
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == closing {
		d.i++
		d.depth--
		return true
	}
	for {
		d.skipSpace()
		if !read() {
			return false
		}
		d.skipSpace()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case closing:
			d.i++
			d.depth--
			return true
		default:
			return false
		}
	}
}

func (d *jsonDecoder) array() (any, bool) {
	base := len(d.scratch)
	if !d.each(']', d.element) {
		return nil, false
	}
	return d.arrayFrom(base), true
}

// arrayFrom takes the elements read onto scratch from base as an array.
func (d *jsonDecoder) arrayFrom(base int) []any {
	out := make([]any, len(d.scratch)-base)
	copy(out, d.scratch[base:])
	clear(d.scratch[base:])
	d.scratch = d.scratch[:base]
	return out
}

// element reads an array's element onto scratch.
func (d *jsonDecoder) element() bool {
	v, ok := d.value()
	if !ok {
		return false
	}
	d.scratch = append(d.scratch, v)
	return true
}

func (d *jsonDecoder) object() (any, bool) {
	base, kbase := len(d.scratch), len(d.keys)
	if !d.each('}', d.member) {
		return nil, false
	}
	return d.objectFrom(base, kbase), true
}

// objectFrom takes the members read onto keys and scratch from kbase and
// base as an object.
func (d *jsonDecoder) objectFrom(base, kbase int) map[string]any {
	ks, vs := d.keys[kbase:], d.scratch[base:]
	m := make(map[string]any, len(ks))
	for j, k := range ks {
		m[k] = vs[j] // duplicate keys: the last wins
	}
	clear(vs)
	clear(ks)
	d.keys, d.scratch = d.keys[:kbase], d.scratch[:base]
	return m
}

// member reads an object's key and value onto keys and scratch.
func (d *jsonDecoder) member() bool {
	k, ok := d.memberKey()
	if !ok {
		return false
	}
	v, ok := d.value()
	if !ok {
		return false
	}
	d.keys = append(d.keys, k)
	d.scratch = append(d.scratch, v)
	return true
}

// jsonSel selects the parts of a JSON value decodeSelect decodes: of an
// object, only the members it names, each by its own selector (nil: the
// whole value); of an array, every element, each by the same selector.
// Strings, numbers and literals are decoded as they are.
type jsonSel map[string]jsonSel

// decodeSelect is decodeFast keeping only the parts of s that sel selects:
// the members of objects it does not name are checked as decodeFast checks
// them (ok is false where decodeFast's is) but not built. For a reader that
// reads no other part, the value reads the same as decodeFast's.
func decodeSelect(s string, sel jsonSel) (v any, ok bool) {
	d := decoders.Get().(*jsonDecoder)
	d.s, d.i, d.depth = s, 0, 0
	d.skipSpace()
	v, ok = d.valueSel(sel)
	if ok {
		d.skipSpace()
		ok = d.i == len(d.s)
	}
	// Completed arrays and objects cleared their part of the scratch space;
	// on errors the rest is still held.
	clear(d.scratch)
	clear(d.keys)
	d.s, d.scratch, d.keys = "", d.scratch[:0], d.keys[:0]
	if cap(d.scratch) <= 4096 && cap(d.keys) <= 4096 {
		decoders.Put(d)
	}
	if !ok {
		return nil, false
	}
	return v, true
}

func (d *jsonDecoder) valueSel(sel jsonSel) (any, bool) {
	if sel == nil || d.i >= len(d.s) {
		return d.value()
	}
	switch d.s[d.i] {
	case '{':
		base, kbase := len(d.scratch), len(d.keys)
		if !d.each('}', func() bool { return d.memberSel(sel) }) {
			return nil, false
		}
		return d.objectFrom(base, kbase), true
	case '[':
		base := len(d.scratch)
		if !d.each(']', func() bool {
			v, ok := d.valueSel(sel)
			if ok {
				d.scratch = append(d.scratch, v)
			}
			return ok
		}) {
			return nil, false
		}
		return d.arrayFrom(base), true
	}
	return d.value()
}

// memberSel reads an object's member: onto keys and scratch when sel names
// its key, checked and left out otherwise.
func (d *jsonDecoder) memberSel(sel jsonSel) bool {
	k, ok := d.memberKey()
	if !ok {
		return false
	}
	sub, keep := sel[k]
	if !keep {
		return d.skip()
	}
	v, ok := d.valueSel(sub)
	if !ok {
		return false
	}
	d.keys = append(d.keys, k)
	d.scratch = append(d.scratch, v)
	return true
}

// skip reads past the value at d.i, checking it as value does, building
// nothing.
func (d *jsonDecoder) skip() bool {
	if d.i >= len(d.s) {
		return false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.each('}', d.skipMember)
	case c == '[':
		return d.each(']', d.skip)
	case c == '"':
		return d.skipStr()
	case c == 't':
		return d.lit("true")
	case c == 'f':
		return d.lit("false")
	case c == 'n':
		return d.lit("null")
	case c == '-' || ('0' <= c && c <= '9'):
		_, ok := d.float()
		return ok
	}
	return false
}

func (d *jsonDecoder) skipMember() bool {
	if d.i >= len(d.s) || d.s[d.i] != '"' || !d.skipStr() {
		return false
	}
	return d.colon() && d.skip()
}

// memberKey reads a member's key and the colon after it, up to its value.
func (d *jsonDecoder) memberKey() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	k, ok := d.str()
	return k, ok && d.colon()
}

// colon reads the colon between a member's key and its value, with the
// space around it.
func (d *jsonDecoder) colon() bool {
	d.skipSpace()
	if d.i >= len(d.s) || d.s[d.i] != ':' {
		return false
	}
	d.i++
	d.skipSpace()
	return true
}

// skipStr reads past the string at d.i (the opening quote), accepting what
// str and unquote accept.
func (d *jsonDecoder) skipStr() bool {
	s := d.s
	for i := d.i + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			return true
		case c == '\\':
			i++
			if i >= len(s) {
				return false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(s, i+1); !ok {
					return false
				}
				i += 4
			default:
				return false
			}
		case c < ' ':
			return false
		}
	}
	return false
}
