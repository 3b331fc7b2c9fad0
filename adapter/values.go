package adapter

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/textutil"
)

// Limits on what one attribute may cost to read.
const (
	maxJSONBytes   = 1 << 20 // JSON strings longer than this are skipped
	maxDepth       = 64      // nesting deeper than this is skipped
	maxStringBytes = 1 << 20 // plain strings are truncated to this
	maxElements    = 100000  // values per structured attribute
	maxIndex       = 10000   // highest N in flattened `prefix.N.` keys
)

// spanCtx reads the attributes of one span and collects what it could not
// read as problems naming the span and the attribute.
type spanCtx struct {
	span     ptrace.Span // named in problems; its name and id are formatted on the first one
	name     string
	id       string
	problems []string
	// cache is what the spans of this Adapt call share (nil in tests of
	// one span).
	cache   *traceCache
	lastMsg string
}

// traceCache holds what was read from texts of one Adapt call: LLM spans of
// one run repeat the same tool definitions and system instructions.
type traceCache struct {
	json map[string]jsonResult // JSON texts decoded
	// defs are the tool definitions of tool-definition lists given as JSON
	// text and read without problems. Read only: spans get copies.
	defs map[string][]ToolDefinition
	// flat is what flatten fills for one span at a time (flatBusy while
	// read); emptied after each (doneFlat).
	flat     flatSet
	flatBusy bool
	keyBuf   []byte // olKeyTo's
}

// lookupDefs is defs[raw], or, when key is not nil, defs of the text of key.
func (tc *traceCache) lookupDefs(raw string, key []byte) ([]ToolDefinition, bool) {
	if key != nil {
		defs, ok := tc.defs[string(key)] // no copy made
		return defs, ok
	}
	defs, ok := tc.defs[raw]
	return defs, ok
}

func (tc *traceCache) putDefs(raw string, defs []ToolDefinition) {
	if tc.defs == nil {
		tc.defs = make(map[string][]ToolDefinition)
	}
	tc.defs[raw] = defs
}

type jsonResult struct {
	v   any
	err string // problem text when the JSON was unreadable
}

func newSpanCtx(ref SpanRef) spanCtx { return spanCtx{span: ref.Span} }

func (c *spanCtx) report(attr, format string, args ...any) {
	if c.id == "" {
		name := c.span.Name()
		if len(name) > 200 {
			name = textutil.Truncate(name, 200) + "…"
		}
		id := c.span.SpanID()
		c.name, c.id = strings.ToValidUTF8(name, "\uFFFD"), hex.EncodeToString(id[:])
	}
	if len(attr) > 200 {
		attr = textutil.Truncate(attr, 200) + "…"
	}
	c.lastMsg = fmt.Sprintf(format, args...)
	c.problems = append(c.problems, fmt.Sprintf("span %q (%s): attribute %q: %s",
		c.name, c.id, strings.ToValidUTF8(attr, "\uFFFD"), c.lastMsg))
}

// fixString truncates huge strings and replaces invalid UTF-8.
func (c *spanCtx) fixString(attr, s string) string {
	if len(s) > maxStringBytes {
		c.report(attr, "string of %d bytes truncated to %d bytes", len(s), maxStringBytes)
		s = textutil.Truncate(s, maxStringBytes)
	}
	if !utf8.ValidString(s) {
		c.report(attr, "invalid UTF-8 replaced with U+FFFD")
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// decodeJSON decodes a JSON text within the limits; ok is false (and a
// problem reported) when it is too large, too deep or malformed.
func (c *spanCtx) decodeJSON(attr, s string) (any, bool) {
	if c.cache != nil && len(s) >= 64 && len(s) <= maxJSONBytes {
		if c.cache.json == nil {
			c.cache.json = make(map[string]jsonResult)
		}
		if r, ok := c.cache.json[s]; ok {
			if r.err != "" {
				c.report(attr, "%s", r.err)
				return nil, false
			}
			return r.v, true
		}
		n := len(c.problems)
		v, ok := c.decodeJSONUncached(attr, s)
		r := jsonResult{v: v}
		if !ok && len(c.problems) > n {
			r.err = c.lastMsg
		}
		c.cache.json[s] = r
		return v, ok
	}
	return c.decodeJSONUncached(attr, s)
}

// decodeJSONSel is decodeJSON for a reader that reads only the parts of s
// that sel selects (decodeSelect): the same problems, and a value that
// reads the same for it, with the rest checked but not built. The value is
// not kept in the trace's cache, which holds whole values; one found there
// is used.
func (c *spanCtx) decodeJSONSel(attr, s string, sel jsonSel) (any, bool) {
	if c.cache != nil {
		if r, ok := c.cache.json[s]; ok {
			if r.err != "" {
				c.report(attr, "%s", r.err)
				return nil, false
			}
			return r.v, true
		}
	}
	if len(s) <= maxJSONBytes {
		if v, ok := decodeSelect(s, sel); ok {
			return v, true
		}
	}
	return c.decodeJSON(attr, s) // refused: decodeJSON says why
}

func (c *spanCtx) decodeJSONUncached(attr, s string) (any, bool) {
	if len(s) > maxJSONBytes {
		c.report(attr, "JSON value of %d bytes exceeds the %d-byte limit; skipped", len(s), maxJSONBytes)
		return nil, false
	}
	if v, ok := decodeFast(s); ok {
		return v, true
	}
	if jsonTooDeep(s, maxDepth) {
		c.report(attr, "JSON value nested deeper than %d levels; skipped", maxDepth)
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		c.report(attr, "malformed JSON: %v", err)
		return nil, false
	}
	return v, true
}

// converter turns a pdata value into plain Go values (as encoding/json
// decodes them: map[string]any, []any, string, float64, bool, nil).
type converter struct {
	c        *spanCtx
	attr     string
	budget   int
	reported bool
}

func (c *spanCtx) convert(attr string, v pcommon.Value) any {
	cv := converter{c: c, attr: attr, budget: maxElements}
	return cv.conv(v, 0)
}

func (cv *converter) conv(v pcommon.Value, depth int) any {
	if depth > maxDepth {
		if !cv.reported {
			cv.reported = true
			cv.c.report(cv.attr, "value nested deeper than %d levels; deeper parts skipped", maxDepth)
		}
		return nil
	}
	cv.budget--
	if cv.budget < 0 {
		if !cv.reported {
			cv.reported = true
			cv.c.report(cv.attr, "value has more than %d elements; the rest skipped", maxElements)
		}
		return nil
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return cv.c.fixString(cv.attr, v.Str())
	case pcommon.ValueTypeInt:
		return float64(v.Int())
	case pcommon.ValueTypeDouble:
		return v.Double()
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes().AsRaw())
	case pcommon.ValueTypeMap:
		m := v.Map()
		out := make(map[string]any, m.Len())
		m.Range(func(k string, x pcommon.Value) bool {
			if !utf8.ValidString(k) {
				k = strings.ToValidUTF8(k, "\uFFFD")
			}
			out[k] = cv.conv(x, depth+1)
			return cv.budget >= 0
		})
		return out
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		n := s.Len()
		if n > cv.budget {
			n = cv.budget + 1
		}
		out := make([]any, 0, n)
		for i := 0; i < s.Len() && cv.budget >= 0; i++ {
			out = append(out, cv.conv(s.At(i), depth+1))
		}
		return out
	}
	return nil
}

// attrValue reads attribute key of m as a plain Go value, decoding JSON
// strings. ok is false when the attribute is absent or unreadable.
func (c *spanCtx) attrValue(m pcommon.Map, key string) (any, bool) {
	v, ok := m.Get(key)
	if !ok {
		return nil, false
	}
	return c.valueOf(key, v)
}

func (c *spanCtx) valueOf(key string, v pcommon.Value) (any, bool) {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return nil, false
	case pcommon.ValueTypeStr:
		s := v.Str()
		if looksJSON(s) {
			return c.decodeJSON(key, s)
		}
		return c.fixString(key, s), true
	}
	return c.convert(key, v), true
}

// attrString reads a string attribute; other scalar types are reported and
// formatted.
func (c *spanCtx) attrString(m pcommon.Map, key string) string {
	v, ok := m.Get(key)
	if !ok {
		return ""
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return c.fixString(key, v.Str())
	case pcommon.ValueTypeEmpty:
		return ""
	case pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
		c.report(key, "want a string, got %s", strings.ToLower(v.Type().String()))
		return v.AsString()
	}
	c.report(key, "want a string, got %s", strings.ToLower(v.Type().String()))
	return textOf(c.convert(key, v))
}

// firstString returns the first non-empty string attribute among keys.
func (c *spanCtx) firstString(m pcommon.Map, keys ...string) string {
	for _, k := range keys {
		if s := c.attrString(m, k); s != "" {
			return s
		}
	}
	return ""
}

// attrCount reads a count attribute (int, double or numeric string). A
// value that is not a count — negative, NaN, infinite, beyond int64 — is
// bad input: it is reported as a problem and returned as bad (ok true, so a
// later key of the same count is not read in its place), never clamped
// into a count that could pass a limit.
func (c *spanCtx) attrCount(m pcommon.Map, key string) (n int64, ok bool, bad string) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false, ""
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if n = v.Int(); n < 0 {
			return c.badCount(key, fmt.Sprintf("%d is negative", n))
		}
		return n, true, ""
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(v.Str())
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n < 0 {
				return c.badCount(key, fmt.Sprintf("%d is negative", n))
			}
			return n, true, ""
		}
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			c.report(key, "want an integer, got str")
			return 0, false, ""
		}
	default:
		c.report(key, "want an integer, got %s", strings.ToLower(v.Type().String()))
		return 0, false, ""
	}
	switch {
	case f != f:
		return c.badCount(key, "NaN is not a count")
	case math.IsInf(f, 0):
		return c.badCount(key, fmt.Sprintf("%v is not a count", f))
	case f < 0:
		return c.badCount(key, fmt.Sprintf("%v is negative", f))
	case f >= math.MaxInt64: // float64(MaxInt64) rounds up to 2^63
		return c.badCount(key, fmt.Sprintf("%v overflows a 64-bit count", f))
	}
	return int64(f), true, ""
}

func (c *spanCtx) badCount(key, why string) (int64, bool, string) {
	c.report(key, "not a valid count: %s", why)
	return 0, true, key + ": " + why
}

// textOf renders a plain Go value as text: strings as they are, anything
// else as compact JSON.
func textOf(v any) string {
	switch v.(type) {
	case nil, string, float64, bool:
		return str(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// str returns v when it is a string, a number or bool formatted; "" else.
func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	return ""
}

// field returns the first present, non-nil value among keys of m.
func field(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return nil
}

// strField returns the first non-empty string value among keys of m.
func strField(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s := str(m[k]); s != "" {
			return s
		}
	}
	return ""
}

// path follows keys through nested maps.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// unflatten inserts a dotted key (relative to a prefix) into tree.
func unflatten(tree map[string]any, rest string, val any) bool {
	node := tree
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return false
		}
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			if existing, ok := node[rest].(map[string]any); ok {
				existing[""] = val
			} else {
				node[rest] = val
			}
			return true
		}
		seg := rest[:dot]
		rest = rest[dot+1:]
		child, ok := node[seg].(map[string]any)
		if !ok {
			child = make(map[string]any, 4)
			if old, present := node[seg]; present {
				child[""] = old
			}
			node[seg] = child
		}
		node = child
	}
}

// indexed returns the values under numeric keys of a map, in index order.
func indexed(v any) []any {
	m, ok := v.(map[string]any)
	if !ok {
		if s, ok := v.([]any); ok {
			return s
		}
		return nil
	}
	if len(m) == 0 {
		return nil
	}
	// usually the keys are 0…len(m)-1: placed directly
	out := make([]any, len(m))
	dense := true
	for k, x := range m {
		i, ok := smallIndex(k)
		if !ok || i >= len(out) || out[i] != nil || x == nil {
			dense = false
			break
		}
		out[i] = x
	}
	if dense {
		return out
	}
	type kv struct {
		i int
		v any
	}
	items := make([]kv, 0, len(m))
	for k, x := range m {
		if len(k) == 0 || len(k) > 6 {
			continue
		}
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i > maxIndex {
			continue
		}
		items = append(items, kv{i, x})
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
	out = out[:len(items)]
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

// smallIndex parses a flattened index of up to 4 decimal digits without a
// sign or leading zero ("0" itself aside), as the dense path of indexed
// wants; other keys take the general path.
func smallIndex(k string) (int, bool) {
	if len(k) == 0 || len(k) > 4 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// asObject returns v as a JSON object, decoding a JSON string; ok is false
// when v is neither.
func (c *spanCtx) asObject(attr string, v any) (map[string]any, bool) {
	return asDecoded[map[string]any](c, attr, v)
}

// asArray returns v as an array, decoding a JSON string.
func (c *spanCtx) asArray(attr string, v any) ([]any, bool) {
	return asDecoded[[]any](c, attr, v)
}

// asDecoded returns v as a T, decoding a JSON string; ok is false when v
// is neither.
func asDecoded[T map[string]any | []any](c *spanCtx, attr string, v any) (T, bool) {
	switch t := v.(type) {
	case T:
		return t, true
	case string:
		if !looksJSON(t) {
			return nil, false
		}
		d, ok := c.decodeJSON(attr, t)
		if !ok {
			return nil, false
		}
		x, ok := d.(T)
		return x, ok
	}
	return nil, false
}

// typeName names the JSON type of v for problem messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(s), 64) }
