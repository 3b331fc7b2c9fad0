package adapter

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
