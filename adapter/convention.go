package adapter

import "go.opentelemetry.io/collector/pdata/pcommon"

// A convention is one way instrumentations write GenAI data: the OTel GenAI
// semantic conventions, OpenInference, OpenLLMetry, the Vercel AI SDK, the
// operation-details log records joined to a span, and the older OTel event
// forms. Each lives in its own conv_*.go file, with its attribute keys;
// adding one is writing that file and putting it into conventions (one with
// flattened `prefix.N.…` keys also lists its prefixes in flatPrefixes,
// span.go, which are collected in one pass over the attributes).
type convention interface {
	// fields returns the attributes that carry each field, best first.
	// The readers try the keys of every convention, in conventions order,
	// then every convention's fallback keys.
	fields() (keys, fallback fieldTable)
	// kindKeys returns the attributes whose value says what a span is
	// (classify, IsGenAI), best first.
	kindKeys() []kindKey
	// fromSpan derives field f from what is not one of its keys (the
	// span's name, a kind attribute), when no key had it; "" when it
	// cannot.
	fromSpan(d *spanData, attrs pcommon.Map, f attrField) string
	// conversation fills the sides of the conversation still empty: the
	// input messages and system instructions when in, the output messages
	// when out.
	conversation(d *spanData, attrs pcommon.Map, trees flatTrees, in, out bool)
	// toolDefinitions adds the tools offered to the model (merged by name:
	// the first definition of a name wins, later ones fill what it lacks).
	toolDefinitions(d *spanData, attrs pcommon.Map, trees flatTrees)
	// documents adds a retrieval span's documents.
	documents(d *spanData, attrs pcommon.Map, trees flatTrees)
}

// conventions in order of precedence: where a span carries a value in more
// than one convention, the first one's is read.
var conventions = [...]convention{
	genAI{},
	openInference{},
	openLLMetry{},
	vercelAI{},
	logRecords{},
	spanEvents{},
	langfuse{},
}

// An attrField is a value the readers take from the first key that has it.
type attrField uint8

const (
	fieldModel attrField = iota
	fieldProvider
	fieldResponseID
	fieldConversationID // a conversation (session) id (docs/sessions.md)
	fieldAgentName
	fieldAgentNameOfAgent // read for agent spans only, after fieldAgentName
	fieldInputTokens
	fieldOutputTokens
	fieldTotalTokens
	fieldOwnInput  // an agent span's own input text
	fieldOwnOutput // an agent span's own output text
	fieldToolName
	fieldToolID
	fieldToolArgs
	fieldToolResult
	fieldToolDescription
	fieldToolParameters
	numFields
)

// A kindKey is an attribute whose value says what a span is: kind maps the
// value (kindOther when it says nothing).
type kindKey struct {
	name string
	kind func(v string) spanKind
}

// A fieldTable holds a convention's keys of each field.
type fieldTable [numFields][]key

// A key is an attribute that carries a field.
type key struct {
	name string
	opt  keyOpt
}

type keyOpt uint8

const (
	// optKwargs: tool arguments wrapped as {"args":[…],"kwargs":{…}}
	// (OpenLLMetry).
	optKwargs keyOpt = 1 << iota
	// optJSONString: a tool result that may be a JSON-encoded string
	// (Vercel AI SDK, OpenLLMetry).
	optJSONString
	// optLangChain: a tool result that may be a serialized LangChain
	// ToolMessage (OpenInference's LangChain instrumentation).
	optLangChain
)

// fieldKeys are the keys of each field over all conventions, in the order
// they are tried; fieldNames the same as attribute names.
var fieldKeys, fieldNames = collectKeys()

func collectKeys() (keys [numFields][]key, names [numFields][]string) {
	tables := make([][2]fieldTable, len(conventions))
	for i, cv := range conventions {
		tables[i][0], tables[i][1] = cv.fields()
	}
	for f := range attrField(numFields) {
		var fallback []key
		for _, t := range tables {
			keys[f] = append(keys[f], t[0][f]...)
			fallback = append(fallback, t[1][f]...)
		}
		keys[f] = append(keys[f], fallback...)
		for _, k := range keys[f] {
			names[f] = append(names[f], k.name)
		}
	}
	return keys, names
}

// first is the first non-empty string of field f.
func (d *spanData) first(attrs pcommon.Map, f attrField) string {
	kf := d.keyFilter(attrs)
	for _, k := range fieldNames[f] {
		if !kf.mayHave(k) {
			continue // not among the span's keys: no scan of them
		}
		if s := d.c.attrString(attrs, k); s != "" {
			return s
		}
	}
	return ""
}

// keyFilter is a 64-bit set of attribute keys, hashed by length and last
// byte: a key whose bit is not set is not among them. A span's is made
// once (attrs are the span's own attributes, unchanged while it is read),
// so the many convention keys a span lacks are not looked up one by one.
type keyFilter uint64

func keyBit(k string) keyFilter {
	if k == "" {
		return 1
	}
	return 1 << ((uint(len(k))*7 + uint(k[len(k)-1])) & 63)
}

func (f keyFilter) mayHave(k string) bool { return f&keyBit(k) != 0 }

// keyFilter returns the filter of the span's attributes attrs.
func (d *spanData) keyFilter(attrs pcommon.Map) keyFilter {
	if !d.keysRead {
		for k := range attrs.All() {
			d.keys |= keyBit(k)
		}
		d.keysRead = true
	}
	return d.keys
}

// derived is field f from the first convention that can derive it.
func (d *spanData) derived(attrs pcommon.Map, f attrField) string {
	for _, cv := range conventions {
		if s := cv.fromSpan(d, attrs, f); s != "" {
			return s
		}
	}
	return ""
}

// keysOf makes keys of attribute names.
func keysOf(names ...string) []key {
	keys := make([]key, len(names))
	for i, n := range names {
		keys[i] = key{name: n}
	}
	return keys
}

// noKeys, noFromSpan … are what a convention without such data embeds.
type (
	noKeys         struct{}
	noKindKeys     struct{}
	noFromSpan     struct{}
	noConversation struct{}
	noToolDefs     struct{}
	noDocuments    struct{}
)

func (noKeys) fields() (keys, fallback fieldTable)                                { return }
func (noKindKeys) kindKeys() []kindKey                                            { return nil }
func (noFromSpan) fromSpan(*spanData, pcommon.Map, attrField) string              { return "" }
func (noConversation) conversation(*spanData, pcommon.Map, flatTrees, bool, bool) {}
func (noToolDefs) toolDefinitions(*spanData, pcommon.Map, flatTrees)              {}
func (noDocuments) documents(*spanData, pcommon.Map, flatTrees)                   {}
