package adapter

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanKind is what a span is, for case building.
type spanKind uint8

const (
	kindOther spanKind = iota
	kindLLM
	kindAgent
	kindTool
	kindRetrieval
)

func (k spanKind) String() string {
	switch k {
	case kindLLM:
		return "llm"
	case kindAgent:
		return "agent"
	case kindTool:
		return "tool"
	case kindRetrieval:
		return "retrieval"
	}
	return "other"
}

// IsGenAI reports cheaply whether a span is an LLM, agent, tool or retrieval
// span in any of the four conventions. It parses nothing and allocates
// nothing, so it can run on every span in a collector processor.
func IsGenAI(span ptrace.Span) bool {
	return classify(span, span.ParentSpanID().IsEmpty()) != kindOther
}

// strAttr returns a string attribute without allocating; "" when absent or
// not a string.
func strAttr(m pcommon.Map, key string) string {
	v, ok := m.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return ""
	}
	return v.Str()
}

// classify detects the span kind across the conventions (first match wins:
// OTel GenAI, OpenInference, OpenLLMetry, Vercel AI SDK). isRoot makes an
// OpenInference CHAIN span an agent.
func classify(span ptrace.Span, isRoot bool) spanKind {
	attrs := span.Attributes()
	switch strAttr(attrs, "gen_ai.operation.name") {
	case "chat", "text_completion", "generate_content":
		return kindLLM
	case "invoke_agent", "invoke_workflow":
		return kindAgent
	case "execute_tool":
		return kindTool
	case "retrieval":
		return kindRetrieval
	}
	if k := strAttr(attrs, "openinference.span.kind"); k != "" {
		switch {
		case strings.EqualFold(k, "LLM"):
			return kindLLM
		case strings.EqualFold(k, "AGENT"):
			return kindAgent
		case strings.EqualFold(k, "TOOL"):
			return kindTool
		case strings.EqualFold(k, "RETRIEVER"):
			return kindRetrieval
		case strings.EqualFold(k, "CHAIN") && isRoot:
			return kindAgent
		}
	}
	switch strAttr(attrs, "llm.request.type") {
	case "chat", "completion":
		return kindLLM
	}
	switch strAttr(attrs, "traceloop.span.kind") {
	case "agent", "workflow":
		return kindAgent
	case "tool":
		return kindTool
	}
	if k := vercelKind(span.Name()); k != kindOther {
		return k
	}
	return vercelKind(strAttr(attrs, "ai.operationId"))
}

func vercelKind(name string) spanKind {
	if !strings.HasPrefix(name, "ai.") {
		return kindOther
	}
	switch name {
	case "ai.generateText.doGenerate", "ai.streamText.doStream",
		"ai.generateObject.doGenerate", "ai.streamObject.doStream":
		return kindLLM
	case "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject":
		return kindAgent
	case "ai.toolCall":
		return kindTool
	}
	return kindOther
}
