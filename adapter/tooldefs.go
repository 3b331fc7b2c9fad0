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
	d.toolDefs = mergeDefShared(d.toolDefs, &d.defsShared, def)
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
	d.readDefsCached(raw, func() {
		val, ok := c.valueOf(attr, v)
		if !ok {
			return
		}
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
	})
}

// readDefsCached merges into the span's tool definitions those that read
// adds (with addToolDef) from the JSON text raw ("" when the value is not
// text): the definitions read are merged among themselves, then into the
// span's (the same as one by one), and kept by their text, in the trace's
// cache and in sharedDefs, when read reported no problem. A text cached
// was read without problems (decoding included), so a hit needs no
// decoding at all.
func (d *spanData) readDefsCached(raw string, read func()) {
	d.readDefsKeyed(raw, nil, read)
}

// readDefsKeyed is readDefsCached keyed by raw, or, when key is not nil,
// by the text of key (made a string only to be cached).
func (d *spanData) readDefsKeyed(raw string, key []byte, read func()) {
	c := &d.c
	cacheable := c.cache != nil && len(raw)+len(key) >= 64
	if cacheable {
		if defs, ok := c.cache.lookupDefs(raw, key); ok {
			d.mergeDefs(defs)
			return
		}
		if defs, ok := sharedDefs.lookup(raw, key); ok {
			if key != nil {
				raw = string(key)
			}
			c.cache.putDefs(raw, defs)
			d.mergeDefs(defs)
			return
		}
		if key != nil {
			raw = string(key)
		}
	}
	own, ownShared := d.toolDefs, d.defsShared
	d.toolDefs, d.defsShared = nil, false
	n := len(c.problems)
	read()
	defs := d.toolDefs
	d.toolDefs, d.defsShared = own, ownShared
	if cacheable && len(c.problems) == n {
		// full capacity: appending to a copy never writes into the array
		defs = defs[:len(defs):len(defs)]
		c.cache.putDefs(raw, defs)
		sharedDefs.put(raw, defs)
	}
	d.mergeDefs(defs)
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

// mergeDefs merges defs into the span's tool definitions. defs, cached
// and read only, are shared until a merge would change them.
func (d *spanData) mergeDefs(defs []ToolDefinition) {
	d.toolDefs = mergeDefList(d.toolDefs, &d.defsShared, defs)
}

// mergeDefList merges list into defs (shared says defs is read only; the
// result may be list itself, then shared too). Merging a list into itself
// changes nothing.
func mergeDefList(defs []ToolDefinition, shared *bool, list []ToolDefinition) []ToolDefinition {
	switch {
	case len(list) == 0:
		return defs
	case len(defs) == 0:
		*shared = true
		return list[:len(list):len(list)]
	case len(defs) == len(list) && &defs[0] == &list[0]:
		return defs
	}
	for _, def := range list {
		defs = mergeDefShared(defs, shared, def)
	}
	return defs
}

// mergeDefShared is mergeDef on defs that may be shared (read only): they
// are copied first when the merge changes them.
func mergeDefShared(defs []ToolDefinition, shared *bool, def ToolDefinition) []ToolDefinition {
	if *shared {
		if !mergeChanges(defs, def) {
			return defs
		}
		defs = append(make([]ToolDefinition, 0, len(defs)+1), defs...)
		*shared = false
	}
	return mergeDef(defs, def)
}

// mergeChanges says whether mergeDef(defs, def) changes defs.
func mergeChanges(defs []ToolDefinition, def ToolDefinition) bool {
	for i := range defs {
		if defs[i].Name == def.Name {
			return defs[i].Description == "" && def.Description != "" ||
				defs[i].Parameters == nil && (def.Parameters != nil || def.RawParameters != defs[i].RawParameters)
		}
	}
	return true
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
