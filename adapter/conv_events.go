package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// spanEvents reads the older OTel GenAI forms: span events
// gen_ai.content.prompt / gen_ai.content.completion, and the events
// gen_ai.system.message, gen_ai.user.message, gen_ai.choice … as span events
// or joined log records. A side is read from them only when nothing before
// had it.
type spanEvents struct {
	noKeys
	noKindKeys
	noFromSpan
	noToolDefs
	noDocuments
}

func (spanEvents) conversation(d *spanData, _ pcommon.Map, _ flatTrees, in, out bool) {
	in, out = in && len(d.input) == 0, out && len(d.output) == 0
	if in || out {
		evIn, evOut := d.readEvents(in, out)
		if in {
			d.input = evIn
		}
		if out {
			d.output = evOut
		}
	}
}

// langfuse: Langfuse's session id.
type langfuse struct {
	noKindKeys
	noFromSpan
	noConversation
	noToolDefs
	noDocuments
}

func (langfuse) fields() (keys, fallback fieldTable) {
	keys = fieldTable{
		fieldConversationID: keysOf("langfuse.session.id"),
	}
	return keys, fallback
}

// eventNames of the older OTel GenAI forms.
func eventRole(name string) string {
	switch name {
	case eventSystemMessage:
		return "system"
	case eventUserMessage:
		return "user"
	case eventAssistantMessage:
		return "assistant"
	case eventToolMessage:
		return "tool"
	}
	return ""
}

// readEvents reads the older OTel forms carried as span events: the input
// side when wantIn, the output side when wantOut.
func (d *spanData) readEvents(wantIn, wantOut bool) (in, out []Message) {
	c := &d.c
	type choice struct {
		index int
		msgs  []Message
	}
	var choices []choice
	for _, ev := range d.events() {
		name, attrs := ev.name, ev.attrs
		if !strings.HasPrefix(name, genAIPrefix) {
			continue
		}
		switch name {
		case genAIContentPrompt, eventSystemMessage, eventUserMessage, eventAssistantMessage, eventToolMessage:
			if !wantIn {
				continue
			}
		case genAIContentCompletion, eventChoice:
			if !wantOut {
				continue
			}
		}
		switch name {
		case genAIContentPrompt:
			if v, ok := c.attrValue(attrs, genAIPrompt); ok {
				in = append(in, c.parseMessages(genAIPrompt, v, "user")...)
			}
		case genAIContentCompletion:
			if v, ok := c.attrValue(attrs, genAICompletion); ok {
				out = append(out, c.parseMessages(genAICompletion, v, "assistant")...)
			}
		case eventSystemMessage, eventUserMessage, eventAssistantMessage, eventToolMessage:
			body := d.eventBody(ev, name)
			in = append(in, c.parseMessage(name, body, eventRole(name))...)
		case eventChoice:
			body := d.eventBody(ev, name)
			idx := len(choices)
			switch n := body["index"].(type) {
			case float64:
				idx = int(n)
			case int64:
				idx = int(n)
			}
			if _, ok := body["message"]; !ok {
				body = map[string]any{"message": map[string]any{"role": "assistant", "content": body["content"], "tool_calls": body["tool_calls"]}}
			}
			choices = append(choices, choice{idx, c.parseMessage(name, body, "assistant")})
		}
	}
	// stable order by index
	for i := 1; i < len(choices); i++ {
		for j := i; j > 0 && choices[j].index < choices[j-1].index; j-- {
			choices[j], choices[j-1] = choices[j-1], choices[j]
		}
	}
	for _, ch := range choices {
		out = append(out, ch.msgs...)
	}
	return in, out
}

// eventBody is an event's body: a log record's Body, else a `body`
// attribute, else rebuilt from the event's attributes.
func (d *spanData) eventBody(ev eventView, name string) map[string]any {
	c := &d.c
	attrs := ev.attrs
	v, ok := ev.body, ev.body.Type() != pcommon.ValueTypeEmpty
	if !ok {
		v, ok = attrs.Get("body")
	}
	if ok {
		if b, ok := c.valueOf(name+".body", v); ok {
			if m, ok := b.(map[string]any); ok {
				return m
			}
			if s, ok := b.(string); ok {
				return map[string]any{"content": s}
			}
		}
	}
	body := make(map[string]any, attrs.Len())
	attrs.Range(func(k string, v pcommon.Value) bool {
		switch k {
		case genAISystem, genAIProviderName, "event.name":
			return true
		case "tool_calls", "message":
			if x, ok := c.valueOf(name+"."+k, v); ok {
				body[k] = x
			}
		default:
			body[k] = c.convert(name+"."+k, v)
		}
		return true
	})
	return body
}
