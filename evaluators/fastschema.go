package evaluators

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// fastSchema is a tool's parameter schema of the shape almost every tool
// declares: type, properties, required, additionalProperties (a boolean),
// items and enum of strings, integer bounds (minimum, maximum and their
// exclusive forms, minLength, maxLength, minItems, maxItems), with
// annotations (description, title, …). It
// answers "valid" without the general validator, which allocates a dozen
// times per call; "not sure" (a value it does not know, or one that may be
// invalid) goes to the general validator, whose answer and message count.
// So it only ever has to be right when it says valid.
type fastSchema struct {
	types    uint8 // allowed JSON types (typeNull…); 0: any
	props    map[string]*fastSchema
	required []string
	noExtra  bool // additionalProperties: false
	items    *fastSchema
	enum     []string // string values allowed, when hasEnum
	hasEnum  bool
	// bounds: the numbers' (integers, so float64 compares them exactly
	// as the general validator's rationals do) and the lengths' (-1: none)
	bounds             [numBounds]float64
	hasBound           uint8 // bit b: bounds[b] is set
	minLen, maxLen     int
	minItems, maxItems int
}

// the number bounds, in fastSchema.bounds
const (
	boundMin = iota
	boundExMin
	boundMax
	boundExMax
	numBounds
)

var boundKeys = map[string]int{"minimum": boundMin, "exclusiveMinimum": boundExMin, "maximum": boundMax, "exclusiveMaximum": boundExMax}

// maxExactInt is the largest integer up to which every integer is a float64.
const maxExactInt = 1 << 53

// intOf is v as an integer in [lo, hi] when its JSON text is one (digits
// only: 1.0 or 1e2 are left to the general validator).
func intOf(v any, lo, hi int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < lo || i > hi {
		return 0, false
	}
	return i, true
}

const (
	typeNull uint8 = 1 << iota
	typeBool
	typeString
	typeNumber
	typeInteger
	typeArray
	typeObject
)

var schemaTypes = map[string]uint8{
	"null": typeNull, "boolean": typeBool, "string": typeString, "number": typeNumber,
	"integer": typeInteger, "array": typeArray, "object": typeObject,
}

// annotations do not change what is valid. (format is not one: the
// general validator asserts it.)
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// newFastSchema reads the schema text; nil when it uses anything else.
func newFastSchema(text []byte) *fastSchema {
	var m map[string]any
	// numbers as their text: a bound is taken only when it is exactly an
	// integer
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return nil
	}
	return fastOf(m, 0)
}

func fastOf(m map[string]any, depth int) *fastSchema {
	if depth > 16 {
		return nil
	}
	f := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for k, v := range m {
		if b, ok := boundKeys[k]; ok {
			i, ok := intOf(v, -maxExactInt, maxExactInt)
			if !ok {
				return nil
			}
			f.bounds[b], f.hasBound = float64(i), f.hasBound|1<<b
			continue
		}
		switch k {
		case "minLength", "maxLength", "minItems", "maxItems":
			i, ok := intOf(v, 0, math.MaxInt32)
			if !ok {
				return nil
			}
			switch k {
			case "minLength":
				f.minLen = int(i)
			case "maxLength":
				f.maxLen = int(i)
			case "minItems":
				f.minItems = int(i)
			default:
				f.maxItems = int(i)
			}
		case "type":
			switch t := v.(type) {
			case string:
				if f.types = schemaTypes[t]; f.types == 0 {
					return nil
				}
			case []any:
				for _, e := range t {
					s, _ := e.(string)
					if schemaTypes[s] == 0 {
						return nil
					}
					f.types |= schemaTypes[s]
				}
				if f.types == 0 {
					return nil
				}
			default:
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			f.props = make(map[string]*fastSchema, len(props))
			for name, sub := range props {
				sm, ok := sub.(map[string]any)
				if !ok {
					return nil
				}
				if f.props[name] = fastOf(sm, depth+1); f.props[name] == nil {
					return nil
				}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.noExtra = !b
		case "items":
			sm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if f.items = fastOf(sm, depth+1); f.items == nil {
				return nil
			}
		case "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			f.hasEnum = true
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				f.enum = append(f.enum, s)
			}
		default:
			if !annotations[k] {
				return nil
			}
		}
	}
	return f
}

// valid reports whether v (decoded JSON: nil, bool, string, float64,
// []any, map[string]any) is surely valid; false means "ask the general
// validator".
func (f *fastSchema) valid(v any) bool {
	var t uint8
	switch x := v.(type) {
	case nil:
		t = typeNull
	case bool:
		t = typeBool
	case string:
		t = typeString
		if f.hasEnum && !slices.Contains(f.enum, x) {
			return false
		}
		if f.minLen >= 0 || f.maxLen >= 0 {
			// in code points, as the general validator counts
			n := utf8.RuneCountInString(x)
			if n < f.minLen || f.maxLen >= 0 && n > f.maxLen {
				return false
			}
		}
	case float64:
		t = typeNumber
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			t |= typeInteger
		}
		if f.hasBound != 0 && !f.inBounds(x) {
			return false
		}
	case []any:
		t = typeArray
		if len(x) < f.minItems || f.maxItems >= 0 && len(x) > f.maxItems {
			return false
		}
		if f.items != nil {
			for _, e := range x {
				if !f.items.valid(e) {
					return false
				}
			}
		}
	case map[string]any:
		t = typeObject
		for _, r := range f.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			sub, ok := f.props[k]
			switch {
			case ok:
				if !sub.valid(e) {
					return false
				}
			case f.noExtra:
				return false
			}
		}
	default:
		return false
	}
	if f.hasEnum && t != typeString {
		return false
	}
	// "number" admits integers; an integral number is an "integer".
	return f.types == 0 || f.types&t != 0
}

// inBounds reports whether x is surely within the number bounds (a value
// that is not finite is left to the general validator).
func (f *fastSchema) inBounds(x float64) bool {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return false
	}
	b := &f.bounds
	has := func(k int) bool { return f.hasBound&(1<<k) != 0 }
	return !(has(boundMin) && x < b[boundMin] || has(boundExMin) && x <= b[boundExMin] ||
		has(boundMax) && x > b[boundMax] || has(boundExMax) && x >= b[boundExMax])
}
