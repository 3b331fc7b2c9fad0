package adapter

import (
	"reflect"
	"slices"
)

// Tool-call order (docs/tool-call-order.md). JS SDKs give millisecond start
// times while durations stay exact, and frameworks run a turn's tool calls
// in parallel, so sibling tool spans often share a start time and the one
// that ends first is not the one the model asked for first. The order the
// model requested the calls in is the only one that does not depend on
// timing, so:
//
//  1. tool spans are first put in time order: start time, ties broken by
//     position in the export (never by end time);
//  2. each tool span is matched to a call the model requested (the LLM
//     spans of the run in time order, each one's calls in output order):
//     by call id first, then, for spans without a matching id, by name
//     (and arguments when both sides have them), first unused request first;
//  3. the matched calls are put in request order into the positions the
//     matched spans held in step 1; unmatched calls keep their positions.

// matchRequests returns, for each call, the index of the requested call it
// answers, or -1.
func matchRequests(calls, requested []ToolCall) []int {
	match := make([]int, len(calls))
	for i := range match {
		match[i] = -1
	}
	if len(requested) == 0 {
		return match
	}
	var usedBuf [32]bool // on the stack for the usual few requests
	used := usedBuf[:0]
	if len(requested) <= len(usedBuf) {
		used = usedBuf[:len(requested)]
	} else {
		used = make([]bool, len(requested))
	}
	// ids first, so that a span without an id cannot take the request of a
	// later span that names it by id
	for i := range calls {
		if calls[i].ID == "" {
			continue
		}
		for k := range requested {
			if !used[k] && requested[k].ID == calls[i].ID {
				match[i], used[k] = k, true
				break
			}
		}
	}
	for i := range calls {
		call := &calls[i]
		if match[i] >= 0 {
			continue
		}
		for k := range requested {
			r := &requested[k]
			if used[k] || r.Name != call.Name {
				continue
			}
			if call.ID != "" && r.ID != "" {
				continue // different ids: not this request
			}
			if call.Arguments != nil && r.Arguments != nil && !reflect.DeepEqual(call.Arguments, r.Arguments) {
				continue
			}
			match[i], used[k] = k, true
			break
		}
	}
	return match
}

// fillFromRequests fills missing call ids and arguments of tool-span calls
// from the requests they were matched to.
func fillFromRequests(calls, requested []ToolCall, match []int) {
	for i, k := range match {
		if k < 0 {
			continue
		}
		call, r := &calls[i], &requested[k]
		if call.ID == "" {
			call.ID = r.ID
		}
		if call.Arguments == nil && r.Arguments != nil {
			call.Arguments = r.Arguments
			if call.RawArguments == "" {
				call.RawArguments = r.RawArguments
			}
		}
	}
}

// orderByRequest reorders calls (in time order) so that the calls matched
// to requests follow the request order, in the slots the matched calls
// held; unmatched calls stay where they are.
func orderByRequest(calls []ToolCall, match []int) {
	var slotsBuf, matchedBuf [16]int // on the stack for the usual few calls
	slots := slotsBuf[:0]
	for i, k := range match {
		if k >= 0 {
			slots = append(slots, i)
		}
	}
	if len(slots) < 2 || slices.IsSortedFunc(slots, func(a, b int) int { return match[a] - match[b] }) {
		return // already in request order, the usual case
	}
	matched := append(matchedBuf[:0], slots...) // indexes into calls, to sort by request
	slices.SortStableFunc(matched, func(a, b int) int { return match[a] - match[b] })
	moved := make([]ToolCall, len(slots))
	for n, i := range matched {
		moved[n] = calls[i]
	}
	for n, i := range slots {
		calls[i] = moved[n]
	}
}

// quickRequests lists the calls the spans in llms requested when every
// tool span carries its call id, so that ids (and names) are all the order
// needs: a span whose output is already read gives its calls; otherwise
// its gen_ai.output.messages JSON string is scanned for the ids and names
// of its tool_call parts without decoding the rest (the messages of a
// conversation-free run are not decoded). The calls are appended to calls.
// ok is false when a span's output is in any other shape; the caller then
// decodes the outputs.
func (t *trace) quickRequests(llms []int, calls []ToolCall) (_ []ToolCall, ok bool) {
	for _, j := range llms {
		d := &t.spans[j]
		if d.done&partOutput != 0 {
			calls = append(calls, requestedCalls(d.output)...)
			continue
		}
		var ok bool
		if calls, ok = quickOTelCalls(strAttr(d.ref.Span.Attributes(), genAIOutputMessages), calls); !ok {
			return nil, false
		}
	}
	return calls, true
}

// quickOTelCalls appends the tool_call parts ({"type":"tool_call","id",
// "name",…}) of an OTel GenAI messages JSON string to calls. Only messages
// made of role, parts, finish_reason and name are read: anything else
// (content, tool_calls, a part without a string id or name) may hold calls
// only the decoder reads, so ok is false. One pass over s: this runs for
// every LLM call of every agent run with two or more tool spans.
func quickOTelCalls(s string, calls []ToolCall) (_ []ToolCall, ok bool) {
	i := rawSkipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return nil, false
	}
	i = rawSkipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return nil, false // no message
	}
	for {
		if i, calls, ok = quickMessage(s, i, calls); !ok {
			return nil, false
		}
		i = rawSkipSpace(s, i)
		if i >= len(s) {
			return nil, false
		}
		switch s[i] {
		case ',':
			i = rawSkipSpace(s, i+1)
		case ']':
			return calls, true
		default:
			return nil, false
		}
	}
}

// rawObject calls field with each key of the JSON object at s[i] and the
// index of its value, which returns the index just after the value; it
// returns the index just after the object.
func rawObject(s string, i int, field func(key string, v int) (int, bool)) (int, bool) {
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i = rawSkipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		d := jsonDecoder{s: s, i: i}
		k, ok := d.str()
		if !ok {
			return 0, false
		}
		i = rawSkipSpace(s, d.i)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		if i, ok = field(k, rawSkipSpace(s, i+1)); !ok || i < 0 {
			return 0, false
		}
		i = rawSkipSpace(s, i)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i = rawSkipSpace(s, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// quickMessage reads the message object at s[i] for quickOTelCalls: its
// keys must be among role, parts, finish_reason and name, and parts (the
// last one, as decoding keeps) an array.
func quickMessage(s string, i int, calls []ToolCall) (int, []ToolCall, bool) {
	base, hasParts := len(calls), false
	end, ok := rawObject(s, i, func(key string, v int) (int, bool) {
		switch key {
		case "role", "finish_reason", "name":
			return rawSkipValue(s, v), true
		case "parts":
			hasParts = true
			calls = calls[:base] // a repeated key: the last one counts
			var ok bool
			v, calls, ok = quickParts(s, v, calls)
			return v, ok
		}
		return 0, false
	})
	return end, calls, ok && hasParts
}

// quickParts appends the tool calls of the parts array at s[i].
func quickParts(s string, i int, calls []ToolCall) (int, []ToolCall, bool) {
	if i >= len(s) || s[i] != '[' {
		return 0, nil, false
	}
	i = rawSkipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return i + 1, calls, true
	}
	for {
		if i < len(s) && s[i] != '{' {
			// not an object: no type, not a call
			if i = rawSkipValue(s, i); i < 0 {
				return 0, nil, false
			}
		} else {
			var typ, id, name string
			var idOK, nameOK, ok bool
			i, ok = rawObject(s, i, func(key string, v int) (int, bool) {
				end := rawSkipValue(s, v)
				if end < 0 {
					return 0, false
				}
				switch key {
				case "type":
					typ, _ = rawString(s[v:end])
				case "id":
					id, idOK = rawString(s[v:end])
				case "name":
					name, nameOK = rawString(s[v:end])
				}
				return end, true
			})
			if !ok {
				return 0, nil, false
			}
			switch typ {
			case "tool_call", "tool-call", "tool_use", "function_call":
				if !idOK || !nameOK || id == "" || name == "" {
					return 0, nil, false
				}
				calls = append(calls, ToolCall{ID: id, Name: name})
			}
		}
		i = rawSkipSpace(s, i)
		if i >= len(s) {
			return 0, nil, false
		}
		switch s[i] {
		case ',':
			i = rawSkipSpace(s, i+1)
		case ']':
			return i + 1, calls, true
		default:
			return 0, nil, false
		}
	}
}

// rawString decodes the raw JSON text of a string value.
func rawString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	d := jsonDecoder{s: raw}
	s, ok := d.str()
	return s, ok && d.i == len(raw)
}

// allMatched reports whether every call was matched to a request.
func allMatched(match []int) bool {
	for _, k := range match {
		if k < 0 {
			return false
		}
	}
	return true
}
