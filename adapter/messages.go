package adapter

import (
	"encoding/json"
	"strings"
)

// normRole maps role spellings onto system, user, assistant, tool.
func normRole(r string) string {
	switch strings.ToLower(strings.TrimSpace(r)) {
	case "model", "ai", "bot":
		return "assistant"
	case "human":
		return "user"
	case "function", "ipython":
		return "tool"
	case "developer":
		return "system"
	}
	return strings.ToLower(strings.TrimSpace(r))
}

// parseMessages reads a list of messages in any of the supported shapes
// (OTel parts, OpenAI chat, OpenAI choices, Vercel AI SDK, Anthropic
// content blocks).
func (c *spanCtx) parseMessages(attr string, v any, defaultRole string) []Message {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		if len(t) == 0 {
			return nil
		}
		out := make([]Message, 0, len(t))
		for i, it := range t {
			switch m := it.(type) {
			case map[string]any:
				out = append(out, c.parseMessage(attr, m, defaultRole)...)
			case string:
				if m != "" {
					out = append(out, Message{Role: defaultRole, Content: m})
				}
			default:
				c.report(attr, "message %d: want an object, got %s", i, typeName(it))
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		if msgs, ok := t["messages"]; ok {
			return c.parseMessages(attr, msgs, defaultRole)
		}
		if ch, ok := t["choices"]; ok {
			return c.parseMessages(attr, ch, "assistant")
		}
		return c.parseMessage(attr, t, defaultRole)
	case string:
		if t == "" {
			return nil
		}
		return []Message{{Role: defaultRole, Content: t}}
	}
	c.report(attr, "want an array of messages, got %s", typeName(v))
	return nil
}

// parseMessage reads one message object. Tool results found in parts are
// returned as separate tool messages after it.
func (c *spanCtx) parseMessage(attr string, m map[string]any, defaultRole string) []Message {
	// OpenAI choice: {index, finish_reason, message:{…}}
	if inner, ok := m["message"].(map[string]any); ok && m["role"] == nil {
		msgs := c.parseMessage(attr, inner, "assistant")
		if len(msgs) > 0 && len(msgs[0].ToolCalls) == 0 {
			if tc := m["tool_calls"]; tc != nil {
				msgs[0].ToolCalls = c.parseToolCalls(attr, tc)
			}
		}
		return msgs
	}
	if s, ok := m["message"].(string); ok && m["role"] == nil && looksJSON(s) {
		if inner, ok := c.asObject(attr, s); ok {
			return c.parseMessage(attr, inner, defaultRole)
		}
	}
	role := defaultRole
	if r := str(m["role"]); r != "" {
		role = normRole(r)
	}
	msg := Message{Role: role}
	var texts []string
	var results []Message
	addParts := func(parts []any) {
		for _, p := range parts {
			t, r, calls := c.parsePart(attr, p)
			if t != "" {
				texts = append(texts, t)
			}
			results = append(results, r...)
			msg.ToolCalls = append(msg.ToolCalls, calls...)
		}
	}
	if parts, ok := m["parts"]; ok && parts != nil {
		if arr, ok := c.asArray(attr, parts); ok {
			addParts(arr)
		} else if s, ok := parts.(string); ok {
			texts = append(texts, s)
		} else {
			c.report(attr, "message parts: want an array, got %s", typeName(parts))
		}
	}
	switch ct := m["content"].(type) {
	case nil:
	case string:
		if ct == "null" && role == "assistant" {
			break
		}
		if strings.HasPrefix(ct, "[{") {
			if arr, ok := decodeQuiet(ct).([]any); ok && allTyped(arr) {
				addParts(arr)
				break
			}
		}
		if ct != "" {
			texts = append(texts, ct)
		}
	case []any:
		addParts(ct)
	case map[string]any:
		addParts([]any{ct})
	default:
		c.report(attr, "message content: want a string or parts, got %s", typeName(ct))
		texts = append(texts, str(ct))
	}
	if tc := m["tool_calls"]; tc != nil {
		msg.ToolCalls = append(msg.ToolCalls, c.parseToolCalls(attr, tc)...)
	}
	if fc, ok := m["function_call"].(map[string]any); ok {
		msg.ToolCalls = append(msg.ToolCalls, c.parseToolCall(attr, fc))
	}
	msg.Content = strings.Join(texts, "\n")
	if role == "tool" {
		msg.ToolCallID = strField(m, "tool_call_id", "toolCallId", "id")
	}
	// A tool message whose only content was tool-result parts becomes those.
	if len(results) > 0 && msg.Content == "" && len(msg.ToolCalls) == 0 {
		return results
	}
	return append([]Message{msg}, results...)
}

// decodeQuiet decodes small JSON without reporting (used to sniff content
// that may or may not be JSON).
func decodeQuiet(s string) any {
	if len(s) > maxJSONBytes {
		return nil
	}
	if v, ok := decodeFast(s); ok {
		return v
	}
	if jsonTooDeep(s, maxDepth) {
		return nil
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return nil
	}
	return v
}

func allTyped(arr []any) bool {
	for _, it := range arr {
		m, ok := it.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["type"].(string); !ok {
			return false
		}
	}
	return len(arr) > 0
}

// parsePart reads one content part: text, a tool call or a tool result.
func (c *spanCtx) parsePart(attr string, p any) (text string, results []Message, calls []ToolCall) {
	m, ok := p.(map[string]any)
	if !ok {
		if s, ok := p.(string); ok {
			return s, nil, nil
		}
		c.report(attr, "message part: want an object, got %s", typeName(p))
		return "", nil, nil
	}
	switch str(m["type"]) {
	case "text", "input_text", "output_text", "":
		return strField(m, "content", "text"), nil, nil
	case "tool_call", "tool-call", "tool_use", "function_call":
		return "", nil, []ToolCall{c.parseToolCall(attr, m)}
	case "tool_call_response", "tool-result", "tool_result", "function_call_output":
		res := field(m, "response", "result", "output", "content")
		return "", []Message{{
			Role:       "tool",
			Content:    resultText(res),
			ToolCallID: strField(m, "call_id", "id", "toolCallId", "tool_call_id", "tool_use_id"),
		}}, nil
	}
	return "", nil, nil
}

// resultText renders a tool result: strings as they are, Vercel's
// {type, value} output unwrapped, anything else as compact JSON.
func resultText(v any) string {
	if m, ok := v.(map[string]any); ok && len(m) == 2 {
		if _, ok := m["type"].(string); ok {
			if val, ok := m["value"]; ok {
				return textOf(val)
			}
		}
	}
	if arr, ok := v.([]any); ok && allTyped(arr) {
		// content blocks [{type:text,text}]
		var parts []string
		for _, it := range arr {
			if s := strField(it.(map[string]any), "text", "content"); s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return textOf(v)
}

// parseToolCalls reads an array of tool calls (OpenAI, flat or Vercel).
func (c *spanCtx) parseToolCalls(attr string, v any) []ToolCall {
	arr, ok := c.asArray(attr, v)
	if !ok {
		if m, isMap := v.(map[string]any); isMap {
			arr = indexed(m)
			if len(arr) == 0 {
				arr = []any{m}
			}
		} else {
			if v != nil && v != "" {
				c.report(attr, "tool calls: want an array, got %s", typeName(v))
			}
			return nil
		}
	}
	out := make([]ToolCall, 0, len(arr))
	for _, it := range arr {
		m, ok := it.(map[string]any)
		if !ok {
			c.report(attr, "tool call: want an object, got %s", typeName(it))
			continue
		}
		out = append(out, c.parseToolCall(attr, m))
	}
	return out
}

// parseToolCall reads one requested tool call.
func (c *spanCtx) parseToolCall(attr string, m map[string]any) ToolCall {
	if tc, ok := m["tool_call"].(map[string]any); ok { // OpenInference flattened
		m = tc
	}
	call := ToolCall{
		// The Responses API (and its instrumentations) carry both an item
		// `id` (fc_…) and the `call_id` the tool's output answers: the
		// call_id is the call's id.
		ID:   strField(m, "call_id", "id", "toolCallId", "tool_call_id"),
		Name: strField(m, "name", "toolName"),
	}
	args := field(m, "arguments", "input", "args")
	if fn, ok := m["function"].(map[string]any); ok {
		if call.Name == "" {
			call.Name = str(fn["name"])
		}
		if args == nil {
			args = fn["arguments"]
		}
	}
	c.setArguments(attr, &call, args)
	return call
}

// setArguments fills Arguments and RawArguments from a JSON string or a
// structured value.
func (c *spanCtx) setArguments(attr string, call *ToolCall, v any) {
	switch t := v.(type) {
	case nil:
	case string:
		c.setArgumentsText(attr, call, t)
	case map[string]any:
		call.Arguments = t
		call.RawArguments = textOf(t)
	default:
		call.RawArguments = textOf(t)
		c.report(attr, "tool %q arguments: want a JSON object, got %s", call.Name, typeName(v))
	}
}

// setArgumentsText fills Arguments and RawArguments from a JSON string
// (apart from setArguments, so that a string attribute is not boxed).
func (c *spanCtx) setArgumentsText(attr string, call *ToolCall, t string) {
	call.RawArguments = t
	s := strings.TrimSpace(t)
	if s == "" || s == "null" {
		return
	}
	if !looksJSON(s) {
		c.report(attr, "tool %q arguments are not a JSON object", call.Name)
		return
	}
	d, ok := c.decodeJSON(attr, s)
	if !ok {
		return
	}
	switch dt := d.(type) {
	case map[string]any:
		call.Arguments = dt
	case string: // double-encoded
		if m, ok := c.asObject(attr, dt); ok {
			call.Arguments = m
		} else {
			c.report(attr, "tool %q arguments are not a JSON object", call.Name)
		}
	default:
		c.report(attr, "tool %q arguments: want a JSON object, got %s", call.Name, typeName(d))
	}
}

// lastUser is the content of the last user message with text.
func lastUser(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && msgs[i].Content != "" {
			return msgs[i].Content
		}
	}
	return ""
}

// finalAssistant is the content of the last assistant message with text.
func finalAssistant(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && msgs[i].Content != "" {
			return msgs[i].Content
		}
	}
	return ""
}

// requestedCalls are the tool calls of the assistant messages.
func requestedCalls(msgs []Message) []ToolCall {
	var out []ToolCall
	for _, m := range msgs {
		out = append(out, m.ToolCalls...)
	}
	return out
}

// systemText joins the content of system messages.
func systemText(msgs []Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == "system" && m.Content != "" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// plainText extracts the human text of an agent's own input or output
// value: a string, or a known field of a JSON object (prompt, input,
// messages, output, …). wantOutput selects which side.
func (c *spanCtx) plainText(attr string, v any, wantOutput bool, depth int) string {
	if depth > 4 {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case []any:
		msgs := c.parseMessagesQuiet(t)
		if wantOutput {
			return finalAssistant(msgs)
		}
		return lastUser(msgs)
	case map[string]any:
		var keys []string
		if wantOutput {
			keys = []string{"output", "content", "text", "result", "response", "answer", "final_output", "return_value"}
		} else {
			keys = []string{"prompt", "input", "query", "question", "message", "text", "content", "user_input"}
		}
		for _, k := range keys {
			if s, ok := t[k].(string); ok && s != "" {
				return s
			}
		}
		if msgs, ok := t["messages"].([]any); ok {
			if s := c.plainText(attr, msgs, wantOutput, depth+1); s != "" {
				return s
			}
		}
		if wantOutput {
			if ch, ok := t["choices"].([]any); ok {
				if s := finalAssistant(c.parseMessagesQuiet(ch)); s != "" {
					return s
				}
			}
			for _, k := range []string{"outputs", "output", "result", "response"} {
				if inner, ok := t[k].(map[string]any); ok {
					if s := c.plainText(attr, inner, true, depth+1); s != "" {
						return s
					}
				}
			}
			return ""
		}
		if args, ok := t["args"].([]any); ok {
			for _, a := range args {
				if s, ok := a.(string); ok && s != "" {
					return s
				}
			}
		}
		for _, k := range []string{"kwargs", "inputs", "input"} {
			if inner, ok := t[k].(map[string]any); ok {
				if s := c.plainText(attr, inner, false, depth+1); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

// parseMessagesQuiet parses messages discarding problems (used when
// sniffing free-form values).
func (c *spanCtx) parseMessagesQuiet(v []any) []Message {
	n := len(c.problems)
	msgs := c.parseMessages("", v, "user")
	c.problems = c.problems[:n]
	return msgs
}
