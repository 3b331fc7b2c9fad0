package evaluators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// schemaCache holds compiled tool schemas keyed by their canonical JSON
// bytes (encoding/json sorts map keys) and the strict flag, so a schema seen
// on every span is compiled once. It is bounded: when full, the oldest
// entry is dropped. Safe for concurrent use.
type schemaCache struct {
	mu  sync.Mutex
	max int
	// m is keyed by canonical JSON; raw[0] and raw[1] by the raw text a
	// span carried, compiled as it is and strict (no key is built by
	// concatenation, so a lookup allocates nothing).
	m     map[string]*compiledSchema
	raw   [2]map[string]*compiledSchema
	order []schemaKey
}

// schemaKey names an entry: the map (kind) and its key.
type schemaKey struct {
	kind uint8
	text string
}

const (
	keyCanonical uint8 = iota
	keyRaw
	keyStrictRaw
)

func (sc *schemaCache) mapOf(kind uint8, create bool) map[string]*compiledSchema {
	if kind == keyCanonical {
		return sc.m
	}
	m := sc.raw[kind-keyRaw]
	if m == nil && create {
		m = make(map[string]*compiledSchema)
		sc.raw[kind-keyRaw] = m
	}
	return m
}

type compiledSchema struct {
	schema *jsonschema.Schema
	fast   *fastSchema // nil when the schema is not of that shape
	err    error       // the schema itself is invalid
}

// noSchema is a tool defined without parameters: any arguments do.
var noSchema = &compiledSchema{}

var toolSchemas = &schemaCache{max: 1024, m: map[string]*compiledSchema{}}

// get returns the compiled schema of params. raw, when not empty, is the
// schema's JSON text as the span carried it: it keys the cache without
// re-encoding params, the common case of a schema seen on every span.
func (sc *schemaCache) get(params map[string]any, raw string, strict bool) *compiledSchema {
	var key schemaKey
	var text []byte
	switch {
	case raw != "" && strict:
		key = schemaKey{keyStrictRaw, raw}
	case raw != "":
		key = schemaKey{keyRaw, raw}
	default:
		if strict {
			params = strictSchema(params)
		}
		b, err := json.Marshal(params)
		if err != nil {
			return &compiledSchema{err: err}
		}
		key, text = schemaKey{keyCanonical, string(b)}, b
	}
	sc.mu.Lock()
	if cs, ok := sc.mapOf(key.kind, false)[key.text]; ok {
		sc.mu.Unlock()
		return cs
	}
	sc.mu.Unlock()
	if text == nil {
		// A miss on a raw key: compile from the decoded schema (strict
		// needs it changed anyway).
		p := params
		if strict {
			p = strictSchema(params)
		}
		b, err := json.Marshal(p)
		if err != nil {
			return &compiledSchema{err: err}
		}
		text = b
	}
	cs := compileSchema(text)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	m := sc.mapOf(key.kind, true)
	if prev, ok := m[key.text]; ok {
		return prev
	}
	if len(sc.order) >= sc.max {
		old := sc.order[0]
		delete(sc.mapOf(old.kind, false), old.text)
		sc.order = sc.order[1:]
	}
	if key.kind != keyCanonical {
		key.text = strings.Clone(key.text) // not a view into a span's attribute
	}
	m[key.text] = cs
	sc.order = append(sc.order, key)
	return cs
}

func compileSchema(b []byte) *compiledSchema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	const url = "mem://tool-parameters.json"
	if err := c.AddResource(url, bytes.NewReader(b)); err != nil {
		return &compiledSchema{err: err}
	}
	s, err := c.Compile(url)
	if err != nil {
		return &compiledSchema{err: err}
	}
	return &compiledSchema{schema: s, fast: newFastSchema(b)}
}

// strictSchema is a copy of the schema that refuses parameters it does not
// declare (Dokimos' strict mode: only when the schema declares properties).
func strictSchema(params map[string]any) map[string]any {
	props, ok := params["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return params
	}
	cp := make(map[string]any, len(params)+1)
	for k, v := range params {
		cp[k] = v
	}
	cp["additionalProperties"] = false
	return cp
}

type validityOptions struct {
	Strict bool `mapstructure:"strict"`
	// Tools is a list of {name, description, parameters}, or a string
	// holding it as JSON; like the spans' definitions, an entry may be
	// wrapped as {type: function, function: {…}} and the schema may be
	// named input_schema / inputSchema or given as a JSON string.
	Tools any `mapstructure:"tools"`
}

type toolDef struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// parseToolsOption reads the `tools` option.
func parseToolsOption(v any) ([]toolDef, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok {
		x, err := parseJSON(s)
		if err != nil {
			return nil, fmt.Errorf("option `tools`: not a JSON list: %v", err)
		}
		v = x
	}
	list, ok := normalizeAny(v).([]any)
	if !ok {
		return nil, fmt.Errorf("option `tools`: want a list of {name, description, parameters}")
	}
	out := make([]toolDef, 0, len(list))
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("option `tools[%d]`: want {name, description, parameters}", i)
		}
		if fn, ok := m["function"].(map[string]any); ok {
			m = fn
		}
		var d toolDef
		d.Name, _ = m["name"].(string)
		d.Description, _ = m["description"].(string)
		for _, k := range []string{"parameters", "input_schema", "inputSchema"} {
			p, ok := m[k]
			if !ok || p == nil {
				continue
			}
			if ps, ok := p.(string); ok {
				x, err := parseJSON(ps)
				if err != nil {
					return nil, fmt.Errorf("option `tools[%d].%s`: not JSON: %v", i, k, err)
				}
				p = x
			}
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("option `tools[%d].%s`: want a JSON schema object", i, k)
			}
			d.Parameters = pm
			break
		}
		out = append(out, d)
	}
	return out, nil
}

type toolCallValidity struct {
	strict bool
	// configured definitions, compiled in New
	tools    map[string]*compiledSchema
	hasTools bool
	metricsOff
}

func newToolCallValidity(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o validityOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	v := &toolCallValidity{strict: o.Strict, metricsOff: metricsOff(deps.NoMetrics)}
	tools, err := parseToolsOption(o.Tools)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		v.hasTools = true
		v.tools = make(map[string]*compiledSchema, len(tools))
		for i, t := range tools {
			if t.Name == "" {
				return nil, fmt.Errorf("option `tools[%d].name` is required", i)
			}
			if _, dup := v.tools[t.Name]; dup {
				return nil, fmt.Errorf("option `tools[%d]`: tool %q is defined twice", i, t.Name)
			}
			cs := &compiledSchema{}
			if t.Parameters != nil {
				cs = toolSchemas.get(normalizeJSON(t.Parameters), "", o.Strict)
				if cs.err != nil {
					return nil, fmt.Errorf("option `tools[%d].parameters` (%s): invalid JSON schema: %v", i, t.Name, firstLine(cs.err.Error()))
				}
			}
			v.tools[t.Name] = cs
		}
	}
	return v, nil
}

// normalizeJSON turns config-decoded values into plain JSON values.
func normalizeJSON(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// canonicalOptions spells `tools` as the definitions it decodes to
// (spelledOptions), by name: a list or a JSON string, wrapped as functions
// or not, the schema under any of its names. Descriptions are left out:
// only names and schemas decide a verdict.
func (v *toolCallValidity) canonicalOptions(kept map[string]any) map[string]any {
	raw, ok := kept["tools"]
	if !ok {
		return kept
	}
	defs, err := parseToolsOption(raw)
	if err != nil {
		return kept
	}
	slices.SortFunc(defs, func(a, b toolDef) int { return strings.Compare(a.Name, b.Name) })
	tools := make([]any, len(defs))
	for i, d := range defs {
		m := map[string]any{"name": d.Name}
		if d.Parameters != nil {
			m["parameters"] = d.Parameters
		}
		tools[i] = m
	}
	return respelled(kept, []string{"tools"}, map[string]any{"tools": tools})
}

func (v *toolCallValidity) Evaluate(ctx context.Context, c *adapter.Case) Result {
	n := len(c.ToolCalls)
	if n == 0 {
		return Scored(1, "no tool calls to validate", map[string]float64{"valid": 0, "calls": 0})
	}
	lookup, ok := v.lookup(c)
	if !ok {
		return Skipped("no tool definitions: the spans carry none (gen_ai.tool.definitions) and the evaluator has no `tools` option")
	}
	valid := 0
	var problems []string
	var schemaTrouble []string
	for i, tc := range c.ToolCalls {
		// A schema can be costly to validate against: stop at the deadline.
		if i%64 == 63 && ctx.Err() != nil {
			return timedOut(ctx, fmt.Sprintf("validating call %d of %d against its schema", i+1, n))
		}
		cs, known := lookup.get(tc.Name)
		why := ""
		switch {
		case !known:
			why = "unknown tool"
		case tc.Arguments == nil && strings.TrimSpace(tc.RawArguments) != "" && !isJSONNull(tc.RawArguments):
			why = "arguments are not a JSON object: " + truncate(tc.RawArguments, 60)
		case cs.err != nil:
			schemaTrouble = append(schemaTrouble, tc.Name)
		case cs.fast != nil && cs.fast.valid(argsOrEmpty(tc.Arguments)):
		case cs.schema != nil:
			why = validateArgs(cs.schema, tc.Arguments)
		}
		if why == "" {
			valid++
			continue
		}
		if len(problems) < 4 {
			problems = append(problems, fmt.Sprintf("call #%d %s: %s", i+1, tc.Name, why))
		}
	}
	reason := strconv.Itoa(valid) + " of " + strconv.Itoa(n) + " tool calls valid against their schema"
	if len(problems) > 0 {
		reason += "; " + strings.Join(problems, "; ")
		if n-valid > len(problems) {
			reason += fmt.Sprintf("; and %d more", n-valid-len(problems))
		}
	}
	if len(schemaTrouble) > 0 {
		reason += "; not checked (the tool's schema does not compile): " + truncate(strings.Join(schemaTrouble, ", "), 200)
	}
	var m map[string]float64
	if !v.metricsOff {
		m = map[string]float64{"valid": float64(valid), "invalid": float64(n - valid), "calls": float64(n)}
	}
	return Scored(float64(valid)/float64(n), reason, m)
}

func isJSONNull(s string) bool { return strings.TrimSpace(s) == "null" }

// schemaLookup finds the schema of a tool by name: in the case's
// definitions (the first of a name counts; by a map when there are many),
// else in the `tools` option. A value, not a closure: it allocates nothing
// for the usual few definitions.
type schemaLookup struct {
	v      *toolCallValidity
	defs   []adapter.ToolDefinition
	byName map[string]*adapter.ToolDefinition
}

// lookup prefers the definitions on the spans, then the `tools` option;
// ok is false when there are none anywhere.
func (v *toolCallValidity) lookup(c *adapter.Case) (l schemaLookup, ok bool) {
	if len(c.ToolDefinitions) > 0 {
		l = schemaLookup{v: v, defs: c.ToolDefinitions}
		if len(c.ToolDefinitions) > 16 {
			l.byName = make(map[string]*adapter.ToolDefinition, len(c.ToolDefinitions))
			for i := range c.ToolDefinitions {
				d := &c.ToolDefinitions[i]
				if _, ok := l.byName[d.Name]; !ok {
					l.byName[d.Name] = d
				}
			}
		}
		return l, true
	}
	return schemaLookup{v: v}, v.hasTools
}

// find is the first definition named name.
func (l *schemaLookup) find(name string) (*adapter.ToolDefinition, bool) {
	if l.byName != nil {
		d, ok := l.byName[name]
		return d, ok
	}
	for i := range l.defs {
		if l.defs[i].Name == name {
			return &l.defs[i], true
		}
	}
	return nil, false
}

// get is the compiled schema of the tool name; false when it is unknown.
func (l *schemaLookup) get(name string) (*compiledSchema, bool) {
	if l.defs == nil {
		cs, ok := l.v.tools[name]
		return cs, ok
	}
	d, ok := l.find(name)
	if !ok {
		return nil, false
	}
	if d.Parameters == nil {
		return noSchema, true
	}
	return toolSchemas.get(d.Parameters, d.RawParameters, l.v.strict), true
}

// argsOrEmpty is what a call without arguments is validated as.
func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

func validateArgs(s *jsonschema.Schema, args map[string]any) string {
	args = argsOrEmpty(args)
	err := s.Validate(args)
	var typeErr jsonschema.InvalidJSONTypeError
	if errors.As(err, &typeErr) {
		err = s.Validate(normalizeJSON(args))
	}
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return firstLine(err.Error())
	}
	var leaves []string
	collectLeaves(ve, &leaves)
	if len(leaves) > 3 {
		leaves = append(leaves[:3], "…")
	}
	return strings.Join(leaves, ", ")
}

func collectLeaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := ve.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		*out = append(*out, fmt.Sprintf("at %s: %s", loc, ve.Message))
		return
	}
	for _, c := range ve.Causes {
		collectLeaves(c, out)
	}
}
