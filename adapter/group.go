package adapter

import (
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

// kindKeys are the attributes that say what a span is, over all
// conventions in conventions order (a key's index is its slot).
var kindKeys = collectKindKeys()

// kindSlotByLen is 1 + the slot of the kind key of each length (0: none):
// every other attribute key of another length is ruled out at once.
var kindSlotByLen = func() (byLen [64]int8) {
	for i, k := range kindKeys {
		if len(k.name) >= len(byLen) || byLen[len(k.name)] != 0 {
			panic("adapter: kind keys need distinct lengths below 64 (kindSlot)")
		}
		byLen[len(k.name)] = int8(i + 1)
	}
	return byLen
}()

func collectKindKeys() []kindKey {
	var keys []kindKey
	for _, cv := range conventions {
		keys = append(keys, cv.kindKeys()...)
	}
	if len(keys) > 8 {
		panic("adapter: more kind keys than the 8-bit seen set holds")
	}
	return keys
}

// kindSlot returns the slot of a kind-bearing attribute key, or -1.
func kindSlot(k string) int {
	if len(k) >= len(kindSlotByLen) {
		return -1
	}
	s := int(kindSlotByLen[len(k)]) - 1
	if s < 0 {
		return -1
	}
	if n := kindKeys[s].name; k[0] == n[0] && k == n {
		return s
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
	return kindKeys[slot].kind(v.Str())
}

// classify detects the span kind across the conventions in one pass over
// the attributes: the first kind key, in conventions order, that gives a
// kind wins, except that a Vercel AI SDK span's name (its operation) goes
// before its ai.operationId. isRoot makes an OpenInference CHAIN span an
// agent.
func classify(span ptrace.Span, isRoot bool) spanKind {
	var kinds [8]spanKind
	var seen uint8
	// evalbridge's own output (IsGenerated: the first eval.generated is
	// true) is never a case again; read in the same pass
	genSeen := false
	top := kindOther // slot 0's kind, the highest precedence, once known
	for k, v := range span.Attributes().All() {
		if k == AttrGenerated {
			if !genSeen && v.Type() == pcommon.ValueTypeBool && v.Bool() {
				return kindOther
			}
			genSeen = true
			continue
		}
		if top != kindOther {
			continue // only eval.generated can change the answer
		}
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
		if slot == 0 && kinds[slot] != kindOther {
			top = kinds[slot]
		}
	}
	if top != kindOther {
		return top
	}
	nameKind := vercelKind(span.Name())
	for slot, k := range kinds[:len(kindKeys)] {
		if nameKind != kindOther && kindKeys[slot].name == aiOperationID {
			return nameKind
		}
		if k != kindOther {
			return k
		}
	}
	return nameKind
}
