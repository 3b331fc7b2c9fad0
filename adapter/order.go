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
	used := make([]bool, len(requested))
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
	var slots []int
	for i, k := range match {
		if k >= 0 {
			slots = append(slots, i)
		}
	}
	if len(slots) < 2 {
		return
	}
	matched := make([]int, len(slots)) // indexes into calls, to sort by request
	copy(matched, slots)
	slices.SortStableFunc(matched, func(a, b int) int { return match[a] - match[b] })
	moved := make([]ToolCall, len(slots))
	for n, i := range matched {
		moved[n] = calls[i]
	}
	for n, i := range slots {
		calls[i] = moved[n]
	}
}
