package adapter

// JSON text scanned without decoding (the decoder is jsondec.go): whether a
// text nests too deeply to decode, and the raw text of parts of a JSON
// value, which tells how a tool's schema was written
// (ToolDefinition.RawParameters). The raw parts are read from text decoded
// successfully before; on anything unexpected they are "" or nil.

// rawSkipSpace returns the index of the first non-space byte at or after i.
func rawSkipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// rawSkipValue returns the index just after the JSON value starting at i,
// or -1.
func rawSkipValue(s string, i int) int {
	end, _ := scanJSON(s, i, -1)
	return end
}

// jsonTooDeep reports whether the JSON text nests deeper than limit. It is a
// linear scan that stops early, run before decoding; it reads the whole
// text, malformed or not.
func jsonTooDeep(s string, limit int) bool {
	_, deep := scanJSON(s, -1, limit)
	return deep
}

// scanJSON is the one scanner of JSON text without decoding. From i it
// returns the index just after the JSON value starting there, or -1; with
// i < 0 it scans all of s as brackets and strings (end is -1). Either way
// deep is true, and the scan stops, when brackets nest deeper than limit
// (limit < 0: no limit).
func scanJSON(s string, i, limit int) (end int, deep bool) {
	whole := i < 0
	if whole {
		i = 0
	} else {
		if i >= len(s) {
			return -1, false
		}
		switch s[i] {
		case '"':
			for i++; i < len(s); i++ {
				switch s[i] {
				case '\\':
					i++
				case '"':
					return i + 1, false
				}
			}
			return -1, false
		case '{', '[':
		default: // a number or literal: up to a delimiter
			start := i
			for i < len(s) {
				switch s[i] {
				case ',', '}', ']', ' ', '\t', '\n', '\r':
					if i == start {
						return -1, false
					}
					return i, false
				}
				i++
			}
			if i == start {
				return -1, false
			}
			return i, false
		}
	}
	depth, inStr := 0, false
	for ; i < len(s); i++ {
		ch := s[i]
		if inStr {
			switch ch {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch ch {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if limit >= 0 && depth > limit {
				return -1, true
			}
		case '}', ']':
			depth--
			if depth == 0 && !whole {
				return i + 1, false
			}
		}
	}
	return -1, false
}

// looksJSON reports whether s starts like a JSON object, array or string.
func looksJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[', '"':
			return true
		default:
			return false
		}
	}
	return false
}

// rawElems returns the raw text of each element of the JSON array s; nil
// when s is not an array.
func rawElems(s string) []string {
	i := rawSkipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return nil
	}
	out := []string{}
	i = rawSkipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return out
	}
	for {
		i = rawSkipSpace(s, i)
		end := rawSkipValue(s, i)
		if end < 0 {
			return nil
		}
		out = append(out, s[i:end])
		i = rawSkipSpace(s, end)
		if i >= len(s) {
			return nil
		}
		switch s[i] {
		case ',':
			i++
		case ']':
			return out
		default:
			return nil
		}
	}
}

// rawField returns the raw text of the value of key in the JSON object s,
// of its last occurrence (as decoding keeps); "" when s is not an object
// or has no such key. Keys are compared decoded, as the decoder reads them.
func rawField(s, key string) string {
	i := rawSkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return ""
	}
	found := ""
	i = rawSkipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return ""
	}
	for {
		i = rawSkipSpace(s, i)
		if i >= len(s) || s[i] != '"' {
			return ""
		}
		d := jsonDecoder{s: s, i: i}
		k, ok := d.str()
		if !ok {
			return ""
		}
		i = rawSkipSpace(s, d.i)
		if i >= len(s) || s[i] != ':' {
			return ""
		}
		i = rawSkipSpace(s, i+1)
		end := rawSkipValue(s, i)
		if end < 0 {
			return ""
		}
		if k == key {
			found = s[i:end]
		}
		i = rawSkipSpace(s, end)
		if i >= len(s) {
			return ""
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return found
		default:
			return ""
		}
	}
}
