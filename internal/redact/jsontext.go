package redact

import (
	"encoding/json"
	"strings"
)

// JSON in text. A text may be a JSON document or hold some (a reason that
// quotes tool arguments, a prompt's data block, a log line with a JSON
// payload), and their strings may hold JSON again (tool arguments
// serialised twice). Each JSON document found keeps its structure: its
// strings are decoded, redacted as texts of their own (so JSON inside them
// is found the same way, at any depth) and re-encoded; a number that is a
// card or phone number becomes a string placeholder; the bytes between
// are left as written.

// jsonTok is a string or number of a JSON document.
type jsonTok struct {
	start, end int // the literal, quotes included
	str, key   bool
	// keyTok is the index of the key the value is under (an array
	// inherits its own key), -1 at the top or in an array at the top.
	keyTok int32
}

// scanJSON reads the JSON value that starts at text[p] ('{', '[' or '"'),
// appending its strings and numbers to toks. ok false: not a JSON value;
// end is then where it went wrong (after p), where the next look starts,
// so finding documents in a text stays linear.
func scanJSON(text string, p int, toks []jsonTok) (end int, _ []jsonTok, ok bool) {
	const (
		wantValue = iota
		wantKey
		wantColon
		afterValue
	)
	var stack []byte    // '{' or '['
	var keys []int32    // per open container: the key its values are under
	curKey := int32(-1) // the key of the next value
	state, first := wantValue, false
	i := p
	for {
		if state == afterValue && len(stack) == 0 {
			return i, toks, true
		}
		for i < len(text) && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t') {
			i++
		}
		if i >= len(text) {
			return len(text), toks, false
		}
		c := text[i]
		switch state {
		case wantValue:
			if first && c == ']' {
				stack, keys = stack[:len(stack)-1], keys[:len(keys)-1]
				i, state = i+1, afterValue
				continue
			}
			first = false
			switch {
			case c == '{':
				stack, keys = append(stack, '{'), append(keys, curKey)
				i, state, first = i+1, wantKey, true
			case c == '[':
				stack, keys = append(stack, '['), append(keys, curKey)
				i, first = i+1, true
			case c == '"':
				e, ok := scanJSONString(text, i)
				if !ok {
					return e, toks, false
				}
				toks = append(toks, jsonTok{start: i, end: e, str: true, keyTok: curKey})
				i, state = e, afterValue
			case c == '-' || isDigit(c):
				e, ok := scanJSONNumber(text, i)
				if !ok {
					return e, toks, false
				}
				toks = append(toks, jsonTok{start: i, end: e, keyTok: curKey})
				i, state = e, afterValue
			default:
				lit := ""
				switch c {
				case 't':
					lit = "true"
				case 'f':
					lit = "false"
				case 'n':
					lit = "null"
				}
				if lit == "" || !strings.HasPrefix(text[i:], lit) {
					return i + 1, toks, false
				}
				i, state = i+len(lit), afterValue
			}
		case wantKey:
			if first && c == '}' {
				stack, keys = stack[:len(stack)-1], keys[:len(keys)-1]
				i, state, first = i+1, afterValue, false
				continue
			}
			first = false
			if c != '"' {
				return i + 1, toks, false
			}
			e, ok := scanJSONString(text, i)
			if !ok {
				return e, toks, false
			}
			curKey = int32(len(toks))
			toks = append(toks, jsonTok{start: i, end: e, str: true, key: true, keyTok: -1})
			i, state = e, wantColon
		case wantColon:
			if c != ':' {
				return i + 1, toks, false
			}
			i, state = i+1, wantValue
		case afterValue:
			top := stack[len(stack)-1]
			switch {
			case c == ',' && top == '{':
				i, state = i+1, wantKey
			case c == ',':
				i, state, curKey = i+1, wantValue, keys[len(keys)-1]
			case c == '}' && top == '{', c == ']' && top == '[':
				stack, keys = stack[:len(stack)-1], keys[:len(keys)-1]
				i++
				if len(keys) > 0 {
					curKey = keys[len(keys)-1]
				}
			default:
				return i + 1, toks, false
			}
		}
	}
}

// scanJSONString reads the string literal at text[i] ('"'): its end, or
// where it is not one.
func scanJSONString(text string, i int) (int, bool) {
	for j := i + 1; j < len(text); j++ {
		switch c := text[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j + 1, false
		case c == '\\':
			j++
			if j >= len(text) {
				return j, false
			}
			switch text[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hexRune(text, j+1); !ok {
					return j + 1, false
				}
				j += 4
			default:
				return j + 1, false
			}
		}
	}
	return len(text), false
}

// scanJSONNumber reads the number at text[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanJSONNumber(text string, i int) (int, bool) {
	j := i
	if text[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		return j > k
	}
	switch {
	case j < len(text) && text[j] == '0':
		j++
	case !digits():
		return j + 1, false
	}
	if j < len(text) && text[j] == '.' {
		j++
		if !digits() {
			return j + 1, false
		}
	}
	if j < len(text) && (text[j] == 'e' || text[j] == 'E') {
		j++
		if j < len(text) && (text[j] == '+' || text[j] == '-') {
			j++
		}
		if !digits() {
			return j + 1, false
		}
	}
	return j, true
}

// escapedNumberQuote: text[s:e] is a number that is an object's value in
// JSON that was not read as a document (escaped in a string of prose:
// "{\"tel\":4155550123}"); its placeholder is quoted the way the key is
// (\", \\\", …), so that JSON stays JSON. "" otherwise.
func escapedNumberQuote(text string, s, e int) string {
	for k := s; k < e; k++ {
		if !isDigit(text[k]) {
			return ""
		}
	}
	a := e
	for a < len(text) && text[a] == ' ' {
		a++
	}
	if a >= len(text) || (text[a] != ',' && text[a] != '}' && text[a] != '\\') {
		return ""
	}
	b := s
	for b > 0 && text[b-1] == ' ' {
		b--
	}
	if b < 2 || text[b-1] != ':' || text[b-2] != '"' {
		return ""
	}
	q := b - 2
	for q > 0 && text[q-1] == '\\' {
		q--
	}
	return text[q : b-1]
}

// jsonString decodes a string literal known to be valid.
func jsonString(lit string) string {
	if strings.IndexByte(lit, '\\') < 0 {
		return lit[1 : len(lit)-1]
	}
	var s string
	if err := json.Unmarshal([]byte(lit), &s); err != nil {
		return lit[1 : len(lit)-1]
	}
	return s
}

// jsonDocument redacts the JSON document text (valid, its tokens toks):
// each string (keys too) and each number of 7 characters or more is
// redacted as a text of its own, with the key it is under as its label (a
// key that names a phone is a phone cue).
func (s *Session) jsonDocument(b *strings.Builder, text string, toks []jsonTok, depth int) {
	last := 0
	for _, t := range toks {
		lit := text[t.start:t.end]
		label := ""
		if t.keyTok >= 0 {
			label = jsonString(text[toks[t.keyTok].start:toks[t.keyTok].end])
		}
		var orig string
		if t.str {
			orig = jsonString(lit)
		} else {
			if len(lit) < 7 {
				continue
			}
			orig = lit
		}
		red := s.text(orig, label, depth+1)
		if red == orig {
			continue
		}
		enc, _ := json.Marshal(red)
		b.WriteString(text[last:t.start])
		b.Write(enc)
		last = t.end
	}
	b.WriteString(text[last:])
}
