package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// LangChain JS with @arizeai/openinference-instrumentation-langchain: the
// flattened llm.*_messages carry no tool-call ids, which sit only in the
// serialized LangChain messages of input.value / output.value
// ({"lc":1,"type":"constructor","id":[…,"AIMessage"],"kwargs":{…}}); a TOOL
// span's output.value is a serialized ToolMessage whose kwargs hold the
// result (content), the call id and the status ("error" when the tool
// failed); the provider is only in the metadata JSON (ls_provider).

// lcObject returns the kwargs and class name of a serialized LangChain
// object.
func lcObject(v any) (kwargs map[string]any, class string, ok bool) {
	m, _ := v.(map[string]any)
	if m == nil || m["lc"] == nil {
		return nil, "", false
	}
	kwargs, _ = m["kwargs"].(map[string]any)
	if kwargs == nil {
		return nil, "", false
	}
	if id, _ := m["id"].([]any); len(id) > 0 {
		class, _ = id[len(id)-1].(string)
	}
	return kwargs, class, true
}

// lcCallIDs are the ids of the tool calls of a serialized AIMessage's
// kwargs, in order.
func lcCallIDs(kw map[string]any) []string {
	calls, _ := kw["tool_calls"].([]any)
	if len(calls) == 0 {
		if ak, _ := kw["additional_kwargs"].(map[string]any); ak != nil {
			calls, _ = ak["tool_calls"].([]any)
		}
	}
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		m, _ := c.(map[string]any)
		ids = append(ids, str(m["id"]))
	}
	return ids
}

// missingIDs reports whether a tool call or a tool message lacks its id.
func missingIDs(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == "" {
			return true
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" {
				return true
			}
		}
	}
	return false
}

// lcFillIDs fills missing tool-call ids of msgs from the serialized
// LangChain messages lc, matched by position (only when both lists have the
// same length, so a message is never paired with another one's ids).
func lcFillIDs(msgs []Message, lc []any) {
	if len(lc) != len(msgs) {
		return
	}
	for i := range msgs {
		kw, class, ok := lcObject(lc[i])
		if !ok {
			continue
		}
		m := &msgs[i]
		if m.Role == "tool" && m.ToolCallID == "" {
			m.ToolCallID = str(kw["tool_call_id"])
		}
		if len(m.ToolCalls) == 0 || (class != "AIMessage" && class != "AIMessageChunk") {
			continue
		}
		ids := lcCallIDs(kw)
		if len(ids) != len(m.ToolCalls) {
			continue
		}
		for k := range m.ToolCalls {
			if m.ToolCalls[k].ID == "" {
				m.ToolCalls[k].ID = ids[k]
			}
		}
	}
}

// readLangChainIDs recovers the tool-call ids an OpenInference LangChain
// LLM span left out of its flattened messages (the sides in p), from
// input.value ({"messages":[[…]]}) and output.value
// ({"generations":[[{"message":…}]]}).
func (d *spanData) readLangChainIDs(attrs pcommon.Map, p parts) {
	c := &d.c
	raw := func(key string, sel jsonSel) map[string]any {
		s := strAttr(attrs, key)
		if !strings.Contains(s, `"lc"`) {
			return nil
		}
		v, _ := c.decodeJSONSel(key, s, sel)
		m, _ := v.(map[string]any)
		return m
	}
	if p&partInput != 0 && missingIDs(d.input) {
		if m := raw(oiInputValue, lcMessagesSel); m != nil {
			var lc []any
			for _, batch := range asList(m["messages"]) {
				lc = append(lc, asList(batch)...)
			}
			lcFillIDs(d.input, lc)
		}
	}
	if p&partOutput != 0 && missingIDs(d.output) {
		if m := raw(oiOutputValue, lcGenerationsSel); m != nil {
			var lc []any
			for _, batch := range asList(m["generations"]) {
				for _, g := range asList(batch) {
					if gm, _ := g.(map[string]any); gm != nil {
						lc = append(lc, gm["message"])
					}
				}
			}
			lcFillIDs(d.output, lc)
		}
	}
}

// What readLangChainIDs reads of input.value and output.value (the rest of
// the serialized messages, their content, arguments and metadata, is not
// decoded), and lcProvider of metadata.
var (
	// lcMessageSel: what lcFillIDs reads of a serialized message
	lcMessageSel = jsonSel{"lc": nil, "id": nil, "kwargs": {
		"tool_call_id": nil, "tool_calls": {"id": nil}, "additional_kwargs": {"tool_calls": {"id": nil}}}}
	lcMessagesSel    = jsonSel{"messages": lcMessageSel}
	lcGenerationsSel = jsonSel{"generations": {"message": lcMessageSel}}
	lcProviderSel    = jsonSel{"ls_provider": nil}
)

// asList is v as a JSON array (nil when it is not one).
func asList(v any) []any {
	a, _ := v.([]any)
	return a
}

// lcToolMessage reads a TOOL span's output that is a serialized ToolMessage
// ({"output": {…}} or the message itself): its content is the result, its
// tool_call_id the call id, status "error" a failed call.
func lcToolMessage(v any, call *ToolCall) bool {
	if m, _ := v.(map[string]any); m != nil && m["lc"] == nil && len(m) == 1 {
		v = m["output"]
	}
	kw, class, ok := lcObject(v)
	if !ok || (class != "ToolMessage" && kw["tool_call_id"] == nil) {
		return false
	}
	switch ct := kw["content"].(type) {
	case string:
		call.Result = ct
	case nil:
		call.Result = ""
	default:
		call.Result = resultText(ct)
	}
	call.HasResult = true
	if call.ID == "" {
		call.ID = str(kw["tool_call_id"])
	}
	if str(kw["status"]) == "error" {
		call.Errored = true
		if call.ErrorMessage == "" {
			call.ErrorMessage = call.Result
		}
	}
	return true
}

// lcProvider is the ls_provider of an OpenInference metadata attribute.
func (d *spanData) lcProvider(attrs pcommon.Map) string {
	s := strAttr(attrs, "metadata")
	if !strings.Contains(s, `"ls_provider"`) {
		return ""
	}
	v, ok := d.c.decodeJSONSel("metadata", s, lcProviderSel)
	if !ok {
		return ""
	}
	m, _ := v.(map[string]any)
	return str(m["ls_provider"])
}
