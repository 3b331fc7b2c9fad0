package adapter

import (
	"fmt"
	"sort"

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

func (t *trace) build() {
	// t.cases is sized once, at the first case: an llm case per LLM span,
	// an agent case per agent span (or one for the whole trace)
	llms, agents := 0, 0
	for i := range t.spans {
		switch t.spans[i].kind {
		case kindLLM:
			llms++
		case kindAgent:
			agents++
		}
	}
	t.caseCap = 0
	if t.opts.LLMCases {
		t.caseCap += llms
	}
	if t.opts.AgentCases {
		t.caseCap += max(agents, 1)
	}
	hasAgent := false
	var genaiBuf [64]int // the GenAI spans: on the stack for most traces
	genai := genaiBuf[:0]
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
	if t.cases == nil {
		t.cases = make([]Case, 0, t.caseCap)
	}
	t.cases = append(t.cases, c)
}

// byAnchor orders cases by anchor span (start, end, id), agent before llm.
type byAnchor struct{ t *trace }

func (s byAnchor) Len() int      { return len(s.t.cases) }
func (s byAnchor) Swap(a, b int) { s.t.cases[a], s.t.cases[b] = s.t.cases[b], s.t.cases[a] }
func (s byAnchor) Less(a, b int) bool {
	ia, ib := s.t.cases[a].SpanIndex, s.t.cases[b].SpanIndex
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
