package evaluators

import (
	"encoding/json"
	"math"
	"slices"
)

// fastSchema is a tool's parameter schema of the shape almost every tool
// declares: type, properties, required, additionalProperties (a boolean),
// items and enum of strings, with annotations (description, title, …). It
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

// annotations do not change what is valid.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// newFastSchema reads the schema text; nil when it uses anything else.
func newFastSchema(text []byte) *fastSchema {
	var m map[string]any
	if json.Unmarshal(text, &m) != nil {
		return nil
	}
	return fastOf(m, 0)
}

func fastOf(m map[string]any, depth int) *fastSchema {
	if depth > 16 {
		return nil
	}
	f := &fastSchema{}
	for k, v := range m {
		switch k {
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
	case float64:
		t = typeNumber
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			t |= typeInteger
		}
	case []any:
		t = typeArray
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
