package adapter

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// spanData is what was read from one span; each span is read at most once
// per Adapt call.
type spanData struct {
	ref    SpanRef
	kind   spanKind
	parent int // index of the parent span; -1 for top-level
	start  pcommon.Timestamp
	end    pcommon.Timestamp
	done   parts // parts read
	c      spanCtx
	expect *expectSet
	// keys is the filter of the span's attribute keys, once keysRead.
	keys     keyFilter
	keysRead bool

	// conversation (llm and agent spans)
	input, output []Message
	system        string
	toolDefs      []ToolDefinition
	// defsShared: toolDefs is a cached list (read only), copied before a
	// merge changes it.
	defsShared bool
	// own input and output text of agent spans
	ownInput, ownOutput string
	// tool spans
	call ToolCall
	// retrieval spans
	docs []Document

	usage                                                Usage
	model, provider, responseID, agentName, conversation string
}

// latency is the span's duration for a case: 0 when a timestamp is unset
// (unknown); when the span ends before it starts or the duration overflows,
// a problem is reported and invalid says why (bad input, never a pass).
func (d *spanData) latency() (lat time.Duration, invalid string) {
	switch {
	case d.start == 0 || d.end == 0:
		return 0, ""
	case d.end < d.start:
		invalid = fmt.Sprintf("the span ends %v before it starts", time.Duration(min(uint64(d.start-d.end), math.MaxInt64)))
	case uint64(d.end-d.start) > math.MaxInt64:
		invalid = "the span's duration overflows a 64-bit nanosecond count"
	default:
		return time.Duration(d.end - d.start), ""
	}
	d.c.report("end_time_unix_nano", "not a valid latency: %s", invalid)
	return 0, invalid
}

func (d *spanData) duration() time.Duration {
	if d.end < d.start {
		return 0
	}
	return time.Duration(d.end - d.start)
}

// flattened prefixes read in a single pass over the attributes.
var flatPrefixes = [...]string{
	oiLLMInputMessagesPrefix,
	oiLLMOutputMessagesPrefix,
	oiLLMToolsPrefix,
	oiRetrievalDocumentsPrefix,
	olGenAIPromptPrefix,
	olGenAICompletionPrefix,
	olLLMRequestFunctionsPrefix,
}

const (
	flatOIInput = iota
	flatOIOutput
	flatOITools
	flatOIDocs
	flatOLPrompt
	flatOLCompletion
	flatOLFunctions
)

// masks of flatPrefixes
const (
	allFlat    = 1<<len(flatPrefixes) - 1
	inputFlat  = 1<<flatOIInput | 1<<flatOLPrompt
	outputFlat = 1<<flatOIOutput | 1<<flatOLCompletion
	defsFlat   = 1<<flatOITools | 1<<flatOLFunctions
)

// convFlat is the flatPrefixes mask of the conversation parts in p.
func convFlat(p parts) uint8 {
	var m uint8
	if p&partInput != 0 {
		m |= inputFlat
	}
	if p&partOutput != 0 {
		m |= outputFlat
	}
	return m
}

// flatten collects the flattened attributes under the flatPrefixes in mask,
// each converted (and any problem reported) in attribute order; the trees
// are built from them only when asked for (flatSet.tree).
func (d *spanData) flatten(attrs pcommon.Map, mask uint8) flatTrees {
	var trees *flatSet // nil while none
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !strings.HasPrefix(k, oiLLMPrefix) && !strings.HasPrefix(k, genAIPrefix) && !strings.HasPrefix(k, oiRetrievalPrefix) {
			return true
		}
		for i, p := range flatPrefixes {
			if len(k) > len(p) && strings.HasPrefix(k, p) {
				if mask&(1<<i) == 0 {
					break
				}
				if trees == nil {
					trees = d.c.newFlatSet()
				}
				if cap(trees.kvs[i]) == 0 {
					trees.kvs[i] = make([]flatKV, 0, 8)
				}
				rest := k[len(p):]
				kv := flatKV{key: rest}
				if v.Type() == pcommon.ValueTypeStr { // convert's, unboxed
					kv.str, kv.isStr = d.c.fixString(k, v.Str()), true
				} else {
					kv.val = d.c.convert(k, v)
				}
				trees.kvs[i] = append(trees.kvs[i], kv)
				if strings.Count(rest, ".") > maxDepth { // what unflatten refuses
					d.c.report(k, "key nested too deeply; skipped")
				}
				break
			}
		}
		return true
	})
	return trees
}

// flatKV is one flattened attribute: its key after the prefix and its
// converted value, a string kept apart (not boxed until a tree needs it).
type flatKV struct {
	key   string
	str   string // the value, when isStr
	val   any    // the value, unless isStr
	isStr bool
}

// value is kv's converted value.
func (kv *flatKV) value() any {
	if kv.isStr {
		return kv.str
	}
	return kv.val
}

// flatTrees are the flattened attributes under each of flatPrefixes (nil
// when there are none).
type flatTrees = *flatSet

// flatSet holds the flattened attributes under each of flatPrefixes, in
// attribute order, and the trees built from them (unflatten) once asked for.
type flatSet struct {
	kvs   [len(flatPrefixes)][]flatKV
	trees [len(flatPrefixes)]map[string]any
}

// has tells whether any attribute is under flatPrefixes[i].
func (t *flatSet) has(i int) bool { return t != nil && len(t.kvs[i]) != 0 }

// tree is the attributes under flatPrefixes[i] as nested maps, nil when
// there are none.
func (t *flatSet) tree(i int) map[string]any {
	if !t.has(i) {
		return nil
	}
	if t.trees[i] == nil {
		m := make(map[string]any, 8)
		for j := range t.kvs[i] {
			kv := &t.kvs[i][j]
			unflatten(m, kv.key, kv.value()) // too deep: reported by flatten
		}
		t.trees[i] = m
	}
	return t.trees[i]
}

// maxPooledFlat is the most flattened attributes under a prefix whose
// slice a trace keeps for the next span (and the next trace, pooled).
const maxPooledFlat = 64

// newFlatSet is an empty flatSet: the trace's own when not in use.
func (c *spanCtx) newFlatSet() *flatSet {
	if c.cache == nil || c.cache.flatBusy {
		return &flatSet{}
	}
	c.cache.flatBusy = true
	return &c.cache.flat
}

// doneFlat takes back trees (from flatten) once read: the trace's own are
// emptied for the next use, their slices kept unless large.
func (c *spanCtx) doneFlat(trees *flatSet) {
	if trees == nil || c.cache == nil || trees != &c.cache.flat {
		return
	}
	trees.reset()
	c.cache.flatBusy = false
}

// reset empties t (the values dropped), keeping small slices.
func (t *flatSet) reset() {
	for i := range t.kvs {
		clear(t.kvs[i])
		t.kvs[i] = t.kvs[i][:0]
		if cap(t.kvs[i]) > maxPooledFlat {
			t.kvs[i] = nil
		}
	}
	t.trees = [len(flatPrefixes)]map[string]any{}
}

// parts of a span that are read separately, each at most once.
type parts uint8

const (
	partMeta   parts = 1 << iota // model, provider, ids, names, usage
	partInput                    // input messages, system instructions
	partOutput                   // output messages
	partDefs                     // tool definitions
	partOwnIO                    // an agent span's own input and output text
	partTool                     // a tool span's call
	partDocs                     // a retrieval span's documents
	allParts   parts = 1<<iota - 1
	partConv         = partInput | partOutput
)

// parse reads everything the span's kind carries, in one go (what Adapt
// with both case levels does).
func (d *spanData) parse() {
	if d.done == allParts {
		return
	}
	if d.done != 0 { // partly read already: read the rest part by part
		d.parsePart(allParts)
		return
	}
	d.done = allParts
	attrs := d.ref.Span.Attributes()
	d.readMeta(attrs)
	switch d.kind {
	case kindTool:
		d.readToolSpan(attrs)
		return
	case kindRetrieval:
		trees := d.flatten(attrs, allFlat)
		d.readDocuments(attrs, trees)
		d.c.doneFlat(trees)
		return
	}
	// llm, agent and anchors of synthetic agent cases
	trees := d.flatten(attrs, allFlat)
	d.readConversation(attrs, trees, partConv)
	d.readToolDefinitions(attrs, trees)
	d.c.doneFlat(trees)
	if d.kind != kindLLM {
		d.readOwnIO(attrs)
	}
	d.readRawIO(attrs)
}

// parsePart reads the parts in p not read yet that the span's kind carries.
func (d *spanData) parsePart(p parts) {
	p &^= d.done
	if p == 0 {
		return
	}
	d.done |= p
	attrs := d.ref.Span.Attributes()
	if p&partMeta != 0 {
		d.readMeta(attrs)
	}
	switch d.kind {
	case kindTool:
		if p&partTool != 0 {
			d.readToolSpan(attrs)
		}
		return
	case kindRetrieval:
		if p&partDocs != 0 {
			trees := d.flatten(attrs, 1<<flatOIDocs)
			d.readDocuments(attrs, trees)
			d.c.doneFlat(trees)
		}
		return
	}
	if p&partConv != 0 {
		d.readConvParts(attrs, p&partConv)
	}
	if p&partDefs != 0 {
		trees := d.flatten(attrs, defsFlat)
		d.readToolDefinitions(attrs, trees)
		d.c.doneFlat(trees)
	}
	if p&partOwnIO != 0 && d.kind != kindLLM {
		d.readOwnIO(attrs)
	}
}

// readConvParts reads the sides of the conversation in p (marked done by
// the caller), then, once both sides are read, an LLM span's raw request
// and response. Those apply only when both sides came out empty, so a side
// read alone that came out empty while its raw attribute is present needs
// the other side read too.
func (d *spanData) readConvParts(attrs pcommon.Map, p parts) {
	trees := d.flatten(attrs, convFlat(p))
	d.readConversation(attrs, trees, p)
	d.c.doneFlat(trees)
	if d.kind != kindLLM {
		return
	}
	if rest := partConv &^ d.done; rest != 0 {
		if !(p&partInput != 0 && len(d.input) == 0 && has(attrs, oiInputValue)) &&
			!(p&partOutput != 0 && len(d.output) == 0 && has(attrs, oiOutputValue)) {
			return
		}
		d.done |= rest
		trees := d.flatten(attrs, convFlat(rest))
		d.readConversation(attrs, trees, rest)
		d.c.doneFlat(trees)
	}
	d.readRawIO(attrs)
}

// aiSDKProviderAPIs are the API suffixes of the Vercel AI SDK's provider
// ids ("openai.chat", "anthropic.messages", "google.generative-ai"), which
// the SDK writes into gen_ai.system and ai.model.provider.
var aiSDKProviderAPIs = []string{".chat", ".responses", ".completion", ".messages", ".generative-ai", ".embedding", ".image"}

// normProvider turns an AI SDK provider id into the provider's name (openai
// for openai.chat); semconv names with dots (aws.bedrock, az.ai.openai)
// stay as they are.
func normProvider(p string) string {
	for _, suf := range aiSDKProviderAPIs {
		if n, ok := strings.CutSuffix(p, suf); ok && n != "" {
			return n
		}
	}
	return p
}

// flatConversation fills the empty sides of the conversation asked for
// (in, out) from the flattened messages trees[inTree] (attribute inAttr)
// and trees[outTree] (outAttr).
func (d *spanData) flatConversation(trees flatTrees, in, out bool, inTree int, inAttr string, outTree int, outAttr string) {
	if in && len(d.input) == 0 && trees.has(inTree) {
		d.input = d.c.readFlatMessages(trees, inTree, inAttr, "user")
	}
	if out && len(d.output) == 0 && trees.has(outTree) {
		d.output = d.c.readFlatMessages(trees, outTree, outAttr, "assistant")
	}
}

// readFlatMessages reads the flattened messages trees[i] (attribute attr):
// straight from the keys when they have the usual shape, else from the tree.
func (c *spanCtx) readFlatMessages(trees flatTrees, i int, attr, defaultRole string) []Message {
	if msgs, ok := c.flatMessagesFast(attr, trees.kvs[i], defaultRole, i == flatOIInput || i == flatOIOutput); ok {
		return msgs
	}
	return c.flatMessages(attr, trees.tree(i), defaultRole)
}

// flatMessages reads flattened messages: N.{message.}role/content/…
func (c *spanCtx) flatMessages(attr string, tree map[string]any, defaultRole string) []Message {
	var out []Message
	for _, it := range indexed(tree) {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if inner, ok := m["message"].(map[string]any); ok { // OpenInference
			m = inner
		}
		msg := Message{Role: defaultRole}
		if r := str(m["role"]); r != "" {
			msg.Role = normRole(r)
		}
		var texts []string
		switch ct := m["content"].(type) {
		case nil:
		case string:
			texts = c.stringContent(attr, ct, msg.Role, texts)
		default:
			c.report(attr, "message content: want a string, got %s", typeName(ct))
			texts = append(texts, textOf(ct))
		}
		for _, p := range indexed(m["contents"]) { // OpenInference multimodal
			pm, _ := p.(map[string]any)
			if mc, ok := pm["message_content"].(map[string]any); ok {
				pm = mc
			}
			if pm != nil && (pm["type"] == nil || pm["type"] == "text") {
				if s := str(pm["text"]); s != "" {
					texts = append(texts, s)
				}
			}
		}
		msg.Content = strings.Join(texts, "\n")
		for _, tc := range indexed(m["tool_calls"]) {
			if tm, ok := tc.(map[string]any); ok {
				msg.ToolCalls = append(msg.ToolCalls, c.parseToolCall(attr, tm))
			}
		}
		if msg.Role == "tool" {
			msg.ToolCallID = strField(m, "tool_call_id", "id")
		}
		out = append(out, msg)
	}
	return out
}
