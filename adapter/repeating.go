package adapter

import "strings"

// repeatingValueKeys are the attributes whose string values repeat from
// span to span and trace to trace: which operation, system, model, agent
// and tool a span is about, the session it belongs to, and what an agent
// sends again on every LLM call (its tool definitions and system
// instructions, often kilobytes). The prompts, completions, arguments and
// results, which differ each time, are not among them.
var repeatingValueKeys = map[string]struct{}{
	genAIOperationName: {}, genAISystem: {}, genAIProviderName: {},
	genAIRequestModel: {}, genAIResponseModel: {}, genAIAgentName: {},
	genAIToolName: {}, genAIToolDescription: {}, genAIConversationID: {},
	genAIToolDefinitions: {}, genAISystemInstructions: {},
	oiSpanKind: {}, oiLLMModelName: {}, oiLLMSystem: {}, oiLLMProvider: {},
	oiAgentName: {}, oiToolName: {}, oiToolDescription: {}, oiToolParameters: {},
	oiSessionID: {}, "llm.invocation_parameters": {},
	olSpanKind: {}, olEntityName: {}, olLLMRequestType: {},
	olAssociationChatID: {}, olAssociationConversationID: {}, olAssociationSessionID: {},
	aiModelID: {}, aiModelProvider: {}, aiOperationID: {}, aiTelemetryFunctionID: {},
	aiToolCallName: {}, aiPromptTools: {}, "operation.name": {}, "resource.name": {},
}

// RepeatingValue reports whether the string values of attribute key
// repeat across spans (repeatingValueKeys), including the flattened tool
// definitions of OpenInference (llm.tools.N.tool.json_schema) and
// OpenLLMetry (llm.request.functions.N.name, .description, .parameters).
// The processor keeps one copy of each such value for the spans it holds.
func RepeatingValue(key string) bool {
	if _, ok := repeatingValueKeys[key]; ok {
		return true
	}
	if rest, ok := strings.CutPrefix(key, oiLLMToolsPrefix); ok {
		return strings.HasSuffix(rest, ".tool.json_schema")
	}
	_, ok := strings.CutPrefix(key, olLLMRequestFunctionsPrefix)
	return ok
}
