package adapter

import "go.opentelemetry.io/collector/pdata/pcommon"

// readToolDefinitions reads the tools offered to the model, from each
// convention in turn.
func (d *spanData) readToolDefinitions(attrs pcommon.Map, trees flatTrees) {
	for _, cv := range conventions {
		cv.toolDefinitions(d, attrs, trees)
	}
}

// addToolDef reads one definition v into the span's; raw is the JSON text v
// was decoded from ("" when structured).
func (d *spanData) addToolDef(attr string, v any, raw string) {
	c := &d.c
	if s, ok := v.(string); ok {
		raw = s
	}
	m, ok := c.asObject(attr, v)
	if !ok {
		c.report(attr, "tool definition: want an object, got %s", typeName(v))
		return
	}
	if fn, ok := m["function"].(map[string]any); ok { // OpenAI wrapper
		m = fn
		raw = rawOf(raw, "function")
	}
	def := ToolDefinition{Name: str(m["name"]), Description: str(m["description"])}
	key, schema := fieldKey(m, "parameters", "inputSchema", "input_schema", "parametersJsonSchema", "arguments")
	if schema != nil {
		raw = rawOf(raw, key)
		if s, ok := schema.(string); ok {
			raw = s
		}
		if obj, ok := c.asObject(attr, schema); ok {
			if inner, ok := obj["jsonSchema"].(map[string]any); ok {
				obj = inner
				raw = rawOf(raw, "jsonSchema")
			}
			def.Parameters, def.RawParameters = obj, raw
		} else {
			c.report(attr, "tool %q parameters: want a JSON schema object, got %s", def.Name, typeName(schema))
		}
	}
	if def.Name == "" {
		c.report(attr, "tool definition without a name")
		return
	}
	d.toolDefs = mergeDef(d.toolDefs, def)
}

// toolDefList reads the list of tool definitions in attribute attr (an
// array, or one definition; structured or JSON text).
func (d *spanData) toolDefList(attrs pcommon.Map, attr string) {
	c := &d.c
	v, ok := attrs.Get(attr)
	if !ok {
		return
	}
	raw := ""
	if v.Type() == pcommon.ValueTypeStr {
		raw = v.Str() // decoded as it is
	}
	// A text cached was read without problems (decoding included), so
	// a hit needs no decoding at all.
	cacheable := c.cache != nil && len(raw) >= 64
	if cacheable {
		if defs, ok := c.cache.defs[raw]; ok {
			d.mergeDefs(defs)
			return
		}
		if defs, ok := sharedDefs.get(raw); ok {
			c.cache.putDefs(raw, defs)
			d.mergeDefs(defs)
			return
		}
	}
	val, ok := c.valueOf(attr, v)
	if !ok {
		return
	}
	// the list's definitions are merged among themselves, then into
	// the span's (the same as one by one)
	own := d.toolDefs
	d.toolDefs = nil
	n := len(c.problems)
	switch t := val.(type) {
	case []any:
		var elems []string
		if raw != "" {
			if elems = rawElems(raw); len(elems) != len(t) {
				elems = nil
			}
		}
		for i, it := range t {
			r := ""
			if elems != nil {
				r = elems[i]
			}
			d.addToolDef(attr, it, r)
		}
	case map[string]any:
		d.addToolDef(attr, t, raw)
	default:
		c.report(attr, "want an array of tool definitions, got %s", typeName(val))
	}
	defs := d.toolDefs
	d.toolDefs = own
	d.mergeDefs(defs)
	if cacheable && len(c.problems) == n {
		c.cache.putDefs(raw, defs)
		sharedDefs.put(raw, defs)
	}
}

// rawOf is rawField of raw JSON text, "" when raw is.
func rawOf(raw, key string) string {
	if raw == "" {
		return ""
	}
	return rawField(raw, key)
}

// fieldKey is field, also returning the key of the value found.
func fieldKey(m map[string]any, keys ...string) (string, any) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return k, v
		}
	}
	return "", nil
}

// mergeDefs merges copies of defs into the span's tool definitions.
func (d *spanData) mergeDefs(defs []ToolDefinition) {
	if len(d.toolDefs) == 0 {
		d.toolDefs = append([]ToolDefinition(nil), defs...)
		return
	}
	for _, def := range defs {
		d.toolDefs = mergeDef(d.toolDefs, def)
	}
}

// mergeDef adds def unless a tool of that name is known; a known one gets
// its missing description or schema filled.
func mergeDef(defs []ToolDefinition, def ToolDefinition) []ToolDefinition {
	for i := range defs {
		if defs[i].Name == def.Name {
			if defs[i].Description == "" {
				defs[i].Description = def.Description
			}
			if defs[i].Parameters == nil {
				defs[i].Parameters, defs[i].RawParameters = def.Parameters, def.RawParameters
			}
			return defs
		}
	}
	return append(defs, def)
}
