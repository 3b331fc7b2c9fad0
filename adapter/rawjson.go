package adapter

// Raw JSON text of parts of a JSON value, found by scanning without
// decoding: how a tool's schema was written (ToolDefinition.RawParameters).
// The text has been decoded successfully before; on anything unexpected
// these return "" or nil.

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
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		for i++; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case '{', '[':
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
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if i == start {
				return -1
			}
			return i
		}
		i++
	}
	if i == start {
		return -1
	}
	return i
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
