package adapter

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// GenAI content events. The official instrumentations (Python
// opentelemetry-instrumentation-openai-v2, google-genai, vertexai; JS
// @opentelemetry/instrumentation-openai) put chat content in log records
// linked to the LLM span by trace and span id, not on the span. See
// docs/logs.md.
const (
	eventSystemMessage    = "gen_ai.system.message"
	eventUserMessage      = "gen_ai.user.message"
	eventAssistantMessage = "gen_ai.assistant.message"
	eventToolMessage      = "gen_ai.tool.message"
	eventChoice           = "gen_ai.choice"
	// eventOperationDetails carries the content in attributes
	// (gen_ai.input.messages, gen_ai.output.messages,
	// gen_ai.system_instructions, gen_ai.tool.definitions); one record may
	// hold only the input and another only the output of the same call.
	eventOperationDetails = "gen_ai.client.inference.operation.details"

	// attrEventName is where older SDKs put the event name.
	attrEventName = "event.name"
)

// eventName is a log record's event name: the eventName field, else the
// `event.name` attribute (older Python Events API, JS
// @opentelemetry/instrumentation-openai for Chat Completions).
func eventName(lr plog.LogRecord) string {
	if n := lr.EventName(); n != "" {
		return n
	}
	if v, ok := lr.Attributes().Get(attrEventName); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// isGenAIEventName reports whether name is one of the GenAI content events
// the adapter reads.
func isGenAIEventName(name string) bool {
	switch name {
	case eventSystemMessage, eventUserMessage, eventAssistantMessage, eventToolMessage, eventChoice, eventOperationDetails:
		return true
	}
	return false
}

// IsGenAIEvent reports whether lr is a GenAI content event.
func IsGenAIEvent(lr plog.LogRecord) bool { return isGenAIEventName(eventName(lr)) }

// JoinEvents attaches the GenAI content records of one trace to its spans
// (a record identical to one already attached, as a resent request gives,
// is attached once):
// a record goes to the span with its span id; a record without a span id
// (it has only its trace) goes to the trace's LLM span when there is
// exactly one. Records of other kinds are ignored. It returns how many
// GenAI records found no span. spans is edited in place (Events); the
// records are referenced, not copied.
func JoinEvents(spans []SpanRef, records []plog.LogRecord) (unjoined int) {
	if len(records) == 0 {
		return 0
	}
	byID := make(map[pcommon.SpanID]int, len(spans))
	for i := range spans {
		byID[spans[i].Span.SpanID()] = i
	}
	// seen finds an identical record already attached to the same span in
	// constant time (by a hash of what hasRecord compares): joining stays
	// linear in the records, however many one span has.
	type slot struct {
		span int
		h    uint64
	}
	var seen map[slot][]plog.LogRecord
	onlyLLM := -2 // -2: not looked for yet; -1: none or several
	for _, lr := range records {
		if !IsGenAIEvent(lr) {
			continue
		}
		i, ok := -1, false
		if sid := lr.SpanID(); !sid.IsEmpty() {
			i, ok = byID[sid]
		} else {
			if onlyLLM == -2 {
				onlyLLM = soleLLMSpan(spans)
			}
			i, ok = onlyLLM, onlyLLM >= 0
		}
		if !ok {
			unjoined++
			continue
		}
		if seen == nil {
			seen = make(map[slot][]plog.LogRecord, len(records))
		}
		if _, done := seen[slot{span: i, h: 0}]; !done {
			// the span's own events (span events read earlier) count too
			seen[slot{span: i, h: 0}] = nil
			for _, e := range spans[i].Events {
				k := slot{span: i, h: recordHash(e) | 1}
				seen[k] = append(seen[k], e)
			}
		}
		k := slot{span: i, h: recordHash(lr) | 1} // never 0: 0 marks the span as indexed
		if hasRecord(seen[k], lr) {
			continue
		}
		seen[k] = append(seen[k], lr)
		spans[i].Events = append(spans[i].Events, lr)
	}
	return unjoined
}

// recordHash hashes what hasRecord compares: timestamps, event name, body
// and attributes (maps in any order).
func recordHash(lr plog.LogRecord) uint64 {
	h := uint64(14695981039346656037)
	h = mixHash(h, uint64(lr.Timestamp()))
	h = mixHash(h, uint64(lr.ObservedTimestamp()))
	h = hashString(h, lr.EventName())
	h = hashValue(h, lr.Body())
	return mixHash(h, hashMap(lr.Attributes()))
}

func mixHash(h, v uint64) uint64 {
	h ^= v
	h *= 1099511628211
	h ^= h >> 29
	return h
}

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mixHash(h, uint64(len(s)))
}

func hashMap(m pcommon.Map) uint64 {
	var sum uint64 // order-free: Equal ignores the order of keys
	m.Range(func(k string, v pcommon.Value) bool {
		sum += hashValue(hashString(7, k), v)
		return true
	})
	return sum
}

func hashValue(h uint64, v pcommon.Value) uint64 {
	h = mixHash(h, uint64(v.Type()))
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return hashString(h, v.Str())
	case pcommon.ValueTypeInt:
		return mixHash(h, uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return mixHash(h, uint64(int64(v.Double()*1e6)))
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return mixHash(h, 1)
		}
		return mixHash(h, 2)
	case pcommon.ValueTypeBytes:
		return hashString(h, string(v.Bytes().AsRaw()))
	case pcommon.ValueTypeMap:
		return mixHash(h, hashMap(v.Map()))
	case pcommon.ValueTypeSlice:
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			h = hashValue(h, sl.At(i))
		}
		return mixHash(h, uint64(sl.Len()))
	}
	return h
}

// hasRecord says whether an identical record is already in evs: a client
// that resends a request (normal OTLP behaviour after a lost response)
// must not repeat the conversation.
func hasRecord(evs []plog.LogRecord, lr plog.LogRecord) bool {
	for _, e := range evs {
		if e.Timestamp() == lr.Timestamp() && e.ObservedTimestamp() == lr.ObservedTimestamp() &&
			e.EventName() == lr.EventName() && e.Body().Equal(lr.Body()) && e.Attributes().Equal(lr.Attributes()) {
			return true
		}
	}
	return false
}

func soleLLMSpan(spans []SpanRef) int {
	found := -1
	for i := range spans {
		if classify(spans[i].Span, false) == kindLLM {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// GroupLogsByTrace groups the records of ld by trace id, in order of
// appearance. Records without a trace id are left out.
func GroupLogsByTrace(ld plog.Logs) map[pcommon.TraceID][]plog.LogRecord {
	out := map[pcommon.TraceID][]plog.LogRecord{}
	ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
		if id := lr.TraceID(); !id.IsEmpty() {
			out[id] = append(out[id], lr)
		}
	})
	return out
}

// ForEachLogRecord calls f for every record of ld, in order, with its
// resource and scope.
func ForEachLogRecord(ld plog.Logs, f func(plog.LogRecord, plog.ResourceLogs, plog.ScopeLogs)) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				f(lrs.At(k), rl, sl)
			}
		}
	}
}

// eventView is one GenAI event, carried as a span event or as a log record.
type eventView struct {
	name  string
	attrs pcommon.Map
	// body is the log record's body; empty for span events (whose body,
	// when any, is the `body` attribute).
	body pcommon.Value
}

// events lists the span's own events, then its joined log records, each
// with its GenAI event name ("" when it is not one).
func (d *spanData) events() []eventView {
	evs := d.ref.Span.Events()
	out := make([]eventView, 0, evs.Len()+len(d.ref.Events))
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		name := ev.Name()
		if n := strAttr(ev.Attributes(), attrEventName); n != "" && !hasGenAIPrefix(name) {
			name = n
		}
		out = append(out, eventView{name: name, attrs: ev.Attributes(), body: pcommon.NewValueEmpty()})
	}
	for _, lr := range d.ref.Events {
		out = append(out, eventView{name: eventName(lr), attrs: lr.Attributes(), body: lr.Body()})
	}
	return out
}

func hasGenAIPrefix(s string) bool { return len(s) > 7 && s[:7] == genAIPrefix }
