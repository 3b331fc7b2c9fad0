package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// OpenTelemetry GenAI semantic conventions (gen_ai.*), current and the
// deprecated names instrumentations still send (gen_ai.prompt,
// gen_ai.completion, gen_ai.content.*, gen_ai.system, the
// prompt/completion token counts).
// Each key is spelled here once; the readers name it by constant.
const (
	genAIPrefix                = "gen_ai."
	genAIAgentName             = "gen_ai.agent.name"
	genAICompletion            = "gen_ai.completion"
	genAIContentCompletion     = "gen_ai.content.completion"
	genAIContentPrompt         = "gen_ai.content.prompt"
	genAIConversationID        = "gen_ai.conversation.id"
	genAIInputMessages         = "gen_ai.input.messages"
	genAIOperationName         = "gen_ai.operation.name"
	genAIOutputMessages        = "gen_ai.output.messages"
	genAIPrompt                = "gen_ai.prompt"
	genAIProviderName          = "gen_ai.provider.name"
	genAIRequestModel          = "gen_ai.request.model"
	genAIResponseID            = "gen_ai.response.id"
	genAIResponseModel         = "gen_ai.response.model"
	genAIRetrievalDocuments    = "gen_ai.retrieval.documents"
	genAISystem                = "gen_ai.system"
	genAISystemInstructions    = "gen_ai.system_instructions"
	genAIToolCallArguments     = "gen_ai.tool.call.arguments"
	genAIToolCallID            = "gen_ai.tool.call.id"
	genAIToolCallResult        = "gen_ai.tool.call.result"
	genAIToolDefinitions       = "gen_ai.tool.definitions"
	genAIToolDescription       = "gen_ai.tool.description"
	genAIToolName              = "gen_ai.tool.name"
	genAIUsageCompletionTokens = "gen_ai.usage.completion_tokens"
	genAIUsageInputTokens      = "gen_ai.usage.input_tokens"
	genAIUsageOutputTokens     = "gen_ai.usage.output_tokens"
	genAIUsagePromptTokens     = "gen_ai.usage.prompt_tokens"
	genAIUsageTotalTokens      = "gen_ai.usage.total_tokens"
)

// genAI reads the OTel GenAI semantic conventions' span attributes.
type genAI struct{}

func (genAI) fields() (keys, fallback fieldTable) {
	keys = fieldTable{
		fieldModel:           keysOf(genAIResponseModel, genAIRequestModel),
		fieldProvider:        keysOf(genAIProviderName, genAISystem),
		fieldResponseID:      keysOf(genAIResponseID),
		fieldConversationID:  keysOf(genAIConversationID),
		fieldAgentName:       keysOf(genAIAgentName),
		fieldInputTokens:     keysOf(genAIUsageInputTokens, genAIUsagePromptTokens),
		fieldOutputTokens:    keysOf(genAIUsageOutputTokens, genAIUsageCompletionTokens),
		fieldTotalTokens:     keysOf(genAIUsageTotalTokens),
		fieldToolName:        keysOf(genAIToolName),
		fieldToolID:          keysOf(genAIToolCallID),
		fieldToolArgs:        keysOf(genAIToolCallArguments),
		fieldToolResult:      keysOf(genAIToolCallResult),
		fieldToolDescription: keysOf(genAIToolDescription),
	}
	return keys, fallback
}

// fromSpan: an agent span named "invoke_agent <name>".
func (genAI) fromSpan(d *spanData, _ pcommon.Map, f attrField) string {
	if f == fieldAgentName {
		if n, ok := strings.CutPrefix(d.ref.Span.Name(), "invoke_agent "); ok {
			return n
		}
	}
	return ""
}

func (genAI) conversation(d *spanData, attrs pcommon.Map, _ flatTrees, in, out bool) {
	c := &d.c
	if in && len(d.input) == 0 {
		if v, ok := c.attrValue(attrs, genAIInputMessages); ok {
			d.input = c.parseMessages(genAIInputMessages, v, "user")
		}
	}
	if out && len(d.output) == 0 {
		if v, ok := c.attrValue(attrs, genAIOutputMessages); ok {
			d.output = c.parseMessages(genAIOutputMessages, v, "assistant")
		}
	}
	if in && d.system == "" {
		if v, ok := c.attrValue(attrs, genAISystemInstructions); ok {
			d.system = c.systemInstructions(v)
		}
	}
}

func (genAI) toolDefinitions(d *spanData, attrs pcommon.Map, _ flatTrees) {
	d.toolDefList(attrs, genAIToolDefinitions)
}

func (genAI) documents(d *spanData, attrs pcommon.Map, _ flatTrees) {
	c := &d.c
	if v, ok := c.attrValue(attrs, genAIRetrievalDocuments); ok {
		if arr, ok := v.([]any); ok {
			for _, it := range arr {
				d.addDocument(genAIRetrievalDocuments, it)
			}
		} else {
			c.report(genAIRetrievalDocuments, "want an array, got %s", typeName(v))
		}
	}
}

// systemInstructions reads gen_ai.system_instructions: parts or a string.
func (c *spanCtx) systemInstructions(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, p := range t {
			if s, _, _ := c.parsePart(genAISystemInstructions, p); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		s, _, _ := c.parsePart(genAISystemInstructions, t)
		return s
	}
	c.report(genAISystemInstructions, "want parts or a string, got %s", typeName(v))
	return ""
}

func (genAI) kindKeys() []kindKey {
	return []kindKey{{genAIOperationName, func(s string) spanKind {
		switch s {
		case "chat", "text_completion", "generate_content":
			return kindLLM
		case "invoke_agent", "invoke_workflow":
			return kindAgent
		case "execute_tool":
			return kindTool
		case "retrieval":
			return kindRetrieval
		}
		return kindOther
	}}}
}
