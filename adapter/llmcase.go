package adapter

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
