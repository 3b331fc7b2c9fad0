package adapter

import (
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Vercel AI SDK telemetry: ai.* attributes and the ai.* span names
// (operation ids) of its calls (aiOp*).
// Each key is spelled here once; the readers name it by constant.
const (
	aiPrefix                     = "ai."
	aiOpGenerateObject           = "ai.generateObject"
	aiOpGenerateObjectDoGenerate = "ai.generateObject.doGenerate"
	aiOpGenerateText             = "ai.generateText"
	aiOpGenerateTextDoGenerate   = "ai.generateText.doGenerate"
	aiModelID                    = "ai.model.id"
	aiModelProvider              = "ai.model.provider"
	aiOperationID                = "ai.operationId"
	aiPrompt                     = "ai.prompt"
	aiPromptMessages             = "ai.prompt.messages"
	aiPromptTools                = "ai.prompt.tools"
	aiResponseID                 = "ai.response.id"
	aiResponseModel              = "ai.response.model"
	aiResponseText               = "ai.response.text"
	aiResponseToolCalls          = "ai.response.toolCalls"
	aiOpStreamObject             = "ai.streamObject"
	aiOpStreamObjectDoStream     = "ai.streamObject.doStream"
	aiOpStreamText               = "ai.streamText"
	aiOpStreamTextDoStream       = "ai.streamText.doStream"
	aiTelemetryFunctionID        = "ai.telemetry.functionId"
	aiTelemetryMetadataSessionID = "ai.telemetry.metadata.sessionId"
	aiOpToolCall                 = "ai.toolCall"
	aiToolCallArgs               = "ai.toolCall.args"
	aiToolCallID                 = "ai.toolCall.id"
	aiToolCallInput              = "ai.toolCall.input"
	aiToolCallName               = "ai.toolCall.name"
	aiToolCallOutput             = "ai.toolCall.output"
	aiToolCallResult             = "ai.toolCall.result"
	aiUsageCompletionTokens      = "ai.usage.completionTokens"
	aiUsageInputTokens           = "ai.usage.inputTokens"
	aiUsageOutputTokens          = "ai.usage.outputTokens"
	aiUsagePromptTokens          = "ai.usage.promptTokens"
	aiUsageTotalTokens           = "ai.usage.totalTokens"
)

// vercelAI reads the Vercel AI SDK's ai.* span attributes.
type vercelAI struct {
	noFromSpan
	noDocuments
}

func (vercelAI) fields() (keys, fallback fieldTable) {
	keys = fieldTable{
		fieldModel:            keysOf(aiResponseModel, aiModelID),
		fieldProvider:         keysOf(aiModelProvider),
		fieldResponseID:       keysOf(aiResponseID),
		fieldConversationID:   keysOf(aiTelemetryMetadataSessionID),
		fieldAgentNameOfAgent: keysOf(aiTelemetryFunctionID),
		fieldInputTokens:      keysOf(aiUsageInputTokens, aiUsagePromptTokens),
		fieldOutputTokens:     keysOf(aiUsageOutputTokens, aiUsageCompletionTokens),
		fieldTotalTokens:      keysOf(aiUsageTotalTokens),
		fieldOwnInput:         keysOf(aiPrompt),
		fieldOwnOutput:        keysOf(aiResponseText),
		fieldToolName:         keysOf(aiToolCallName),
		fieldToolID:           keysOf(aiToolCallID),
		fieldToolArgs:         keysOf(aiToolCallArgs, aiToolCallInput),
		fieldToolResult:       []key{{name: aiToolCallResult, opt: optJSONString}, {name: aiToolCallOutput, opt: optJSONString}},
	}
	return keys, fallback
}

func (vercelAI) conversation(d *spanData, attrs pcommon.Map, _ flatTrees, in, out bool) {
	c := &d.c
	if in && len(d.input) == 0 {
		if v, ok := c.attrValue(attrs, aiPromptMessages); ok {
			d.input = c.parseMessages(aiPromptMessages, v, "user")
		}
	}
	if out && len(d.output) == 0 && d.kind == kindLLM {
		text := c.attrString(attrs, aiResponseText)
		var calls []ToolCall
		if v, ok := c.attrValue(attrs, aiResponseToolCalls); ok {
			calls = c.parseToolCalls(aiResponseToolCalls, v)
		}
		if text != "" || len(calls) > 0 {
			d.output = []Message{{Role: "assistant", Content: text, ToolCalls: calls}}
		}
	}
}

func (vercelAI) toolDefinitions(d *spanData, attrs pcommon.Map, _ flatTrees) {
	if v, ok := attrs.Get(aiPromptTools); ok && v.Type() == pcommon.ValueTypeSlice && d.toolDefTexts(v.Slice()) {
		return
	}
	d.toolDefList(attrs, aiPromptTools)
}

// toolDefTexts reads ai.prompt.tools as the SDK writes it, an array of
// strings each one definition's JSON text, one definition at a time, each
// read once per text (readDefsCached): what toolDefList reads, merged
// one by one as it merges them. It reads nothing and returns false unless
// every element is a string that the conversion keeps as it is (valid
// UTF-8 within the length limit, fewer than maxElements).
func (d *spanData) toolDefTexts(list pcommon.Slice) bool {
	n := list.Len()
	if n == 0 || n >= maxElements {
		return false
	}
	for i := range n {
		if e := list.At(i); e.Type() != pcommon.ValueTypeStr || len(e.Str()) > maxStringBytes || !utf8.ValidString(e.Str()) {
			return false
		}
	}
	for i := range n {
		s := list.At(i).Str()
		d.readDefsCached(s, func() { d.addToolDef(aiPromptTools, s, "") })
	}
	return true
}

// kindKeys: ai.operationId. A Vercel AI SDK span is named by its operation
// too, which classify and IsGenAI read first (vercelKind).
func (vercelAI) kindKeys() []kindKey { return []kindKey{{aiOperationID, vercelKind}} }

// vercelKind is the kind of a Vercel AI SDK operation id.
func vercelKind(name string) spanKind {
	if !strings.HasPrefix(name, aiPrefix) {
		return kindOther
	}
	switch name {
	case aiOpGenerateTextDoGenerate, aiOpStreamTextDoStream,
		aiOpGenerateObjectDoGenerate, aiOpStreamObjectDoStream:
		return kindLLM
	case aiOpGenerateText, aiOpStreamText, aiOpGenerateObject, aiOpStreamObject:
		return kindAgent
	case aiOpToolCall:
		return kindTool
	}
	return kindOther
}
