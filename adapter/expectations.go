package adapter

import (
	"encoding/json"
	"fmt"
)

// ParseExpectedCalls reads an expected tool-call list: a JSON string or an
// already-decoded value holding an array of `{"name": …, "arguments": {…}}`
// objects or of plain names. It is shared by the span attribute
// `eval.expected.tool_calls` and the evaluators' `expected:` option, so both
// mean the same thing.
func ParseExpectedCalls(v any) ([]ExpectedCall, error) {
	if s, ok := v.(string); ok {
		var decoded any
		if err := json.Unmarshal([]byte(s), &decoded); err != nil {
			return nil, fmt.Errorf("expected tool calls: not JSON: %w", err)
		}
		v = decoded
	}
	items, ok := v.([]any)
	if !ok {
		if v == nil {
			return []ExpectedCall{}, nil
		}
		return nil, fmt.Errorf("expected tool calls: want an array, got %T", v)
	}
	out := make([]ExpectedCall, 0, len(items))
	for i, it := range items {
		switch t := it.(type) {
		case string:
			out = append(out, ExpectedCall{Name: t})
		case map[string]any:
			name, _ := t["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("expected tool calls[%d]: `name` is required", i)
			}
			call := ExpectedCall{Name: name}
			if raw, present := t["arguments"]; present && raw != nil {
				args, err := argumentsObject(raw)
				if err != nil {
					return nil, fmt.Errorf("expected tool calls[%d] (%s): %w", i, name, err)
				}
				call.Arguments, call.HasArguments = args, true
			}
			out = append(out, call)
		default:
			return nil, fmt.Errorf("expected tool calls[%d]: want a name or an object, got %T", i, it)
		}
	}
	return out, nil
}

// argumentsObject accepts a decoded JSON object or a string holding one.
func argumentsObject(v any) (map[string]any, error) {
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(t), &m); err != nil {
			return nil, fmt.Errorf("arguments: not a JSON object: %w", err)
		}
		if m == nil {
			m = map[string]any{}
		}
		return m, nil
	default:
		return nil, fmt.Errorf("arguments: want an object, got %T", v)
	}
}
