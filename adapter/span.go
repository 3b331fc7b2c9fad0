package adapter

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
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

	// conversation (llm and agent spans)
	input, output []Message
	system        string
	toolDefs      []ToolDefinition
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

// flatten collects the flattened attributes under the flatPrefixes in mask
// into trees.
func (d *spanData) flatten(attrs pcommon.Map, mask uint8) [len(flatPrefixes)]map[string]any {
	var trees [len(flatPrefixes)]map[string]any
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !strings.HasPrefix(k, oiLLMPrefix) && !strings.HasPrefix(k, genAIPrefix) && !strings.HasPrefix(k, oiRetrievalPrefix) {
			return true
		}
		for i, p := range flatPrefixes {
			if len(k) > len(p) && strings.HasPrefix(k, p) {
				if mask&(1<<i) == 0 {
					break
				}
				if trees[i] == nil {
					trees[i] = make(map[string]any, 8)
				}
				if !unflatten(trees[i], k[len(p):], d.c.convert(k, v)) {
					d.c.report(k, "key nested too deeply; skipped")
				}
				break
			}
		}
		return true
	})
	return trees
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
		d.readDocuments(attrs, trees[flatOIDocs])
		return
	}
	// llm, agent and anchors of synthetic agent cases
	trees := d.flatten(attrs, allFlat)
	d.readConversation(attrs, trees, partConv)
	d.readToolDefinitions(attrs, trees)
	d.readDetailDefinitions()
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
			d.readDocuments(attrs, trees[flatOIDocs])
		}
		return
	}
	if p&partConv != 0 {
		d.readConvParts(attrs, p&partConv)
	}
	if p&partDefs != 0 {
		trees := d.flatten(attrs, defsFlat)
		d.readToolDefinitions(attrs, trees)
		d.readDetailDefinitions()
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
	d.readConversation(attrs, d.flatten(attrs, convFlat(p)), p)
	if d.kind != kindLLM {
		return
	}
	if rest := partConv &^ d.done; rest != 0 {
		if !(p&partInput != 0 && len(d.input) == 0 && has(attrs, oiInputValue)) &&
			!(p&partOutput != 0 && len(d.output) == 0 && has(attrs, oiOutputValue)) {
			return
		}
		d.done |= rest
		d.readConversation(attrs, d.flatten(attrs, convFlat(rest)), rest)
	}
	d.readRawIO(attrs)
}

func (d *spanData) readMeta(attrs pcommon.Map) {
	c := &d.c
	d.model = c.firstString(attrs, genAIResponseModel, genAIRequestModel, oiLLMModelName, aiResponseModel, aiModelID)
	d.provider = c.firstString(attrs, genAIProviderName, genAISystem, oiLLMProvider, oiLLMSystem, aiModelProvider)
	if d.provider == "" && d.kind == kindLLM {
		d.provider = d.lcProvider(attrs)
	}
	d.provider = normProvider(d.provider)
	d.responseID = c.firstString(attrs, genAIResponseID, aiResponseID)
	d.conversation = c.firstString(attrs, ConversationIDKeys...)
	d.agentName = c.firstString(attrs, genAIAgentName, "agent.name")
	if d.agentName == "" && d.kind == kindAgent {
		d.agentName = c.firstString(attrs, olEntityName, aiTelemetryFunctionID)
		if d.agentName == "" {
			if n, ok := strings.CutPrefix(d.ref.Span.Name(), "invoke_agent "); ok {
				d.agentName = n
			} else if has(attrs, oiSpanKind) {
				// openinference-core's traceAgent names the span after the
				// agent and writes no agent.name.
				d.agentName = d.ref.Span.Name()
			}
		}
	}
	d.readUsage(attrs)
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

// readRawIO reads OpenInference's raw request/response of an LLM span as a
// last resort.
func (d *spanData) readRawIO(attrs pcommon.Map) {
	if d.kind != kindLLM || len(d.input) != 0 || len(d.output) != 0 {
		return
	}
	c := &d.c
	if v, ok := c.attrValue(attrs, oiInputValue); ok {
		if _, isStr := v.(string); !isStr {
			d.input = c.parseMessagesQuiet([]any{v})
		}
	}
	if v, ok := c.attrValue(attrs, oiOutputValue); ok {
		if _, isStr := v.(string); !isStr {
			d.output = c.parseMessagesQuiet([]any{v})
		} else if s := v.(string); s != "" {
			d.output = []Message{{Role: "assistant", Content: s}}
		}
	}
}

func (d *spanData) readUsage(attrs pcommon.Map) {
	c := &d.c
	u := &d.usage
	first := func(keys ...string) (int64, bool) {
		for _, k := range keys {
			if n, ok, bad := c.attrCount(attrs, k); ok {
				if bad != "" && u.Invalid == "" {
					u.Invalid = bad
				}
				return n, true
			}
		}
		return 0, false
	}
	u.InputTokens, u.HasInputTokens = first(genAIUsageInputTokens, genAIUsagePromptTokens, oiLLMTokenCountPrompt, aiUsageInputTokens, aiUsagePromptTokens)
	u.OutputTokens, u.HasOutputTokens = first(genAIUsageOutputTokens, genAIUsageCompletionTokens, oiLLMTokenCountCompletion, aiUsageOutputTokens, aiUsageCompletionTokens)
	u.TotalTokens, u.HasTotalTokens = first(genAIUsageTotalTokens, olLLMUsageTotalTokens, oiLLMTokenCountTotal, aiUsageTotalTokens)
}

// readConversation reads the sides of the conversation in p (partInput:
// input messages and system instructions; partOutput: output messages),
// each side from the first convention that has it.
func (d *spanData) readConversation(attrs pcommon.Map, trees [len(flatPrefixes)]map[string]any, p parts) {
	c := &d.c
	in, out := p&partInput != 0, p&partOutput != 0
	// OTel GenAI
	if in {
		if v, ok := c.attrValue(attrs, genAIInputMessages); ok {
			d.input = c.parseMessages(genAIInputMessages, v, "user")
		}
	}
	if out {
		if v, ok := c.attrValue(attrs, genAIOutputMessages); ok {
			d.output = c.parseMessages(genAIOutputMessages, v, "assistant")
		}
	}
	if in {
		if v, ok := c.attrValue(attrs, genAISystemInstructions); ok {
			d.system = c.systemInstructions(v)
		}
	}
	// OpenInference flattened
	if in && len(d.input) == 0 && trees[flatOIInput] != nil {
		d.input = c.flatMessages(oiLLMInputMessages, trees[flatOIInput], "user")
	}
	if out && len(d.output) == 0 && trees[flatOIOutput] != nil {
		d.output = c.flatMessages(oiLLMOutputMessages, trees[flatOIOutput], "assistant")
	}
	if d.kind == kindLLM && (trees[flatOIInput] != nil || trees[flatOIOutput] != nil) {
		d.readLangChainIDs(attrs, p)
	}
	// OpenLLMetry flattened
	if in && len(d.input) == 0 && trees[flatOLPrompt] != nil {
		d.input = c.flatMessages(genAIPrompt, trees[flatOLPrompt], "user")
	}
	if out && len(d.output) == 0 && trees[flatOLCompletion] != nil {
		d.output = c.flatMessages(genAICompletion, trees[flatOLCompletion], "assistant")
	}
	// Vercel AI SDK
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
	// content log records joined to the span (operation details)
	d.readDetails(in, out)
	// older OTel event forms, as span events or log records
	in, out = in && len(d.input) == 0, out && len(d.output) == 0
	if in || out {
		evIn, evOut := d.readEvents(in, out)
		if in {
			d.input = evIn
		}
		if out {
			d.output = evOut
		}
	}
	if p&partInput != 0 && d.system == "" {
		d.system = systemText(d.input)
	}
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
			if !(ct == "null" && msg.Role == "assistant") {
				if strings.HasPrefix(ct, "[{") {
					if arr, ok := decodeQuiet(ct).([]any); ok && allTyped(arr) {
						for _, p := range arr {
							if t, _, _ := c.parsePart(attr, p); t != "" {
								texts = append(texts, t)
							}
						}
						break
					}
				}
				if ct != "" {
					texts = append(texts, ct)
				}
			}
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

// eventNames of the older OTel GenAI forms.
func eventRole(name string) string {
	switch name {
	case EventSystemMessage:
		return "system"
	case EventUserMessage:
		return "user"
	case EventAssistantMessage:
		return "assistant"
	case EventToolMessage:
		return "tool"
	}
	return ""
}

// readEvents reads the older OTel forms carried as span events: the input
// side when wantIn, the output side when wantOut.
func (d *spanData) readEvents(wantIn, wantOut bool) (in, out []Message) {
	c := &d.c
	type choice struct {
		index int
		msgs  []Message
	}
	var choices []choice
	for _, ev := range d.events() {
		name, attrs := ev.name, ev.attrs
		if !strings.HasPrefix(name, genAIPrefix) {
			continue
		}
		switch name {
		case genAIContentPrompt, EventSystemMessage, EventUserMessage, EventAssistantMessage, EventToolMessage:
			if !wantIn {
				continue
			}
		case genAIContentCompletion, EventChoice:
			if !wantOut {
				continue
			}
		}
		switch name {
		case genAIContentPrompt:
			if v, ok := c.attrValue(attrs, genAIPrompt); ok {
				in = append(in, c.parseMessages(genAIPrompt, v, "user")...)
			}
		case genAIContentCompletion:
			if v, ok := c.attrValue(attrs, genAICompletion); ok {
				out = append(out, c.parseMessages(genAICompletion, v, "assistant")...)
			}
		case EventSystemMessage, EventUserMessage, EventAssistantMessage, EventToolMessage:
			body := d.eventBody(ev, name)
			in = append(in, c.parseMessage(name, body, eventRole(name))...)
		case EventChoice:
			body := d.eventBody(ev, name)
			idx := len(choices)
			switch n := body["index"].(type) {
			case float64:
				idx = int(n)
			case int64:
				idx = int(n)
			}
			if _, ok := body["message"]; !ok {
				body = map[string]any{"message": map[string]any{"role": "assistant", "content": body["content"], "tool_calls": body["tool_calls"]}}
			}
			choices = append(choices, choice{idx, c.parseMessage(name, body, "assistant")})
		}
	}
	// stable order by index
	for i := 1; i < len(choices); i++ {
		for j := i; j > 0 && choices[j].index < choices[j-1].index; j-- {
			choices[j], choices[j-1] = choices[j-1], choices[j]
		}
	}
	for _, ch := range choices {
		out = append(out, ch.msgs...)
	}
	return in, out
}

// eventBody is an event's body: a log record's Body, else a `body`
// attribute, else rebuilt from the event's attributes.
func (d *spanData) eventBody(ev eventView, name string) map[string]any {
	c := &d.c
	attrs := ev.attrs
	v, ok := ev.body, ev.body.Type() != pcommon.ValueTypeEmpty
	if !ok {
		v, ok = attrs.Get("body")
	}
	if ok {
		if b, ok := c.valueOf(name+".body", v); ok {
			if m, ok := b.(map[string]any); ok {
				return m
			}
			if s, ok := b.(string); ok {
				return map[string]any{"content": s}
			}
		}
	}
	body := make(map[string]any, attrs.Len())
	attrs.Range(func(k string, v pcommon.Value) bool {
		switch k {
		case genAISystem, genAIProviderName, "event.name":
			return true
		case "tool_calls", "message":
			if x, ok := c.valueOf(name+"."+k, v); ok {
				body[k] = x
			}
		default:
			body[k] = c.convert(name+"."+k, v)
		}
		return true
	})
	return body
}

// readToolDefinitions reads the tools offered to the model.
func (d *spanData) readToolDefinitions(attrs pcommon.Map, trees [len(flatPrefixes)]map[string]any) {
	c := &d.c
	// add reads one definition v; raw is the JSON text v was decoded from
	// ("" when structured).
	add := func(attr string, v any, raw string) {
		if s, ok := v.(string); ok {
			raw = s
		}
		m, ok := c.asObject(attr, v)
		if !ok {
			c.report(attr, "tool definition: want an object, got %s", typeName(v))
			return
		}
		if fn, ok := m["function"].(map[string]any); ok { // OpenAI wrapper
			m = fn
			raw = rawOf(raw, "function")
		}
		def := ToolDefinition{Name: str(m["name"]), Description: str(m["description"])}
		key, schema := fieldKey(m, "parameters", "inputSchema", "input_schema", "parametersJsonSchema", "arguments")
		if schema != nil {
			raw = rawOf(raw, key)
			if s, ok := schema.(string); ok {
				raw = s
			}
			if obj, ok := c.asObject(attr, schema); ok {
				if inner, ok := obj["jsonSchema"].(map[string]any); ok {
					obj = inner
					raw = rawOf(raw, "jsonSchema")
				}
				def.Parameters, def.RawParameters = obj, raw
			} else {
				c.report(attr, "tool %q parameters: want a JSON schema object, got %s", def.Name, typeName(schema))
			}
		}
		if def.Name == "" {
			c.report(attr, "tool definition without a name")
			return
		}
		d.toolDefs = mergeDef(d.toolDefs, def)
	}
	list := func(attr string) {
		v, ok := attrs.Get(attr)
		if !ok {
			return
		}
		raw := ""
		if v.Type() == pcommon.ValueTypeStr {
			raw = v.Str() // decoded as it is
		}
		// A text cached was read without problems (decoding included), so
		// a hit needs no decoding at all.
		cacheable := c.cache != nil && len(raw) >= 64
		if cacheable {
			if defs, ok := c.cache.defs[raw]; ok {
				d.mergeDefs(defs)
				return
			}
			if defs, ok := sharedDefs.get(raw); ok {
				c.cache.putDefs(raw, defs)
				d.mergeDefs(defs)
				return
			}
		}
		val, ok := c.valueOf(attr, v)
		if !ok {
			return
		}
		// the list's definitions are merged among themselves, then into
		// the span's (the same as one by one)
		own := d.toolDefs
		d.toolDefs = nil
		n := len(c.problems)
		switch t := val.(type) {
		case []any:
			var elems []string
			if raw != "" {
				if elems = rawElems(raw); len(elems) != len(t) {
					elems = nil
				}
			}
			for i, it := range t {
				r := ""
				if elems != nil {
					r = elems[i]
				}
				add(attr, it, r)
			}
		case map[string]any:
			add(attr, t, raw)
		default:
			c.report(attr, "want an array of tool definitions, got %s", typeName(val))
		}
		defs := d.toolDefs
		d.toolDefs = own
		d.mergeDefs(defs)
		if cacheable && len(c.problems) == n {
			c.cache.putDefs(raw, defs)
			sharedDefs.put(raw, defs)
		}
	}
	list(genAIToolDefinitions)
	list(aiPromptTools)
	for _, it := range indexed(trees[flatOITools]) {
		if js := path(it, "tool", "json_schema"); js != nil {
			add(oiLLMToolsToolJSONSchema, js, "")
		}
	}
	for _, it := range indexed(trees[flatOLFunctions]) {
		if m, ok := it.(map[string]any); ok {
			add(olLLMRequestFunctions, m, "")
		}
	}
}

// rawOf is rawField of raw JSON text, "" when raw is.
func rawOf(raw, key string) string {
	if raw == "" {
		return ""
	}
	return rawField(raw, key)
}

// fieldKey is field, also returning the key of the value found.
func fieldKey(m map[string]any, keys ...string) (string, any) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return k, v
		}
	}
	return "", nil
}

// mergeDefs merges copies of defs into the span's tool definitions.
func (d *spanData) mergeDefs(defs []ToolDefinition) {
	if len(d.toolDefs) == 0 {
		d.toolDefs = append([]ToolDefinition(nil), defs...)
		return
	}
	for _, def := range defs {
		d.toolDefs = mergeDef(d.toolDefs, def)
	}
}

// mergeDef adds def unless a tool of that name is known; a known one gets
// its missing description or schema filled.
func mergeDef(defs []ToolDefinition, def ToolDefinition) []ToolDefinition {
	for i := range defs {
		if defs[i].Name == def.Name {
			if defs[i].Description == "" {
				defs[i].Description = def.Description
			}
			if defs[i].Parameters == nil {
				defs[i].Parameters, defs[i].RawParameters = def.Parameters, def.RawParameters
			}
			return defs
		}
	}
	return append(defs, def)
}

// readOwnIO reads an agent span's own input and output text.
func (d *spanData) readOwnIO(attrs pcommon.Map) {
	c := &d.c
	for _, k := range []string{oiInputValue, olEntityInput, aiPrompt} {
		if v, ok := c.attrValue(attrs, k); ok {
			if s := c.plainText(k, v, false, 0); s != "" {
				d.ownInput = s
				break
			}
		}
	}
	for _, k := range []string{oiOutputValue, olEntityOutput, aiResponseText} {
		if v, ok := c.attrValue(attrs, k); ok {
			if s := c.plainText(k, v, true, 0); s != "" {
				d.ownOutput = s
				break
			}
		}
	}
}

// readToolSpan reads the call a tool span made.
func (d *spanData) readToolSpan(attrs pcommon.Map) {
	c := &d.c
	span := d.ref.Span
	call := ToolCall{SpanID: span.SpanID(), Duration: d.duration()}
	call.Name = c.firstString(attrs, genAIToolName, oiToolName, aiToolCallName, oiToolCallFunctionName)
	if call.Name == "" && strAttr(attrs, olSpanKind) == "tool" {
		call.Name = c.attrString(attrs, olEntityName)
	}
	if call.Name == "" {
		name := span.Name()
		if n, ok := strings.CutPrefix(name, "execute_tool "); ok {
			name = n
		}
		call.Name = c.fixString("name", strings.TrimSuffix(name, ".tool"))
	}
	call.ID = c.firstString(attrs, genAIToolCallID, oiToolCallID, aiToolCallID, oiToolID)

	// arguments
	switch {
	case has(attrs, genAIToolCallArguments):
		d.toolArgs(attrs, &call, genAIToolCallArguments, false)
	case has(attrs, aiToolCallArgs):
		d.toolArgs(attrs, &call, aiToolCallArgs, false)
	case has(attrs, aiToolCallInput):
		d.toolArgs(attrs, &call, aiToolCallInput, false)
	case has(attrs, oiToolCallFunctionArguments):
		d.toolArgs(attrs, &call, oiToolCallFunctionArguments, false)
	case has(attrs, olEntityInput):
		d.toolArgs(attrs, &call, olEntityInput, true)
	case has(attrs, oiInputValue):
		d.toolArgs(attrs, &call, oiInputValue, false)
	}
	// result
	for _, k := range []struct {
		key    string
		unwrap bool
	}{{genAIToolCallResult, false}, {aiToolCallResult, true}, {aiToolCallOutput, true}, {olEntityOutput, true}, {oiOutputValue, false}} {
		v, ok := attrs.Get(k.key)
		if !ok {
			continue
		}
		call.HasResult = true
		if v.Type() == pcommon.ValueTypeStr {
			s := v.Str()
			if k.key == oiOutputValue && strings.Contains(s, `"lc"`) {
				if x, ok := c.decodeJSON(k.key, s); ok && lcToolMessage(x, &call) {
					call.Result = c.fixString(k.key, call.Result)
					break
				}
			}
			if k.unwrap && strings.HasPrefix(strings.TrimSpace(s), `"`) {
				if x, ok := c.decodeJSON(k.key, s); ok {
					if xs, ok := x.(string); ok {
						s = xs
					}
				}
			}
			call.Result = c.fixString(k.key, s)
		} else {
			call.Result = resultText(c.convert(k.key, v))
		}
		break
	}
	// errors
	if span.Status().Code() == ptrace.StatusCodeError {
		call.Errored = true
		call.ErrorMessage = c.fixString("status.message", span.Status().Message())
		if call.ErrorMessage == "" {
			call.ErrorMessage = c.attrString(attrs, "error.type")
		}
		if call.ErrorMessage == "" {
			evs := span.Events()
			for i := 0; i < evs.Len(); i++ {
				if evs.At(i).Name() == "exception" {
					ea := evs.At(i).Attributes()
					call.ErrorMessage = c.firstString(ea, "exception.message", "exception.type")
					break
				}
			}
		}
	}
	d.call = call
	// the tool span's own description and schema
	def := ToolDefinition{Name: call.Name, Description: c.firstString(attrs, genAIToolDescription, oiToolDescription)}
	if v, ok := attrs.Get(oiToolParameters); ok {
		if val, ok := c.valueOf(oiToolParameters, v); ok {
			if m, ok := val.(map[string]any); ok {
				def.Parameters = m
				if v.Type() == pcommon.ValueTypeStr {
					def.RawParameters = v.Str()
				}
			}
		}
	}
	if def.Name != "" && (def.Description != "" || def.Parameters != nil) {
		d.toolDefs = []ToolDefinition{def}
	}
}

func has(m pcommon.Map, key string) bool {
	_, ok := m.Get(key)
	return ok
}

// toolArgs reads a tool span's arguments; kwargs unwraps OpenLLMetry's
// {"args":[…],"kwargs":{…}}.
func (d *spanData) toolArgs(attrs pcommon.Map, call *ToolCall, key string, kwargs bool) {
	c := &d.c
	v, _ := attrs.Get(key)
	if v.Type() == pcommon.ValueTypeStr {
		c.setArguments(key, call, v.Str())
	} else {
		c.setArguments(key, call, c.convert(key, v))
	}
	// a LangChain ToolCall ({"name","args","id","type":"tool_call"}) as the
	// tool's input
	if a := call.Arguments; a != nil && a["type"] == "tool_call" {
		if args, ok := a["args"].(map[string]any); ok {
			if call.ID == "" {
				call.ID = str(a["id"])
			}
			call.Arguments, call.RawArguments = args, textOf(args)
		}
	}
	if kwargs && call.Arguments != nil {
		if kw, ok := call.Arguments["kwargs"].(map[string]any); ok {
			if _, hasArgs := call.Arguments["args"]; hasArgs || len(call.Arguments) == 1 {
				call.Arguments = kw
			}
		}
	}
}

// readDocuments reads retrieved documents.
func (d *spanData) readDocuments(attrs pcommon.Map, tree map[string]any) {
	c := &d.c
	add := func(attr string, v any) {
		m, ok := c.asObject(attr, v)
		if !ok {
			if s, ok := v.(string); ok {
				d.docs = append(d.docs, Document{Content: s})
				return
			}
			c.report(attr, "document: want an object, got %s", typeName(v))
			return
		}
		if inner, ok := m["document"].(map[string]any); ok {
			m = inner
		}
		doc := Document{ID: strField(m, "id"), Content: strField(m, "content", "text", "page_content")}
		switch s := m["score"].(type) {
		case float64:
			doc.Score, doc.HasScore = s, true
		case string:
			if f, err := parseFloat(s); err == nil {
				doc.Score, doc.HasScore = f, true
			} else {
				c.report(attr, "document score: want a number, got %q", s)
			}
		case nil:
		default:
			c.report(attr, "document score: want a number, got %s", typeName(s))
		}
		if md := m["metadata"]; md != nil {
			if mm, ok := c.asObject(attr, md); ok {
				doc.Metadata = mm
			}
		}
		d.docs = append(d.docs, doc)
	}
	if v, ok := c.attrValue(attrs, genAIRetrievalDocuments); ok {
		if arr, ok := v.([]any); ok {
			for _, it := range arr {
				add(genAIRetrievalDocuments, it)
			}
		} else {
			c.report(genAIRetrievalDocuments, "want an array, got %s", typeName(v))
		}
	}
	for _, it := range indexed(tree) {
		add(oiRetrievalDocuments, it)
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
