package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenInference (Arize Phoenix) attributes: llm.*, input.value,
// output.value, tool.*, tool_call.*, retrieval.*, session.id.
// OpenLLMetry's own llm.* keys are in conv_openllmetry.go.
// Each key is spelled here once; the readers name it by constant.
const (
	oiAgentName                 = "agent.name"
	oiInputValue                = "input.value"
	oiLLMPrefix                 = "llm."
	oiLLMInputMessages          = "llm.input_messages"
	oiLLMInputMessagesPrefix    = "llm.input_messages."
	oiLLMModelName              = "llm.model_name"
	oiLLMOutputMessages         = "llm.output_messages"
	oiLLMOutputMessagesPrefix   = "llm.output_messages."
	oiLLMProvider               = "llm.provider"
	oiLLMSystem                 = "llm.system"
	oiLLMTokenCountCompletion   = "llm.token_count.completion"
	oiLLMTokenCountPrompt       = "llm.token_count.prompt"
	oiLLMTokenCountTotal        = "llm.token_count.total"
	oiLLMToolsPrefix            = "llm.tools."
	oiLLMToolsToolJSONSchema    = "llm.tools.tool.json_schema"
	oiSpanKind                  = "openinference.span.kind"
	oiOutputValue               = "output.value"
	oiRetrievalPrefix           = "retrieval."
	oiRetrievalDocuments        = "retrieval.documents"
	oiRetrievalDocumentsPrefix  = "retrieval.documents."
	oiSessionID                 = "session.id"
	oiToolDescription           = "tool.description"
	oiToolID                    = "tool.id"
	oiToolName                  = "tool.name"
	oiToolParameters            = "tool.parameters"
	oiToolCallFunctionArguments = "tool_call.function.arguments"
	oiToolCallFunctionName      = "tool_call.function.name"
	oiToolCallID                = "tool_call.id"
)

// openInference reads OpenInference's span attributes: flattened
// llm.input_messages.N…, llm.tools.N…, retrieval.documents.N…, and the
// generic input.value / output.value.
type openInference struct{}

func (openInference) fields() (keys, fallback fieldTable) {
	keys = fieldTable{
		fieldModel:           keysOf(oiLLMModelName),
		fieldProvider:        keysOf(oiLLMProvider, oiLLMSystem),
		fieldConversationID:  keysOf(oiSessionID),
		fieldAgentName:       keysOf(oiAgentName),
		fieldInputTokens:     keysOf(oiLLMTokenCountPrompt),
		fieldOutputTokens:    keysOf(oiLLMTokenCountCompletion),
		fieldTotalTokens:     keysOf(oiLLMTokenCountTotal),
		fieldOwnInput:        keysOf(oiInputValue),
		fieldOwnOutput:       keysOf(oiOutputValue),
		fieldToolName:        keysOf(oiToolName),
		fieldToolID:          keysOf(oiToolCallID),
		fieldToolArgs:        keysOf(oiToolCallFunctionArguments),
		fieldToolDescription: keysOf(oiToolDescription),
		fieldToolParameters:  keysOf(oiToolParameters),
	}
	fallback = fieldTable{
		fieldToolName:   keysOf(oiToolCallFunctionName),
		fieldToolID:     keysOf(oiToolID),
		fieldToolArgs:   keysOf(oiInputValue), // input.value is any span's input: after the others
		fieldToolResult: []key{{name: oiOutputValue, opt: optLangChain}},
	}
	return keys, fallback
}

// fromSpan: LangChain's provider (ls_provider) of an LLM span; the agent's
// name as the span's name (openinference-core's traceAgent writes no
// agent.name).
func (openInference) fromSpan(d *spanData, attrs pcommon.Map, f attrField) string {
	switch f {
	case fieldProvider:
		return d.lcProvider(attrs)
	case fieldAgentName:
		if has(attrs, oiSpanKind) {
			return d.ref.Span.Name()
		}
	}
	return ""
}

func (openInference) conversation(d *spanData, attrs pcommon.Map, trees flatTrees, in, out bool) {
	d.flatConversation(trees, in, out, flatOIInput, oiLLMInputMessages, flatOIOutput, oiLLMOutputMessages)
	if d.kind == kindLLM && (trees.has(flatOIInput) || trees.has(flatOIOutput)) {
		var p parts
		if in {
			p |= partInput
		}
		if out {
			p |= partOutput
		}
		d.readLangChainIDs(attrs, p)
	}
}

func (openInference) toolDefinitions(d *spanData, _ pcommon.Map, trees flatTrees) {
	if !trees.has(flatOITools) {
		return
	}
	if oiToolSchemasFlat(trees.kvs[flatOITools], nil) { // the usual: no tree
		oiToolSchemasFlat(trees.kvs[flatOITools], func(kv *flatKV) {
			if !kv.isStr {
				d.oiToolDef(kv.val)
				return
			}
			s := kv.str // oiToolDef's, boxed only when read
			d.readDefsCached(s, func() { d.addToolDef(oiLLMToolsToolJSONSchema, s, "") })
		})
		return
	}
	d.oiToolDefsTree(trees.tree(flatOITools))
}

// oiToolDefsTree reads the definitions of the tree of llm.tools.
func (d *spanData) oiToolDefsTree(tree map[string]any) {
	for _, it := range indexed(tree) {
		if js := path(it, "tool", "json_schema"); js != nil {
			d.oiToolDef(js)
		}
	}
}

// oiToolDef reads the definition of one llm.tools.N.tool.json_schema: one
// definition per attribute; as JSON text (the usual), read once per text
// (tooldefs.go).
func (d *spanData) oiToolDef(js any) {
	raw, _ := js.(string)
	d.readDefsCached(raw, func() { d.addToolDef(oiLLMToolsToolJSONSchema, js, "") })
}

func (openInference) documents(d *spanData, _ pcommon.Map, trees flatTrees) {
	for _, it := range indexed(trees.tree(flatOIDocs)) {
		d.addDocument(oiRetrievalDocuments, it)
	}
}

// readRawIO reads OpenInference's raw request/response of an LLM span as a
// last resort, once both sides of the conversation are read.
func (d *spanData) readRawIO(attrs pcommon.Map) {
	if d.kind != kindLLM || len(d.input) != 0 || len(d.output) != 0 {
		return
	}
	c := &d.c
	if v, ok := c.attrValue(attrs, oiInputValue); ok {
		if _, isStr := v.(string); !isStr {
			d.input = c.parseMessagesQuiet([]any{v})
		}
	}
	if v, ok := c.attrValue(attrs, oiOutputValue); ok {
		if _, isStr := v.(string); !isStr {
			d.output = c.parseMessagesQuiet([]any{v})
		} else if s := v.(string); s != "" {
			d.output = []Message{{Role: "assistant", Content: s}}
		}
	}
}

func (openInference) kindKeys() []kindKey {
	return []kindKey{{oiSpanKind, func(s string) spanKind {
		switch {
		case strings.EqualFold(s, "LLM"):
			return kindLLM
		case strings.EqualFold(s, "AGENT"):
			return kindAgent
		case strings.EqualFold(s, "TOOL"):
			return kindTool
		case strings.EqualFold(s, "RETRIEVER"):
			return kindRetrieval
		case strings.EqualFold(s, "CHAIN"):
			return kindChain
		}
		return kindOther
	}}}
}
