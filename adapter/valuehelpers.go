package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func concat(a, b []Message) []Message {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]Message, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func appendUnique(dst, src []string) []string {
	if len(src) == 0 {
		return dst
	}
	if len(dst)+len(src) > 32 {
		seen := make(map[string]struct{}, len(dst)+len(src))
		for _, x := range dst {
			seen[x] = struct{}{}
		}
		for _, x := range src {
			if _, dup := seen[x]; !dup {
				seen[x] = struct{}{}
				dst = append(dst, x)
			}
		}
		return dst
	}
	for _, s := range src {
		dup := false
		for _, x := range dst {
			if x == s {
				dup = true
				break
			}
		}
		if !dup {
			dst = append(dst, s)
		}
	}
	return dst
}

// stringList reads a JSON array of strings, a string slice, or a plain
// string (one item).
func (c *spanCtx) stringList(key string, v pcommon.Value) ([]string, bool) {
	val, ok := c.valueOf(key, v)
	if !ok {
		return nil, false
	}
	switch t := val.(type) {
	case string:
		return []string{t}, true
	case []any:
		out := make([]string, 0, len(t))
		for _, it := range t {
			s, isStr := it.(string)
			if !isStr {
				c.report(key, "want strings, got %s", typeName(it))
				s = textOf(it)
			}
			out = append(out, s)
		}
		return out, true
	}
	c.report(key, "want a string or an array of strings, got %s", typeName(val))
	return nil, false
}

func (c *spanCtx) scalarText(key string, v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return c.fixString(key, v.Str())
	}
	c.report(key, "want a string, got %s", strings.ToLower(v.Type().String()))
	return textOf(c.convert(key, v))
}
