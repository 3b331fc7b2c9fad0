package adapter

import "go.opentelemetry.io/collector/pdata/pcommon"

// logRecords reads the gen_ai.client.inference.operation.details log
// records joined to a span (JoinEvents).
type logRecords struct {
	noKeys
	noKindKeys
	noFromSpan
	noDocuments
}

func (logRecords) conversation(d *spanData, _ pcommon.Map, _ flatTrees, in, out bool) {
	d.readDetails(in, out)
}

func (logRecords) toolDefinitions(d *spanData, _ pcommon.Map, _ flatTrees) {
	d.readDetailDefinitions()
}

// readDetails fills what the span's attributes lacked from its joined
// gen_ai.client.inference.operation.details records: input and output
// messages (each from the first record that has them), system
// instructions and tool definitions.
func (d *spanData) readDetails(in, out bool) {
	if len(d.ref.Events) == 0 {
		return
	}
	c := &d.c
	for _, lr := range d.ref.Events {
		if eventName(lr) != eventOperationDetails {
			continue
		}
		attrs := lr.Attributes()
		if in && len(d.input) == 0 {
			if v, ok := c.attrValue(attrs, genAIInputMessages); ok {
				d.input = c.parseMessages(eventOperationDetails+" gen_ai.input.messages", v, "user")
			}
		}
		if in && d.system == "" {
			if v, ok := c.attrValue(attrs, genAISystemInstructions); ok {
				d.system = c.systemInstructions(v)
			}
		}
		if out && len(d.output) == 0 {
			if v, ok := c.attrValue(attrs, genAIOutputMessages); ok {
				d.output = c.parseMessages(eventOperationDetails+" gen_ai.output.messages", v, "assistant")
			}
		}
	}
}

// readDetailDefinitions reads tool definitions from the joined
// operation-details records when the span itself offered none.
func (d *spanData) readDetailDefinitions() {
	if len(d.toolDefs) != 0 {
		return
	}
	var none flatTrees
	for _, lr := range d.ref.Events {
		if eventName(lr) != eventOperationDetails {
			continue
		}
		for _, cv := range conventions {
			if _, ok := cv.(logRecords); ok {
				break // the attribute conventions, read on the record
			}
			cv.toolDefinitions(d, lr.Attributes(), none)
		}
	}
}
