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
	kindChain // transient: OpenInference CHAIN, an agent only at the root
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
// nothing, so it can run on every span in a collector processor: a Vercel
// AI SDK span name is checked first, then the span's attributes are walked
// once.
func IsGenAI(span ptrace.Span) bool {
	if vercelKind(span.Name()) != kindOther {
		return !IsGenerated(span)
	}
	var seen uint8
	found := false
	span.Attributes().Range(func(k string, v pcommon.Value) bool {
		slot := kindSlot(k)
		if slot < 0 || seen&(1<<slot) != 0 {
			return true
		}
		seen |= 1 << slot // Map.Get semantics: the first occurrence of a key counts
		switch slotKind(slot, v) {
		case kindOther:
		case kindChain:
			found = span.ParentSpanID().IsEmpty()
		default:
			found = true
		}
		return !found
	})
	return found && !IsGenerated(span)
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

// The attributes that say what a span is, in order of precedence.
const (
	slotOperation = iota // gen_ai.operation.name
	slotOIKind           // openinference.span.kind
	slotOLRequest        // llm.request.type
	slotOLKind           // traceloop.span.kind
	slotVercelOp         // ai.operationId
	numKindSlots
)

// kindSlot returns the slot of a kind-bearing attribute key, or -1. The
// length and first byte rule out almost every other key.
func kindSlot(k string) int {
	switch len(k) {
	case len(genAIOperationName):
		if k[0] == 'g' && k == genAIOperationName {
			return slotOperation
		}
	case len(oiSpanKind):
		if k[0] == 'o' && k == oiSpanKind {
			return slotOIKind
		}
	case len(olLLMRequestType):
		if k[0] == 'l' && k == olLLMRequestType {
			return slotOLRequest
		}
	case len(olSpanKind):
		if k[0] == 't' && k == olSpanKind {
			return slotOLKind
		}
	case len(aiOperationID):
		if k[0] == 'a' && k == aiOperationID {
			return slotVercelOp
		}
	}
	return -1
}

// slotKind is the kind one kind-bearing attribute gives (kindOther when its
// value is not a string or not a recognised value). An OpenInference CHAIN
// span gives kindChain: an agent at the root, nothing elsewhere.
func slotKind(slot int, v pcommon.Value) spanKind {
	if v.Type() != pcommon.ValueTypeStr {
		return kindOther
	}
	s := v.Str()
	switch slot {
	case slotOperation:
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
	case slotOIKind:
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
	case slotOLRequest:
		switch s {
		case "chat", "completion":
			return kindLLM
		}
	case slotOLKind:
		switch s {
		case "agent", "workflow":
			return kindAgent
		case "tool":
			return kindTool
		}
	case slotVercelOp:
		return vercelKind(s)
	}
	return kindOther
}

// classify detects the span kind across the conventions (first match wins:
// OTel GenAI, OpenInference, OpenLLMetry, Vercel AI SDK span name, then
// ai.operationId) in one pass over the attributes. isRoot makes an
// OpenInference CHAIN span an agent.
func classify(span ptrace.Span, isRoot bool) spanKind {
	if IsGenerated(span) {
		return kindOther // evalbridge's own output is never a case again
	}
	var kinds [numKindSlots]spanKind
	var seen uint8
	for k, v := range span.Attributes().All() {
		slot := kindSlot(k)
		if slot < 0 || seen&(1<<slot) != 0 {
			continue
		}
		seen |= 1 << slot
		kinds[slot] = slotKind(slot, v)
		if kinds[slot] == kindChain {
			kinds[slot] = kindOther
			if isRoot {
				kinds[slot] = kindAgent
			}
		}
		if slot == slotOperation && kinds[slot] != kindOther {
			return kinds[slot] // highest precedence
		}
	}
	for _, k := range kinds[:slotVercelOp] {
		if k != kindOther {
			return k
		}
	}
	if k := vercelKind(span.Name()); k != kindOther {
		return k
	}
	return kinds[slotVercelOp]
}

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
