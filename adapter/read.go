package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The readers: each reads one part of a span from the conventions, in
// conventions order.

func (d *spanData) readMeta(attrs pcommon.Map) {
	d.model = d.first(attrs, fieldModel)
	d.provider = d.first(attrs, fieldProvider)
	if d.provider == "" && d.kind == kindLLM {
		d.provider = d.derived(attrs, fieldProvider)
	}
	d.provider = normProvider(d.provider)
	d.responseID = d.first(attrs, fieldResponseID)
	d.conversation = d.first(attrs, fieldConversationID)
	d.agentName = d.first(attrs, fieldAgentName)
	if d.agentName == "" && d.kind == kindAgent {
		d.agentName = d.first(attrs, fieldAgentNameOfAgent)
		if d.agentName == "" {
			d.agentName = d.derived(attrs, fieldAgentName)
		}
	}
	d.readUsage(attrs)
}

func (d *spanData) readUsage(attrs pcommon.Map) {
	c := &d.c
	u := &d.usage
	kf := d.keyFilter(attrs)
	first := func(f attrField) (int64, bool) {
		for _, k := range fieldNames[f] {
			if !kf.mayHave(k) {
				continue
			}
			if n, ok, bad := c.attrCount(attrs, k); ok {
				if bad != "" && u.Invalid == "" {
					u.Invalid = bad
				}
				return n, true
			}
		}
		return 0, false
	}
	u.InputTokens, u.HasInputTokens = first(fieldInputTokens)
	u.OutputTokens, u.HasOutputTokens = first(fieldOutputTokens)
	u.TotalTokens, u.HasTotalTokens = first(fieldTotalTokens)
}

// readConversation reads the sides of the conversation in p (partInput:
// input messages and system instructions; partOutput: output messages),
// each side from the first convention that has it.
func (d *spanData) readConversation(attrs pcommon.Map, trees flatTrees, p parts) {
	in, out := p&partInput != 0, p&partOutput != 0
	for _, cv := range conventions {
		cv.conversation(d, attrs, trees, in, out)
	}
	if in && d.system == "" {
		d.system = systemText(d.input)
	}
}

// readOwnIO reads an agent span's own input and output text.
func (d *spanData) readOwnIO(attrs pcommon.Map) {
	c := &d.c
	for _, k := range fieldNames[fieldOwnInput] {
		if v, ok := c.attrValue(attrs, k); ok {
			if s := c.plainText(k, v, false, 0); s != "" {
				d.ownInput = s
				break
			}
		}
	}
	for _, k := range fieldNames[fieldOwnOutput] {
		if v, ok := c.attrValue(attrs, k); ok {
			if s := c.plainText(k, v, true, 0); s != "" {
				d.ownOutput = s
				break
			}
		}
	}
}

// readToolSpan reads the call a tool span made.
func (d *spanData) readToolSpan(attrs pcommon.Map) {
	c := &d.c
	span := d.ref.Span
	call := ToolCall{SpanID: span.SpanID(), Duration: d.duration()}
	call.Name = d.first(attrs, fieldToolName)
	if call.Name == "" {
		call.Name = d.derived(attrs, fieldToolName)
	}
	if call.Name == "" { // the span's name: "execute_tool <name>" (GenAI), "<name>.tool" (OpenLLMetry)
		name := span.Name()
		if n, ok := strings.CutPrefix(name, "execute_tool "); ok {
			name = n
		}
		call.Name = c.fixString("name", strings.TrimSuffix(name, ".tool"))
	}
	call.ID = d.first(attrs, fieldToolID)

	// arguments: the first key present
	kf := d.keyFilter(attrs)
	for _, k := range fieldKeys[fieldToolArgs] {
		if kf.mayHave(k.name) && has(attrs, k.name) {
			d.toolArgs(attrs, &call, k.name, k.opt&optKwargs != 0)
			break
		}
	}
	// result
	for _, k := range fieldKeys[fieldToolResult] {
		if !kf.mayHave(k.name) {
			continue
		}
		v, ok := attrs.Get(k.name)
		if !ok {
			continue
		}
		call.HasResult = true
		if v.Type() == pcommon.ValueTypeStr {
			s := v.Str()
			if k.opt&optLangChain != 0 && strings.Contains(s, `"lc"`) {
				if x, ok := c.decodeJSON(k.name, s); ok && lcToolMessage(x, &call) {
					call.Result = c.fixString(k.name, call.Result)
					break
				}
			}
			if k.opt&optJSONString != 0 && strings.HasPrefix(strings.TrimSpace(s), `"`) {
				if x, ok := c.decodeJSON(k.name, s); ok {
					if xs, ok := x.(string); ok {
						s = xs
					}
				}
			}
			call.Result = c.fixString(k.name, s)
		} else {
			call.Result = resultText(c.convert(k.name, v))
		}
		break
	}
	// errors
	if span.Status().Code() == ptrace.StatusCodeError {
		call.Errored = true
		call.ErrorMessage = c.fixString("status.message", span.Status().Message())
		if call.ErrorMessage == "" {
			call.ErrorMessage = c.attrString(attrs, "error.type")
		}
		if call.ErrorMessage == "" {
			evs := span.Events()
			for i := 0; i < evs.Len(); i++ {
				if evs.At(i).Name() == "exception" {
					ea := evs.At(i).Attributes()
					call.ErrorMessage = c.firstString(ea, "exception.message", "exception.type")
					break
				}
			}
		}
	}
	d.call = call
	// the tool span's own description and schema
	def := ToolDefinition{Name: call.Name, Description: d.first(attrs, fieldToolDescription)}
	for _, k := range fieldNames[fieldToolParameters] {
		if !kf.mayHave(k) {
			continue
		}
		v, ok := attrs.Get(k)
		if !ok {
			continue
		}
		if val, ok := c.valueOf(k, v); ok {
			if m, ok := val.(map[string]any); ok {
				def.Parameters = m
				if v.Type() == pcommon.ValueTypeStr {
					def.RawParameters = v.Str()
				}
			}
		}
		break
	}
	if def.Name != "" && (def.Description != "" || def.Parameters != nil) {
		d.toolDefs = []ToolDefinition{def}
	}
}

func has(m pcommon.Map, key string) bool {
	_, ok := m.Get(key)
	return ok
}

// toolArgs reads a tool span's arguments; kwargs unwraps OpenLLMetry's
// {"args":[…],"kwargs":{…}}.
func (d *spanData) toolArgs(attrs pcommon.Map, call *ToolCall, key string, kwargs bool) {
	c := &d.c
	v, _ := attrs.Get(key)
	if v.Type() == pcommon.ValueTypeStr {
		c.setArgumentsText(key, call, v.Str())
	} else {
		c.setArguments(key, call, c.convert(key, v))
	}
	// a LangChain ToolCall ({"name","args","id","type":"tool_call"}) as the
	// tool's input
	if a := call.Arguments; a != nil && a["type"] == "tool_call" {
		if args, ok := a["args"].(map[string]any); ok {
			if call.ID == "" {
				call.ID = str(a["id"])
			}
			call.Arguments, call.RawArguments = args, textOf(args)
		}
	}
	if kwargs && call.Arguments != nil {
		if kw, ok := call.Arguments["kwargs"].(map[string]any); ok {
			if _, hasArgs := call.Arguments["args"]; hasArgs || len(call.Arguments) == 1 {
				call.Arguments = kw
			}
		}
	}
}

// readDocuments reads a retrieval span's documents.
func (d *spanData) readDocuments(attrs pcommon.Map, trees flatTrees) {
	for _, cv := range conventions {
		cv.documents(d, attrs, trees)
	}
}

// addDocument reads one retrieved document.
func (d *spanData) addDocument(attr string, v any) {
	c := &d.c
	m, ok := c.asObject(attr, v)
	if !ok {
		if s, ok := v.(string); ok {
			d.docs = append(d.docs, Document{Content: s})
			return
		}
		c.report(attr, "document: want an object, got %s", typeName(v))
		return
	}
	if inner, ok := m["document"].(map[string]any); ok {
		m = inner
	}
	doc := Document{ID: strField(m, "id"), Content: strField(m, "content", "text", "page_content")}
	switch s := m["score"].(type) {
	case float64:
		doc.Score, doc.HasScore = s, true
	case string:
		if f, err := parseFloat(s); err == nil {
			doc.Score, doc.HasScore = f, true
		} else {
			c.report(attr, "document score: want a number, got %q", s)
		}
	case nil:
	default:
		c.report(attr, "document score: want a number, got %s", typeName(s))
	}
	if md := m["metadata"]; md != nil {
		if mm, ok := c.asObject(attr, md); ok {
			doc.Metadata = mm
		}
	}
	d.docs = append(d.docs, doc)
}
