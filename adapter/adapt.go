package adapter

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Adapt builds the llm and agent cases of one trace's spans. It never
// panics: what it cannot read (malformed JSON, wrong types, invalid UTF-8,
// huge or deeply nested values, parent cycles, missing parents) is returned
// as problems, also appended to the affected cases, and the cases are built
// from what was readable. Cases are ordered by their anchor span's start
// time, then end time, then span id.
func Adapt(spans []SpanRef) (cases []Case, problems []string) {
	return AdaptWith(spans, Options{LLMCases: true, AgentCases: true})
}

// Options selects the case levels AdaptWith builds.
type Options struct {
	// LLMCases builds one llm case per LLM span.
	LLMCases bool
	// AgentCases builds the agent cases.
	AgentCases bool
	// SkipConversation leaves every case's Input, Output, Messages and
	// SystemInstructions empty, for evaluators that read none of them: the
	// spans' conversations (input and output messages, system
	// instructions, an agent span's own input and output values) are then
	// not decoded, except as far as the cases' ToolCalls need them. Those
	// need an LLM span's output messages for an llm case's calls, and, for
	// an agent case, the LLM spans' (and, failing those, the anchor's)
	// output messages when the run has no tool span, when it has two or
	// more (they are ordered by the model's requests), or when a tool span
	// lacks its call id or arguments (filled from the model's requests);
	// without tool spans, the tool results of the requested calls that
	// have an id also need the input messages of the run's LLM spans and
	// anchor. Every other field of every case is what it is without
	// SkipConversation; Problems may list fewer problems (of what was not
	// read).
	SkipConversation bool
	// Attributes copies each case's anchor span attributes into
	// Case.Attributes (for the custom evaluators, which expose them); off,
	// the copy is not made.
	Attributes bool
}

// AdaptWith is Adapt building only the case levels opts selects. With one
// level only, each span's attributes are read only as far as the cases of
// that level need them (e.g. for agent cases alone, only the conversation
// of the last LLM span of a run is decoded, and the calls the model
// requested only when tool spans do not say everything or two or more
// tool spans need ordering), so problems in
// attributes no case needed are not reported. The cases built are the
// same as Adapt's of that level, but for their Problems.
func AdaptWith(spans []SpanRef, opts Options) (cases []Case, problems []string) {
	defer func() {
		if r := recover(); r != nil {
			problems = append(problems, fmt.Sprintf("adapter: internal error: %v", r))
		}
	}()
	if len(spans) == 0 || (!opts.LLMCases && !opts.AgentCases) {
		return nil, nil
	}
	t := newTrace(spans)
	t.opts = opts
	t.full = opts.LLMCases && opts.AgentCases && !opts.SkipConversation
	t.build()
	cases, problems = t.cases, t.problems()
	t.release()
	return cases, problems
}

type trace struct {
	spans []spanData
	// the children of span i are kids[first[i]:first[i+1]], in span order
	kids, first []int
	root        int // earliest span without parent; -1 when none
	cases       []Case
	anchors     []int    // anchor span of each case
	extra       []string // structural problems not tied to a span's parsing
	opts        Options
	cache       traceCache
	// full reads every span wholly when first needed (both levels are
	// built, so nearly everything is needed); otherwise spans are read
	// part by part, as far as the cases need them.
	full bool
	// byID and buf are scratch space kept with t in tracePool.
	byID map[pcommon.SpanID]int
	buf  []int
}

// tracePool keeps traces between Adapt calls so that the per-span records
// (spanData) and the scratch space are not allocated for every trace.
// release clears everything a trace read before it goes back: the pool
// keeps no span, no case data and no problem alive.
var tracePool = sync.Pool{New: func() any { return new(trace) }}

// maxPooledSpans bounds the traces kept in tracePool.
const maxPooledSpans = 256

func newTrace(refs []SpanRef) *trace {
	n := len(refs)
	t := tracePool.Get().(*trace)
	if cap(t.spans) >= n {
		t.spans = t.spans[:n]
	} else {
		t.spans = make([]spanData, n)
	}
	t.root = -1
	if t.byID == nil {
		t.byID = make(map[pcommon.SpanID]int, n)
	}
	byID := t.byID
	for i, ref := range refs {
		d := &t.spans[i]
		d.ref = ref
		d.c = newSpanCtx(ref)
		d.c.cache = &t.cache
		d.start, d.end = ref.Span.StartTimestamp(), ref.Span.EndTimestamp()
		d.parent = -1
		id := ref.Span.SpanID()
		if id.IsEmpty() {
			d.c.report("span_id", "span has no id")
			continue
		}
		if j, dup := byID[id]; dup {
			// A span that names the shared id as its own parent cannot be
			// the others' parent: the other span takes the id.
			if t.spans[j].ref.Span.ParentSpanID() == id && ref.Span.ParentSpanID() != id {
				byID[id] = i
				t.spans[j].c.report("span_id", "duplicate span id, and the span is its own parent; children attach to the other span with it")
				continue
			}
			d.c.report("span_id", "duplicate span id; children attach to the first span with it")
			continue
		}
		byID[id] = i
	}
	var chainRoots []int // OpenInference CHAIN roots, agents unless an AGENT span exists
	otherAgent := false
	for i := range t.spans {
		d := &t.spans[i]
		pid := d.ref.Span.ParentSpanID()
		if pid.IsEmpty() {
			d.kind = classify(d.ref.Span, false)
			if d.kind == kindOther && classify(d.ref.Span, true) == kindAgent {
				d.kind = kindAgent
				chainRoots = append(chainRoots, i)
			} else if d.kind == kindAgent {
				otherAgent = true
			}
			if t.root < 0 || t.before(i, t.root) {
				t.root = i
			}
			continue
		}
		d.kind = classify(d.ref.Span, false)
		otherAgent = otherAgent || d.kind == kindAgent
		p, ok := byID[pid]
		if !ok {
			d.c.report("parent_span_id", "parent span %s is not in the trace; treated as top-level", pid)
			continue
		}
		if p == i {
			d.c.report("parent_span_id", "span is its own parent; treated as top-level")
			continue
		}
		d.parent = p
	}
	// A CHAIN root is the agent of LangChain / LangGraph runs, which have no
	// AGENT span; when an AGENT span exists, the chain only wraps it.
	if otherAgent {
		for _, i := range chainRoots {
			t.spans[i].kind = kindOther
		}
	}
	t.breakCycles()
	t.index()
	return t
}

// release clears t and returns it to tracePool (unless it is large).
func (t *trace) release() {
	if cap(t.spans) > maxPooledSpans {
		return
	}
	clear(t.spans)
	clear(t.byID)
	*t = trace{spans: t.spans[:0], byID: t.byID, buf: t.buf}
	tracePool.Put(t)
}

// index lays out the children of each span in one slice (a counting sort
// by parent).
func (t *trace) index() {
	n := len(t.spans)
	if cap(t.buf) < 2*n+1 {
		t.buf = make([]int, 2*n+1)
	}
	buf := t.buf[:2*n+1]
	clear(buf)
	t.first, t.kids = buf[:n+1], buf[n+1:]
	// first[p+1] counts p's children, then, summed up, is where they end
	for i := range t.spans {
		if p := t.spans[i].parent; p >= 0 {
			t.first[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		t.first[i] += t.first[i-1]
	}
	total := t.first[n]
	// filling each parent's slots from their end, backwards, keeps span
	// order and leaves first[p+1] where p's children start
	for i := n - 1; i >= 0; i-- {
		if p := t.spans[i].parent; p >= 0 {
			t.first[p+1]--
			t.kids[t.first[p+1]] = i
		}
	}
	copy(t.first[:n], t.first[1:])
	t.first[n] = total
	t.kids = t.kids[:total]
}

// children returns the children of span i, in span order.
func (t *trace) children(i int) []int { return t.kids[t.first[i]:t.first[i+1]] }

// breakCycles makes every span whose ancestry loops top-level.
func (t *trace) breakCycles() {
	state := make([]uint8, len(t.spans)) // 0 new, 1 on path, 2 done
	var stack []int
	for i := range t.spans {
		stack = stack[:0]
		j := i
		for j >= 0 && state[j] == 0 {
			state[j] = 1
			stack = append(stack, j)
			j = t.spans[j].parent
		}
		if j >= 0 && state[j] == 1 { // cycle: j … end of stack
			k := len(stack) - 1
			for ; k >= 0 && stack[k] != j; k-- {
			}
			for _, s := range stack[k:] {
				d := &t.spans[s]
				d.c.report("parent_span_id", "parent cycle; span treated as top-level")
				d.parent = -1
			}
		}
		for _, s := range stack {
			state[s] = 2
		}
	}
}

// before orders spans by start, then end, then span id, then appearance.
func (t *trace) before(a, b int) bool {
	x, y := &t.spans[a], &t.spans[b]
	if x.start != y.start {
		return x.start < y.start
	}
	if x.end != y.end {
		return x.end < y.end
	}
	xi, yi := x.ref.Span.SpanID(), y.ref.Span.SpanID()
	if c := bytes.Compare(xi[:], yi[:]); c != 0 {
		return c < 0
	}
	return a < b
}

// byTime sorts span indexes by start, then position in the export. JS
// exporters give millisecond start times, so siblings tie often, and the
// end time says only which one finished first, not which one was meant
// first (docs/tool-call-order.md).
func (t *trace) byTime(idx []int) {
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(t.spans[a].start, t.spans[b].start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

func (t *trace) data(i int) *spanData {
	d := &t.spans[i]
	d.parse()
	return d
}

// need returns span i with parts p read (all of it in full mode).
func (t *trace) need(i int, p parts) *spanData {
	d := &t.spans[i]
	if t.full {
		d.parse()
	} else {
		d.parsePart(p)
	}
	return d
}

// descendants lists every span below i (iteratively; no recursion).
func (t *trace) descendants(i int) []int {
	out := make([]int, 0, len(t.spans))
	stack := append(make([]int, 0, len(t.spans)), t.children(i)...)
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, j)
		stack = append(stack, t.children(j)...)
	}
	return out
}

func (t *trace) build() {
	hasAgent := false
	var genai []int
	for i := range t.spans {
		switch t.spans[i].kind {
		case kindLLM:
			if t.opts.LLMCases {
				t.add(t.llmCase(i), i)
			}
			genai = append(genai, i)
		case kindAgent:
			hasAgent = true
			genai = append(genai, i)
		case kindTool, kindRetrieval:
			genai = append(genai, i)
		}
	}
	if !t.opts.AgentCases {
		sort.Stable(byAnchor{t})
		return
	}
	for i := range t.spans {
		if t.spans[i].kind == kindAgent {
			t.add(t.agentCase(i, t.descendants(i)), i)
		}
	}
	if !hasAgent {
		hasLLMOrTool := false
		for _, i := range genai {
			if k := t.spans[i].kind; k == kindLLM || k == kindTool {
				hasLLMOrTool = true
				break
			}
		}
		if hasLLMOrTool {
			anchor := t.root
			if anchor < 0 {
				anchor = genai[0]
				for _, i := range genai[1:] {
					if t.before(i, anchor) {
						anchor = i
					}
				}
			}
			var members []int
			for _, i := range genai {
				if i != anchor {
					members = append(members, i)
				}
			}
			t.add(t.agentCase(anchor, members), anchor)
		}
	}
	sort.Stable(byAnchor{t})
}

func (t *trace) add(c Case, anchor int) {
	c.SpanIndex = anchor
	t.cases = append(t.cases, c)
	t.anchors = append(t.anchors, anchor)
}

// byAnchor orders cases by anchor span (start, end, id), agent before llm.
type byAnchor struct{ t *trace }

func (s byAnchor) Len() int { return len(s.t.cases) }
func (s byAnchor) Swap(a, b int) {
	s.t.cases[a], s.t.cases[b] = s.t.cases[b], s.t.cases[a]
	s.t.anchors[a], s.t.anchors[b] = s.t.anchors[b], s.t.anchors[a]
}
func (s byAnchor) Less(a, b int) bool {
	ia, ib := s.t.anchors[a], s.t.anchors[b]
	if ia != ib {
		return s.t.before(ia, ib)
	}
	return s.t.cases[a].Level < s.t.cases[b].Level
}

// problems returns every span's problems, in span order, without repeats.
func (t *trace) problems() []string {
	var out []string
	seen := map[string]bool{}
	for i := range t.spans {
		for _, p := range t.spans[i].c.problems {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return append(out, t.extra...)
}

func (t *trace) baseCase(level Level, i int) Case {
	d := &t.spans[i]
	sp := d.ref.Span
	c := Case{
		Level:    level,
		TraceID:  sp.TraceID(),
		SpanID:   sp.SpanID(),
		SpanName: d.c.fixString("name", sp.Name()),
	}
	if t.opts.Attributes {
		c.Attributes = sp.Attributes().AsRaw()
	}
	c.Latency, c.LatencyInvalid = d.latency()
	if v, ok := d.ref.Resource().Attributes().Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
		c.ServiceName = d.c.fixString("service.name", v.Str())
	}
	return c
}

// ancestorAgent returns the nearest agent span above i, or -1.
func (t *trace) ancestorAgent(i int) int {
	for j, n := t.spans[i].parent, 0; j >= 0 && n <= len(t.spans); j, n = t.spans[j].parent, n+1 {
		if t.spans[j].kind == kindAgent {
			return j
		}
	}
	return -1
}

func (t *trace) llmCase(i int) Case {
	var d *spanData
	c := t.baseCase(LevelLLM, i)
	if t.opts.SkipConversation {
		d = t.need(i, partMeta|partOutput|partDefs)
	} else {
		d = t.need(i, partMeta|partConv|partDefs)
		c.Messages = concat(d.input, d.output)
		c.Input = lastUser(d.input)
		c.Output = finalAssistant(d.output)
		c.SystemInstructions = d.system
	}
	c.ToolCalls = requestedCalls(d.output)
	c.ToolDefinitions = d.toolDefs
	c.LLMCalls = 1
	c.Model, c.Provider, c.ResponseID = d.model, d.provider, d.responseID
	c.AgentName, c.ConversationID = d.agentName, d.conversation
	c.Usage = d.usage
	if a := t.ancestorAgent(i); a >= 0 && (c.AgentName == "" || c.ConversationID == "") {
		ad := t.need(a, partMeta)
		if c.AgentName == "" {
			c.AgentName = ad.agentName
		}
		if c.ConversationID == "" {
			c.ConversationID = ad.conversation
		}
	}
	c.Documents = t.priorDocuments(i)
	c.Problems = appendUnique(nil, d.c.problems)
	t.expectations(&c, i)
	return c
}

// priorDocuments are the documents of retrieval spans under the same agent
// (or trace) that ended before the LLM span started.
func (t *trace) priorDocuments(i int) []Document {
	agent := t.ancestorAgent(i)
	var docs []Document
	for j := range t.spans {
		if t.spans[j].kind != kindRetrieval || t.spans[j].end > t.spans[i].start {
			continue
		}
		if t.ancestorAgent(j) != agent {
			continue
		}
		docs = append(docs, t.need(j, partDocs).docs...)
	}
	return docs
}

func (t *trace) agentCase(anchor int, members []int) Case {
	skip := t.opts.SkipConversation
	var a *spanData
	if skip {
		a = t.need(anchor, partMeta|partDefs|partTool)
	} else {
		a = t.data(anchor)
	}
	c := t.baseCase(LevelAgent, anchor)
	t.byTime(members)
	var llms, tools []int
	for _, j := range members {
		switch t.spans[j].kind {
		case kindLLM:
			t.need(j, partMeta)
			llms = append(llms, j)
		case kindTool:
			t.need(j, partTool)
			tools = append(tools, j)
		case kindRetrieval:
			c.Documents = append(c.Documents, t.need(j, partDocs).docs...)
		default:
			if t.full {
				t.data(j)
			}
		}
	}
	c.LLMCalls = len(llms)
	last := -1
	if len(llms) > 0 {
		last = llms[len(llms)-1]
	}
	if !skip {
		t.agentConversation(&c, a, llms)
	}
	// tool calls: the model's requests are read only when needed
	requested := func() []ToolCall {
		var out []ToolCall
		for _, j := range llms {
			out = append(out, requestedCalls(t.need(j, partOutput).output)...)
		}
		return out
	}
	if len(tools) > 0 {
		c.ToolCalls = make([]ToolCall, 0, len(tools))
		incomplete := false
		for _, j := range tools {
			call := t.spans[j].call
			incomplete = incomplete || call.ID == "" || call.Arguments == nil
			c.ToolCalls = append(c.ToolCalls, call)
		}
		// the model's requests fill what tool spans lack and give the
		// order of two or more calls (docs/tool-call-order.md)
		if incomplete || len(tools) > 1 {
			srcs := llms
			if a.kind == kindLLM { // no agent span: the case is anchored on an LLM call
				srcs = append([]int{anchor}, llms...)
			}
			var match []int
			if !incomplete && !t.full {
				// every tool span has its id and arguments: the requests'
				// ids are enough, read without decoding when possible, and
				// only from LLM calls that started before the last tool
				// span did (a later one, such as the final answer,
				// requested none of them; srcs are in time order)
				last := t.spans[tools[0]].start
				for _, j := range tools {
					last = max(last, t.spans[j].start)
				}
				n := len(srcs)
				for n > 0 && t.spans[srcs[n-1]].start > last {
					n--
				}
				if req, ok := t.quickRequests(srcs[:n]); ok {
					if m := matchRequests(c.ToolCalls, req); allMatched(m) {
						match = m
					}
				}
			}
			if match == nil {
				var req []ToolCall
				for _, j := range srcs {
					req = append(req, requestedCalls(t.need(j, partOutput).output)...)
				}
				match = matchRequests(c.ToolCalls, req)
				fillFromRequests(c.ToolCalls, req, match)
			}
			orderByRequest(c.ToolCalls, match)
		}
	} else {
		c.ToolCalls = requested()
		if len(c.ToolCalls) == 0 {
			c.ToolCalls = requestedCalls(t.need(anchor, partOutput).output)
		}
		t.fillResults(c.ToolCalls, anchor, llms)
	}
	// tool definitions
	defs := append([]ToolDefinition(nil), a.toolDefs...)
	for _, j := range llms {
		for _, def := range t.need(j, partDefs).toolDefs {
			defs = mergeDef(defs, def)
		}
	}
	for _, j := range tools {
		for _, def := range t.spans[j].toolDefs {
			defs = mergeDef(defs, def)
		}
	}
	c.ToolDefinitions = defs
	// metadata
	c.Model, c.Provider = a.model, a.provider
	if len(llms) > 0 {
		first := &t.spans[llms[0]]
		if c.Model == "" {
			c.Model = first.model
		}
		if c.Provider == "" {
			c.Provider = first.provider
		}
	}
	c.ResponseID = a.responseID
	if c.ResponseID == "" && last >= 0 {
		c.ResponseID = t.spans[last].responseID
	}
	c.AgentName, c.ConversationID = a.agentName, a.conversation
	for _, j := range llms {
		if c.AgentName != "" && c.ConversationID != "" {
			break
		}
		if c.AgentName == "" && a.kind != kindAgent {
			c.AgentName = t.spans[j].agentName
		}
		if c.ConversationID == "" {
			c.ConversationID = t.spans[j].conversation
		}
	}
	if c.AgentName == "" && a.kind != kindAgent {
		if p := t.ancestorAgent(anchor); p >= 0 {
			c.AgentName = t.need(p, partMeta).agentName
		}
	}
	// The LLM calls' own counts, summed, are the run's usage; the agent
	// span's counts only when its LLM calls carry none. (Vercel AI SDK 5
	// puts the last step's usage on its root span, not the run's.)
	llmUsage := false
	for _, j := range llms {
		if u := t.spans[j].usage; u.HasInputTokens || u.HasOutputTokens || u.HasTotalTokens {
			llmUsage = true
			break
		}
	}
	if !llmUsage {
		c.Usage = a.usage
	} else {
		for _, j := range llms {
			if c.Usage.add(t.spans[j].usage) {
				// Bad input like any other: a problem, on the run's span.
				a.c.report("gen_ai.usage.*", "not a valid count: %s", usageOverflow)
			}
		}
	}
	problems := appendUnique(nil, a.c.problems)
	for _, j := range members {
		problems = appendUnique(problems, t.spans[j].c.problems)
	}
	c.Problems = problems
	t.expectations(&c, anchor)
	return c
}

// agentConversation fills an agent case's conversation: the anchor's, else
// the last LLM span's; input and output from the latest span that has them.
func (t *trace) agentConversation(c *Case, a *spanData, llms []int) {
	conv := func(j int) *spanData { return t.need(j, partConv) }
	switch {
	case len(a.input) > 0:
		c.Messages = concat(a.input, a.output)
		c.SystemInstructions = a.system
	case len(llms) > 0:
		l := conv(llms[len(llms)-1])
		c.Messages = concat(l.input, l.output)
		c.SystemInstructions = l.system
	}
	if c.SystemInstructions == "" && a.system != "" {
		c.SystemInstructions = a.system
	}
	c.Input = lastUser(c.Messages)
	if c.Input == "" {
		c.Input = a.ownInput
	}
	for k := len(llms) - 1; k >= 0 && c.Input == ""; k-- {
		c.Input = lastUser(conv(llms[k]).input)
	}
	c.Output = a.ownOutput
	if c.Output == "" {
		c.Output = finalAssistant(a.output)
	}
	for k := len(llms) - 1; k >= 0 && c.Output == ""; k-- {
		c.Output = finalAssistant(conv(llms[k]).output)
	}
}

// fillResults gives requested calls the results found in later tool
// messages (matched by call id) of the anchor's and the LLM spans' input.
func (t *trace) fillResults(calls []ToolCall, anchor int, llms []int) {
	withID := false
	for i := range calls {
		withID = withID || calls[i].ID != ""
	}
	if !withID {
		return
	}
	a := t.need(anchor, partInput)
	results := map[string]string{}
	collect := func(msgs []Message) {
		for _, m := range msgs {
			if m.Role == "tool" && m.ToolCallID != "" {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	collect(a.input)
	for _, j := range llms {
		collect(t.need(j, partInput).input)
	}
	for i := range calls {
		if r, ok := results[calls[i].ID]; ok && calls[i].ID != "" {
			calls[i].Result, calls[i].HasResult = r, true
		}
	}
}

func concat(a, b []Message) []Message {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]Message, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func appendUnique(dst, src []string) []string {
	if len(src) == 0 {
		return dst
	}
	if len(dst)+len(src) > 32 {
		seen := make(map[string]struct{}, len(dst)+len(src))
		for _, x := range dst {
			seen[x] = struct{}{}
		}
		for _, x := range src {
			if _, dup := seen[x]; !dup {
				seen[x] = struct{}{}
				dst = append(dst, x)
			}
		}
		return dst
	}
	for _, s := range src {
		dup := false
		for _, x := range dst {
			if x == s {
				dup = true
				break
			}
		}
		if !dup {
			dst = append(dst, s)
		}
	}
	return dst
}

// expectSet is what one span's eval.* attributes say, read once.
type expectSet struct {
	e        Expectations
	present  [7]bool // tool_calls, output, documents, tasks, context, constraints, goal
	problems []string
}

func (t *trace) expectOf(i int) *expectSet {
	d := &t.spans[i]
	if d.expect != nil {
		return d.expect
	}
	es := &expectSet{}
	d.expect = es
	attrs := d.ref.Span.Attributes()
	sc := &d.c
	n0 := len(sc.problems)
	e := &es.e
	get := func(slot int, key string) (pcommon.Value, bool) {
		v, ok := attrs.Get(key)
		if !ok || v.Type() == pcommon.ValueTypeEmpty {
			return v, false
		}
		es.present[slot] = true
		return v, true
	}
	if v, ok := get(0, "eval.expected.tool_calls"); ok {
		const k = "eval.expected.tool_calls"
		if val, ok := sc.valueOf(k, v); ok {
			if s, isStr := val.(string); isStr && strings.TrimSpace(s) == "" {
				val = []any{}
			}
			calls, err := ParseExpectedCalls(val)
			if err != nil {
				sc.report(k, "%v", err)
			} else {
				e.ToolCalls, e.HasToolCalls = calls, true
			}
		}
	}
	if v, ok := get(1, "eval.expected.output"); ok {
		const k = "eval.expected.output"
		if v.Type() == pcommon.ValueTypeStr {
			s := sc.fixString(k, v.Str())
			e.Output, e.HasOutput = s, true
			if x := decodeQuiet(s); x != nil {
				if _, isStr := x.(string); !isStr {
					e.Output = x
				}
			}
		} else {
			e.Output, e.HasOutput = sc.convert(k, v), true
		}
	}
	if v, ok := get(2, "eval.expected.documents"); ok {
		const k = "eval.expected.documents"
		if val, ok := sc.valueOf(k, v); ok {
			if arr, isArr := val.([]any); isArr {
				e.Documents, e.HasDocuments = arr, true
			} else {
				sc.report(k, "want a JSON array, got %s", typeName(val))
			}
		}
	}
	if v, ok := get(3, "eval.tasks"); ok {
		e.Tasks, e.HasTasks = sc.stringList("eval.tasks", v)
	}
	if v, ok := get(4, "eval.context"); ok {
		e.Context, e.HasContext = sc.stringList("eval.context", v)
	}
	if v, ok := get(5, "eval.constraints"); ok {
		e.Constraints = sc.scalarText("eval.constraints", v)
	}
	if v, ok := get(6, "eval.conversation_goal"); ok {
		e.ConversationGoal = sc.scalarText("eval.conversation_goal", v)
	}
	es.problems = sc.problems[n0:len(sc.problems):len(sc.problems)]
	return es
}

// expectations reads eval.* from the anchor span, else the trace's root
// span, attribute by attribute.
func (t *trace) expectations(c *Case, anchor int) {
	own := t.expectOf(anchor)
	c.Expected = own.e
	c.Problems = appendUnique(c.Problems, own.problems)
	if t.root < 0 || t.root == anchor {
		return
	}
	root := t.expectOf(t.root)
	e, r := &c.Expected, &root.e
	used := false
	if !own.present[0] && root.present[0] {
		e.ToolCalls, e.HasToolCalls, used = r.ToolCalls, r.HasToolCalls, true
	}
	if !own.present[1] && root.present[1] {
		e.Output, e.HasOutput, used = r.Output, r.HasOutput, true
	}
	if !own.present[2] && root.present[2] {
		e.Documents, e.HasDocuments, used = r.Documents, r.HasDocuments, true
	}
	if !own.present[3] && root.present[3] {
		e.Tasks, e.HasTasks, used = r.Tasks, r.HasTasks, true
	}
	if !own.present[4] && root.present[4] {
		e.Context, e.HasContext, used = r.Context, r.HasContext, true
	}
	if !own.present[5] && root.present[5] {
		e.Constraints, used = r.Constraints, true
	}
	if !own.present[6] && root.present[6] {
		e.ConversationGoal, used = r.ConversationGoal, true
	}
	if used {
		c.Problems = appendUnique(c.Problems, root.problems)
	}
}

// stringList reads a JSON array of strings, a string slice, or a plain
// string (one item).
func (c *spanCtx) stringList(key string, v pcommon.Value) ([]string, bool) {
	val, ok := c.valueOf(key, v)
	if !ok {
		return nil, false
	}
	switch t := val.(type) {
	case string:
		return []string{t}, true
	case []any:
		out := make([]string, 0, len(t))
		for _, it := range t {
			s, isStr := it.(string)
			if !isStr {
				c.report(key, "want strings, got %s", typeName(it))
				s = textOf(it)
			}
			out = append(out, s)
		}
		return out, true
	}
	c.report(key, "want a string or an array of strings, got %s", typeName(val))
	return nil, false
}

func (c *spanCtx) scalarText(key string, v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return c.fixString(key, v.Str())
	}
	c.report(key, "want a string, got %s", strings.ToLower(v.Type().String()))
	return textOf(c.convert(key, v))
}
