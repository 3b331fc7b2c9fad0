package adapter

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenLLMetry (Traceloop) attributes: traceloop.*, its llm.* keys and
// the indexed gen_ai.prompt.N / gen_ai.completion.N of its older releases.
// Each key is spelled here once; the readers name it by constant.
const (
	olGenAICompletionPrefix     = "gen_ai.completion."
	olGenAIPromptPrefix         = "gen_ai.prompt."
	olLLMRequestFunctions       = "llm.request.functions"
	olLLMRequestFunctionsPrefix = "llm.request.functions."
	olLLMRequestType            = "llm.request.type"
	olLLMUsageTotalTokens       = "llm.usage.total_tokens"
	olAssociationChatID         = "traceloop.association.properties.chat_id"
	olAssociationConversationID = "traceloop.association.properties.conversation_id"
	olAssociationSessionID      = "traceloop.association.properties.session_id"
	olEntityInput               = "traceloop.entity.input"
	olEntityName                = "traceloop.entity.name"
	olEntityOutput              = "traceloop.entity.output"
	olSpanKind                  = "traceloop.span.kind"
)

// openLLMetry reads OpenLLMetry's span attributes: traceloop.*, the indexed
// gen_ai.prompt.N… / gen_ai.completion.N… and llm.request.functions.N….
type openLLMetry struct {
	noDocuments
}

func (openLLMetry) fields() (keys, fallback fieldTable) {
	keys = fieldTable{
		fieldConversationID:   keysOf(olAssociationSessionID, olAssociationConversationID, olAssociationChatID), // Traceloop's docs use all three
		fieldAgentNameOfAgent: keysOf(olEntityName),
		fieldTotalTokens:      keysOf(olLLMUsageTotalTokens),
		fieldOwnInput:         keysOf(olEntityInput),
		fieldOwnOutput:        keysOf(olEntityOutput),
		fieldToolArgs:         []key{{name: olEntityInput, opt: optKwargs}},
		fieldToolResult:       []key{{name: olEntityOutput, opt: optJSONString}},
	}
	return keys, fallback
}

// fromSpan: a tool span's name is its entity name.
func (openLLMetry) fromSpan(d *spanData, attrs pcommon.Map, f attrField) string {
	if f == fieldToolName && strAttr(attrs, olSpanKind) == "tool" {
		return d.c.attrString(attrs, olEntityName)
	}
	return ""
}

func (openLLMetry) conversation(d *spanData, _ pcommon.Map, trees flatTrees, in, out bool) {
	d.flatConversation(trees, in, out, flatOLPrompt, genAIPrompt, flatOLCompletion, genAICompletion)
}

func (openLLMetry) toolDefinitions(d *spanData, _ pcommon.Map, trees flatTrees) {
	if !trees.has(flatOLFunctions) {
		return
	}
	if olFunctionsFlat(trees.kvs[flatOLFunctions], nil) { // the usual: no tree
		olFunctionsFlat(trees.kvs[flatOLFunctions], func(f olFunc) {
			d.readDefsKeyed("", d.c.olKeyTo(f.name, f.desc, f.args), func() { d.addToolDef(olLLMRequestFunctions, f.tree(), "") })
		})
		return
	}
	d.olFunctionsTree(trees.tree(flatOLFunctions))
}

// olFunctionsTree reads the definitions of the tree of llm.request.functions.
func (d *spanData) olFunctionsTree(tree map[string]any) {
	for _, it := range indexed(tree) {
		if m, ok := it.(map[string]any); ok {
			if key, ok := olFunctionKey(m); ok {
				d.readDefsCached(key, func() { d.addToolDef(olLLMRequestFunctions, m, "") })
			} else {
				d.addToolDef(olLLMRequestFunctions, m, "")
			}
		}
	}
}

// olFunctionKey is the cache key (readDefsCached) of a function of
// llm.request.functions.N made of strings only, name, description and
// arguments (its JSON schema as text), the way OpenLLMetry writes them: the
// three joined by NUL bytes, which no JSON text holds (the other keys of
// that cache). ok is false for any other shape, read uncached.
func olFunctionKey(m map[string]any) (string, bool) {
	name, ok1 := m["name"].(string)
	desc, ok2 := m["description"].(string)
	args, ok3 := m["arguments"].(string)
	n := 0
	for _, ok := range [...]bool{ok1, ok2, ok3} {
		if ok {
			n++
		}
	}
	if n != len(m) || !ok3 {
		return "", false
	}
	return olKey(name, desc, args), true
}

// olKeyTo is olKey written into the trace's buffer (valid until the next
// call), or a new one without a trace.
func (c *spanCtx) olKeyTo(name, desc, args string) []byte {
	var b []byte
	if c.cache != nil {
		b = c.cache.keyBuf[:0]
	}
	b = append(append(append(append(append(append(b, 0), name...), 0), desc...), 0), args...)
	if c.cache != nil && cap(b) <= maxPooledKeyBuf {
		c.cache.keyBuf = b
	}
	return b
}

// maxPooledKeyBuf is the largest olKeyTo buffer a trace keeps.
const maxPooledKeyBuf = 64 << 10

// olKey is the cache key of a function of name, description desc and
// arguments args (olFunctionKey).
func olKey(name, desc, args string) string {
	return "\x00" + name + "\x00" + desc + "\x00" + args
}

func (openLLMetry) kindKeys() []kindKey {
	return []kindKey{
		{olLLMRequestType, func(s string) spanKind {
			switch s {
			case "chat", "completion":
				return kindLLM
			}
			return kindOther
		}},
		{olSpanKind, func(s string) spanKind {
			switch s {
			case "agent", "workflow":
				return kindAgent
			case "tool":
				return kindTool
			}
			return kindOther
		}},
	}
}
