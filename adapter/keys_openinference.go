package adapter

// OpenInference (Arize Phoenix) attributes: llm.*, input.value,
// output.value, tool.*, tool_call.*, retrieval.*, session.id.
// OpenLLMetry's own llm.* keys are in keys_openllmetry.go.
// Each key is spelled here once; the readers name it by constant.
const (
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
