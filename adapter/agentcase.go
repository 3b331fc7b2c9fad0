package adapter

// An agent case is one agent run: the anchor span (the agent span, or,
// without one, the trace's root) and the spans below it. agentCase builds
// it in steps: members sorted into LLM calls, tool spans and documents;
// then, each a helper below, the conversation; the tool calls; the tool
// definitions; the metadata (model, provider, response, agent name,
// conversation id); the usage; the problems; the expectations.

// agentRun is an agent case's spans, sorted by kind, in time order. The
// anchor's data goes to the helpers beside it, not in it: escape analysis
// is not field-sensitive, and what the helpers keep of the anchor would
// move llms and tools to the heap.
type agentRun struct {
	anchor int
	llms   []int // LLM call spans
	tools  []int // tool spans
}

func (t *trace) agentCase(anchor int, members []int) Case {
	var a *spanData
	if t.opts.SkipConversation {
		a = t.need(anchor, partMeta|partDefs|partTool)
	} else {
		a = t.data(anchor)
	}
	c := t.baseCase(LevelAgent, anchor)
	// The members sorted by kind, in time order. (Kept here, in local
	// variables, not in a helper or in run's fields: the compiler keeps the
	// appends of local slices that do not escape on the stack.)
	var llms, tools []int
	t.byTime(members)
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
	run := agentRun{anchor: anchor, llms: llms, tools: tools}
	c.LLMCalls = len(run.llms)
	if !t.opts.SkipConversation {
		t.agentConversation(&c, a, run.llms)
	}
	t.agentToolCalls(&c, a, run)
	c.ToolDefinitions = t.agentToolDefinitions(a, run)
	t.agentMetadata(&c, a, run)
	t.agentUsage(&c, a, run)
	problems := appendUnique(nil, a.c.problems)
	for _, j := range members {
		problems = appendUnique(problems, t.spans[j].c.problems)
	}
	c.Problems = problems
	t.expectations(&c, anchor)
	return c
}

// agentToolCalls fills c.ToolCalls: the tool spans' calls, completed and
// ordered by the model's requests where needed; without tool spans, the
// calls the model requested, with the results found in tool messages.
func (t *trace) agentToolCalls(c *Case, a *spanData, run agentRun) {
	if len(run.tools) == 0 {
		for _, j := range run.llms {
			c.ToolCalls = append(c.ToolCalls, requestedCalls(t.need(j, partOutput).output)...)
		}
		if len(c.ToolCalls) == 0 {
			c.ToolCalls = requestedCalls(t.need(run.anchor, partOutput).output)
		}
		t.fillResults(c.ToolCalls, run.anchor, run.llms)
		return
	}
	c.ToolCalls = make([]ToolCall, 0, len(run.tools))
	incomplete := false
	for _, j := range run.tools {
		call := t.spans[j].call
		incomplete = incomplete || call.ID == "" || call.Arguments == nil
		c.ToolCalls = append(c.ToolCalls, call)
	}
	// the model's requests fill what tool spans lack and give the
	// order of two or more calls (docs/tool-call-order.md)
	if incomplete || len(run.tools) > 1 {
		t.orderToolCalls(c.ToolCalls, a.kind, run, incomplete)
	}
}

// orderToolCalls matches the tool spans' calls with the model's requests,
// fills what the spans lack from them and orders the calls as requested.
func (t *trace) orderToolCalls(calls []ToolCall, anchorKind spanKind, run agentRun, incomplete bool) {
	srcs := run.llms
	if anchorKind == kindLLM { // no agent span: the case is anchored on an LLM call
		srcs = append([]int{run.anchor}, run.llms...)
	}
	var match []int
	if !incomplete && !t.full {
		match = t.quickMatch(calls, run.tools, srcs)
	}
	if match == nil {
		var req []ToolCall
		for _, j := range srcs {
			req = append(req, requestedCalls(t.need(j, partOutput).output)...)
		}
		match = matchRequests(calls, req)
		fillFromRequests(calls, req, match)
	}
	orderByRequest(calls, match)
}

// quickMatch matches calls when every tool span has its id and arguments:
// the requests' ids are enough, read without decoding when possible, and
// only from LLM calls that started before the last tool span did (a later
// one, such as the final answer, requested none of them; srcs are in time
// order). It returns nil when not every call matched that way.
func (t *trace) quickMatch(calls []ToolCall, tools, srcs []int) []int {
	last := t.spans[tools[0]].start
	for _, j := range tools {
		last = max(last, t.spans[j].start)
	}
	n := len(srcs)
	for n > 0 && t.spans[srcs[n-1]].start > last {
		n--
	}
	// the requests go in t's scratch space (ids and names only)
	req, ok := t.quickRequests(srcs[:n], t.reqs[:0])
	if !ok {
		return nil
	}
	m := matchRequests(calls, req)
	clear(req)
	t.reqs = req[:0]
	if allMatched(m) {
		return m
	}
	return nil
}

// agentToolDefinitions merges the tool definitions of the anchor, the LLM
// calls and the tool spans.
func (t *trace) agentToolDefinitions(a *spanData, run agentRun) []ToolDefinition {
	// the spans' lists are shared (read only) until a merge changes them:
	// most often every LLM call offers the same cached list
	shared := false
	defs := mergeDefList(nil, &shared, a.toolDefs)
	for _, j := range run.llms {
		defs = mergeDefList(defs, &shared, t.need(j, partDefs).toolDefs)
	}
	for _, j := range run.tools {
		defs = mergeDefList(defs, &shared, t.spans[j].toolDefs)
	}
	return defs
}

// agentMetadata fills the model, provider and response id (the anchor's,
// else the first, resp. last LLM call's), the agent name and the
// conversation id (the anchor's, else the LLM calls', else, for a case
// not anchored on an agent span, the nearest agent ancestor's name).
func (t *trace) agentMetadata(c *Case, a *spanData, run agentRun) {
	llms := run.llms
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
	if c.ResponseID == "" && len(llms) > 0 {
		c.ResponseID = t.spans[llms[len(llms)-1]].responseID
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
		if p := t.ancestorAgent(run.anchor); p >= 0 {
			c.AgentName = t.need(p, partMeta).agentName
		}
	}
}

// agentUsage sums the LLM calls' own counts into the run's usage; the
// agent span's counts count only when its LLM calls carry none. (Vercel AI
// SDK 5 puts the last step's usage on its root span, not the run's.)
func (t *trace) agentUsage(c *Case, a *spanData, run agentRun) {
	llmUsage := false
	for _, j := range run.llms {
		if u := t.spans[j].usage; u.HasInputTokens || u.HasOutputTokens || u.HasTotalTokens {
			llmUsage = true
			break
		}
	}
	if !llmUsage {
		c.Usage = a.usage
		return
	}
	for _, j := range run.llms {
		if c.Usage.add(t.spans[j].usage) {
			// Bad input like any other: a problem, on the run's span.
			a.c.report("gen_ai.usage.*", "not a valid count: %s", usageOverflow)
		}
	}
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
