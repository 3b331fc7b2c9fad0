package adapter

import (
	"cmp"
	"slices"
	"strings"
)

// Reading the usual flattened attributes straight into messages and tool
// definitions, without the nested maps of flatSet.tree: each reader takes
// only keys of the exact shapes the instrumentation libraries write, with
// string values, each key once and every index plain (smallIndex); for
// anything else it returns ok false, having read and reported nothing, and
// the caller reads the tree, which gives the same for those shapes.

// cutIndex splits "N.rest" into N (smallIndex) and rest.
func cutIndex(k string) (int, string, bool) {
	dot := strings.IndexByte(k, '.')
	if dot < 0 {
		return 0, "", false
	}
	n, ok := smallIndex(k[:dot])
	return n, k[dot+1:], ok
}

// setOnce stores the string value of kv into *dst, once; ok is false for
// a value that is not a string, or a second one.
func setOnce(dst *string, set *bool, kv *flatKV) bool {
	if !kv.isStr || *set {
		return false
	}
	*dst, *set = kv.str, true
	return true
}

// flatCall is tool call idx of message msg.
type flatCall struct {
	msg, idx                int
	id, name, args          string
	hasID, hasName, hasArgs bool
}

// flatMsg is one message read from flattened keys.
type flatMsg struct {
	idx                                int
	role, content, toolCallID          string
	hasRole, hasContent, hasToolCallID bool
}

// flatMessagesFast is flatMessages of the tree of kvs: OpenInference's
// N.message.{role,content,tool_call_id,tool_calls.M.tool_call.{id,
// function.name,function.arguments}} (oi) or OpenLLMetry's N.{role,content,
// tool_call_id,finish_reason,tool_calls.M.{id,name,arguments}}.
func (c *spanCtx) flatMessagesFast(attr string, kvs []flatKV, defaultRole string, oi bool) ([]Message, bool) {
	var msgBuf [8]flatMsg
	var callBuf [8]flatCall
	msgs, calls := msgBuf[:0], callBuf[:0]
	for i := range kvs {
		kv := &kvs[i]
		n, rest, ok := cutIndex(kv.key)
		if !ok {
			return nil, false
		}
		if oi {
			if rest, ok = strings.CutPrefix(rest, "message."); !ok {
				return nil, false
			}
		}
		i := slices.IndexFunc(msgs, func(m flatMsg) bool { return m.idx == n })
		if i < 0 {
			i = len(msgs)
			msgs = append(msgs, flatMsg{idx: n})
		}
		m := &msgs[i]
		switch rest {
		case "role":
			ok = setOnce(&m.role, &m.hasRole, kv)
		case "content":
			ok = setOnce(&m.content, &m.hasContent, kv)
		case "tool_call_id":
			ok = setOnce(&m.toolCallID, &m.hasToolCallID, kv)
		case "finish_reason": // not read
		default:
			calls, ok = addCall(calls, n, rest, kv, oi)
		}
		if !ok {
			return nil, false
		}
	}
	slices.SortFunc(msgs, func(a, b flatMsg) int { return cmp.Compare(a.idx, b.idx) })
	slices.SortFunc(calls, func(a, b flatCall) int {
		if c := cmp.Compare(a.msg, b.msg); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	out := make([]Message, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		msg := Message{Role: defaultRole}
		if m.role != "" {
			msg.Role = normRole(m.role)
		}
		if m.hasContent {
			var texts [1]string
			msg.Content = strings.Join(c.stringContent(attr, m.content, msg.Role, texts[:0]), "\n")
		}
		k := 0 // the message's calls: calls[:k]
		for k < len(calls) && calls[k].msg == m.idx {
			k++
		}
		if k > 0 {
			msg.ToolCalls = make([]ToolCall, k)
			for j, fc := range calls[:k] {
				msg.ToolCalls[j] = ToolCall{ID: fc.id, Name: fc.name}
				if fc.hasArgs {
					c.setArgumentsText(attr, &msg.ToolCalls[j], fc.args)
				}
			}
			calls = calls[k:]
		}
		if msg.Role == "tool" {
			msg.ToolCallID = m.toolCallID
		}
		out = append(out, msg)
	}
	return out, true
}

// addCall reads the tool-call key rest (tool_calls.M.…) of message msg
// into calls.
func addCall(calls []flatCall, msg int, rest string, kv *flatKV, oi bool) ([]flatCall, bool) {
	rest, ok := strings.CutPrefix(rest, "tool_calls.")
	if !ok {
		return calls, false
	}
	n, rest, ok := cutIndex(rest)
	if !ok {
		return calls, false
	}
	if oi {
		if rest, ok = strings.CutPrefix(rest, "tool_call."); !ok {
			return calls, false
		}
		if r, fn := strings.CutPrefix(rest, "function."); fn && r != "id" {
			rest = r
		} else if rest != "id" {
			return calls, false
		}
	}
	i := slices.IndexFunc(calls, func(c flatCall) bool { return c.msg == msg && c.idx == n })
	if i < 0 {
		i = len(calls)
		calls = append(calls, flatCall{msg: msg, idx: n})
	}
	fc := &calls[i]
	switch rest {
	case "id":
		return calls, setOnce(&fc.id, &fc.hasID, kv)
	case "name":
		return calls, setOnce(&fc.name, &fc.hasName, kv)
	case "arguments":
		return calls, setOnce(&fc.args, &fc.hasArgs, kv)
	}
	return calls, false
}

// stringContent appends the texts of a flattened message's string content
// ct (role: the message's role) to texts.
func (c *spanCtx) stringContent(attr, ct, role string, texts []string) []string {
	if ct == "null" && role == "assistant" {
		return texts
	}
	if strings.HasPrefix(ct, "[{") {
		if arr, ok := decodeQuiet(ct).([]any); ok && allTyped(arr) {
			for _, p := range arr {
				if t, _, _ := c.parsePart(attr, p); t != "" {
					texts = append(texts, t)
				}
			}
			return texts
		}
	}
	if ct != "" {
		texts = append(texts, ct)
	}
	return texts
}

// oiToolSchemasFlat calls fn (unless nil) with the value of each
// llm.tools.N.tool.json_schema of kvs, in order; ok is false, fn not
// called, unless every key has that shape, N increasing, with a value.
// Called with nil first, it checks without reading.
func oiToolSchemasFlat(kvs []flatKV, fn func(kv *flatKV)) bool {
	last := -1
	for i := range kvs {
		kv := &kvs[i]
		n, rest, ok := cutIndex(kv.key)
		if !ok || n <= last || rest != "tool.json_schema" || (!kv.isStr && kv.val == nil) {
			return false
		}
		last = n
	}
	if fn != nil {
		for i := range kvs {
			fn(&kvs[i])
		}
	}
	return true
}

// olFunc is one function of OpenLLMetry's llm.request.functions.N.
type olFunc struct {
	name, desc, args          string
	hasName, hasDesc, hasArgs bool
}

// tree is f as its flattened tree holds it.
func (f *olFunc) tree() map[string]any {
	m := make(map[string]any, 3)
	if f.hasName {
		m["name"] = f.name
	}
	if f.hasDesc {
		m["description"] = f.desc
	}
	m["arguments"] = f.args
	return m
}

// olFunctionsFlat calls fn (unless nil) with each function of kvs in
// order; ok is false, fn not called when the keys are not all
// N.{name,description,arguments} with string values, each once, the keys
// of a function together, N increasing, and every function with arguments
// (olFunctionKey's shape). Called with nil first, it checks without
// reading.
func olFunctionsFlat(kvs []flatKV, fn func(olFunc)) bool {
	var f olFunc
	last := -1
	flush := func() bool {
		if last < 0 {
			return true
		}
		if !f.hasArgs {
			return false
		}
		if fn != nil {
			fn(f)
		}
		return true
	}
	for i := range kvs {
		kv := &kvs[i]
		n, rest, ok := cutIndex(kv.key)
		if !ok || n < last {
			return false
		}
		if n > last {
			if !flush() {
				return false
			}
			f, last = olFunc{}, n
		}
		switch rest {
		case "name":
			ok = setOnce(&f.name, &f.hasName, kv)
		case "description":
			ok = setOnce(&f.desc, &f.hasDesc, kv)
		case "arguments":
			ok = setOnce(&f.args, &f.hasArgs, kv)
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return flush()
}
