package adapter

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
