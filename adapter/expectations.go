package adapter

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
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

// expectPresent says which eval.* attributes a span carries (set and not
// empty), whether or not they could be read: a present attribute that
// could not be read still hides the root span's.
type expectPresent struct {
	toolCalls, output, documents, tasks, context, constraints, goal bool
}

// expectSet is what one span's eval.* attributes say, read once.
type expectSet struct {
	e        Expectations
	present  expectPresent
	problems []string
}

func (t *trace) expectOf(i int) *expectSet {
	d := &t.spans[i]
	if d.expect != nil {
		return d.expect
	}
	attrs := d.ref.Span.Attributes()
	if !hasEvalKey(attrs) {
		d.expect = &noExpectations // most spans: one pass, nothing to read
		return d.expect
	}
	es := &expectSet{}
	d.expect = es
	sc := &d.c
	n0 := len(sc.problems)
	e := &es.e
	get := func(present *bool, key string) (pcommon.Value, bool) {
		v, ok := attrs.Get(key)
		if !ok || v.Type() == pcommon.ValueTypeEmpty {
			return v, false
		}
		*present = true
		return v, true
	}
	p := &es.present
	if v, ok := get(&p.toolCalls, AttrExpectedToolCalls); ok {
		e.ToolCalls, e.HasToolCalls = sc.expectedCalls(v)
	}
	if v, ok := get(&p.output, AttrExpectedOutput); ok {
		e.Output, e.HasOutput = sc.expectedOutput(v), true
	}
	if v, ok := get(&p.documents, AttrExpectedDocuments); ok {
		e.Documents, e.HasDocuments = sc.expectedDocuments(v)
	}
	if v, ok := get(&p.tasks, AttrTasks); ok {
		e.Tasks, e.HasTasks = sc.stringList(AttrTasks, v)
	}
	if v, ok := get(&p.context, AttrContext); ok {
		e.Context, e.HasContext = sc.stringList(AttrContext, v)
	}
	if v, ok := get(&p.constraints, AttrConstraints); ok {
		e.Constraints = sc.scalarText(AttrConstraints, v)
	}
	if v, ok := get(&p.goal, AttrConversationGoal); ok {
		e.ConversationGoal = sc.scalarText(AttrConversationGoal, v)
	}
	es.problems = sc.problems[n0:len(sc.problems):len(sc.problems)]
	return es
}

// noExpectations is the expectSet of a span without eval.* attributes
// (shared: read only).
var noExpectations expectSet

// hasEvalKey says whether attrs has a key with the prefix every
// expectation key has.
func hasEvalKey(attrs pcommon.Map) bool {
	const prefix = "eval."
	for k := range attrs.All() {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// expectedCalls reads eval.expected.tool_calls; a blank string is an
// empty list (no calls expected).
func (c *spanCtx) expectedCalls(v pcommon.Value) ([]ExpectedCall, bool) {
	const k = AttrExpectedToolCalls
	val, ok := c.valueOf(k, v)
	if !ok {
		return nil, false
	}
	if s, isStr := val.(string); isStr && strings.TrimSpace(s) == "" {
		val = []any{}
	}
	calls, err := ParseExpectedCalls(val)
	if err != nil {
		c.report(k, "%v", err)
		return nil, false
	}
	return calls, true
}

// expectedOutput reads eval.expected.output: a string that holds JSON
// other than a string is the decoded value, any other string is itself.
func (c *spanCtx) expectedOutput(v pcommon.Value) any {
	const k = AttrExpectedOutput
	if v.Type() != pcommon.ValueTypeStr {
		return c.convert(k, v)
	}
	s := c.fixString(k, v.Str())
	if x := decodeQuiet(s); x != nil {
		if _, isStr := x.(string); !isStr {
			return x
		}
	}
	return s
}

// expectedDocuments reads eval.expected.documents, a JSON array.
func (c *spanCtx) expectedDocuments(v pcommon.Value) ([]any, bool) {
	const k = AttrExpectedDocuments
	val, ok := c.valueOf(k, v)
	if !ok {
		return nil, false
	}
	arr, isArr := val.([]any)
	if !isArr {
		c.report(k, "want a JSON array, got %s", typeName(val))
		return nil, false
	}
	return arr, true
}

// expectations reads eval.* from the anchor span, else the trace's root
// span, attribute by attribute.
func (t *trace) expectations(c *Case, anchor int) {
	own := t.expectOf(anchor)
	c.Expected = own.e
	c.Problems = appendUnique(c.Problems, own.problems)
	if t.root < 0 || t.root == anchor {
		return
	}
	root := t.expectOf(t.root)
	e, r := &c.Expected, &root.e
	mine, theirs := own.present, root.present
	used := false
	if !mine.toolCalls && theirs.toolCalls {
		e.ToolCalls, e.HasToolCalls, used = r.ToolCalls, r.HasToolCalls, true
	}
	if !mine.output && theirs.output {
		e.Output, e.HasOutput, used = r.Output, r.HasOutput, true
	}
	if !mine.documents && theirs.documents {
		e.Documents, e.HasDocuments, used = r.Documents, r.HasDocuments, true
	}
	if !mine.tasks && theirs.tasks {
		e.Tasks, e.HasTasks, used = r.Tasks, r.HasTasks, true
	}
	if !mine.context && theirs.context {
		e.Context, e.HasContext, used = r.Context, r.HasContext, true
	}
	if !mine.constraints && theirs.constraints {
		e.Constraints, used = r.Constraints, true
	}
	if !mine.goal && theirs.goal {
		e.ConversationGoal, used = r.ConversationGoal, true
	}
	if used {
		c.Problems = appendUnique(c.Problems, root.problems)
	}
}
