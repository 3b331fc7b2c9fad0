package evalprocessor

import (
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// A held span waits seconds for the rest of its trace, so what held spans
// take is most of the processor's memory (docs/production.md, "Memory").
// The receiver decodes every attribute key, span name and value into a
// string of its own, though a trace repeats the same keys on every span
// and an agent sends the same tool definitions on every LLM call: on the
// benchmark's agent traces the repeats are a fifth of a held span.
// Interning points each repeat at one canonical copy (canonical, below).
// The spans' content is unchanged.

// maxRekeyedAttrs bounds the maps whose keys are interned: a key cannot be
// replaced in place, so the map is rebuilt, and pdata checks each key it
// puts against those already in (quadratic in the map's size).
const maxRekeyedAttrs = 16

// internTable holds the canonical copies every interner hands out. It is
// bounded: past maxTableEntries strings or maxTableBytes it starts over
// (held spans keep the copies they point at; a later repeat gets a new
// one), so keys or values that never repeat cannot grow it. Not
// unique.Make: its table keeps a copy only while a unique.Handle to it
// lives, so each garbage collection would start new canonical copies.
type internTable struct {
	mu    sync.RWMutex
	m     map[string]string
	bytes int
}

const (
	maxTableEntries = 1 << 15
	maxTableBytes   = 8 << 20
)

var canonical = &internTable{m: make(map[string]string)}

func (t *internTable) intern(s string) string {
	if len(s) > maxTableBytes/16 {
		return s // one string would take a sixteenth of the table
	}
	t.mu.RLock()
	c, ok := t.m[s]
	t.mu.RUnlock()
	if ok {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) >= maxTableEntries || t.bytes+len(s) > maxTableBytes {
		clear(t.m)
		t.bytes = 0
	}
	// A copy: s may be part of a larger string (cut out by a processor
	// before this one), which the table would otherwise keep.
	c = strings.Clone(s)
	t.m[c] = c
	t.bytes += len(c)
	return c
}

// An interner is a cache in front of canonical for one request's walk (a
// chunker's): a request repeats the same few keys and names on every
// span, and a local map answers them without the table's lock, with
// whether values under a key repeat (adapter.RepeatingValue) in the same
// lookup. The interners are kept on a free list (not a sync.Pool, which
// every garbage collection empties: refilling a cache per request cost
// more than it saved); one that reaches maxInternerEntries (a stream of
// keys that never repeat) starts over.
type interner struct {
	known map[string]internedString
	// shapes holds the interned keys of the last map of each length: the
	// spans of one kind list the same keys in the same order, and
	// comparing with the key at the same position costs a fifth of a map
	// lookup.
	shapes [maxShapeAttrs + 1][]internedString
	// src and spare are the maps attrs rebuilds a map with (spare by
	// length: an empty slice with room for that many entries).
	src   pcommon.Map
	spare [maxRekeyedAttrs + 1]pcommon.Map
}

func newInterner() *interner {
	in := &interner{known: make(map[string]internedString, 64), src: pcommon.NewMap()}
	for i := range in.spare {
		in.spare[i] = pcommon.NewMap()
	}
	return in
}

type internedString struct {
	s string
	// repeatingValues: as a key, its string values repeat.
	repeatingValues bool
}

const (
	// maxShapeAttrs bounds the maps whose shape is kept (larger ones look
	// every key up).
	maxShapeAttrs      = 64
	maxInternerEntries = 1024
	// maxCachedLen: longer strings (tool definitions) go to canonical
	// directly, so a cache holds at most maxInternerEntries short strings.
	maxCachedLen = 256
)

// freeInterners holds the idle interners: as many as requests are walked
// at once, at most its capacity. What they cache is bounded with it: 16
// interners of at most maxInternerEntries strings of maxCachedLen, 4 MB at
// worst, most of it the table's copies.
var freeInterners = make(chan *interner, 16)

func getInterner() *interner {
	select {
	case in := <-freeInterners:
		return in
	default:
		return newInterner()
	}
}

func (in *interner) release() {
	select {
	case freeInterners <- in:
	default:
	}
}

func (in *interner) lookup(s string) internedString {
	if e, ok := in.known[s]; ok {
		return e
	}
	e := internedString{s: canonical.intern(s)}
	if len(s) <= maxCachedLen {
		if len(in.known) >= maxInternerEntries {
			clear(in.known) // keys that do not repeat: start over
		}
		e.repeatingValues = adapter.RepeatingValue(s)
		in.known[e.s] = e
	}
	return e
}

func (in *interner) str(s string) string { return in.lookup(s).s }

// span interns what the spans of a trace repeat: the name, the attribute
// keys and repeating values (adapter.RepeatingValue), and the same in its
// events.
func (in *interner) span(s ptrace.Span) {
	s.SetName(in.str(s.Name()))
	if attrs := s.Attributes(); attrs.Len() <= maxRekeyedAttrs || adapter.IsGenAI(s) {
		in.attrs(attrs, false)
	}
	// else: a large map's keys stay as they are (attrs), and the values
	// it would intern are those of GenAI conventions' keys: an HTTP or
	// database span with 20-40 attributes would have each key read for
	// none. IsGenAI reads the keys' lengths, not their bytes.
	events := s.Events()
	for i := 0; i < events.Len(); i++ {
		e := events.At(i)
		e.SetName(in.str(e.Name()))
		in.attrs(e.Attributes(), false)
	}
}

// logRecord is span for a log record (its body, the event's content, is
// left alone).
func (in *interner) logRecord(lr plog.LogRecord) {
	lr.SetEventName(in.str(lr.EventName()))
	in.attrs(lr.Attributes(), false)
}

// resource interns a held resource's keys and every string value: a
// service's resource is the same on all its requests.
func (in *interner) resource(r pcommon.Resource) {
	in.attrs(r.Attributes(), true)
}

// attrs interns m's keys (maps of up to maxRekeyedAttrs) and the string
// values, and strings in array values, of keys whose values repeat (all
// keys', with allValues).
func (in *interner) attrs(m pcommon.Map, allValues bool) {
	n := m.Len()
	if n == 0 {
		return
	}
	var shape *[]internedString
	if n <= maxShapeAttrs {
		shape = &in.shapes[n]
	}
	if n > maxRekeyedAttrs {
		// Only the values are interned. Production spans (HTTP, database,
		// and GenAI spans with their request parameters) have 20-40
		// attributes, most without a value that repeats: the shape
		// answers for each key without a map lookup.
		i := 0
		for k, v := range m.All() {
			if key := in.keyAt(shape, i, k); key.repeatingValues || allValues {
				in.value(v)
			}
			i++
		}
		return
	}
	// m's entries go into src, and are moved (values, with interned keys)
	// into dst: the slice left from the last map of n entries rebuilt
	// (spare), or a new one. m then takes dst's slice, and src's, emptied,
	// is the spare for the next map of n entries: no allocation per map
	// once the spares are there, and each map keeps a slice of the size
	// the receiver gave a map of its length.
	src, dst := in.src, in.spare[n]
	m.MoveTo(src)
	dst.EnsureCapacity(n)
	i := 0
	for k, v := range src.All() {
		key := in.keyAt(shape, i, k)
		i++
		if key.repeatingValues || allValues {
			in.value(v)
		}
		into, exists := dst.GetOrPutEmpty(key.s)
		if exists {
			// A key sent twice (pdata keeps what was sent): m stays as
			// it was, its values moved back to each key's first entry.
			for k, v := range dst.All() {
				if orig, ok := src.Get(k); ok {
					v.MoveTo(orig)
				}
			}
			dst.RemoveIf(removeAll)
			src.MoveTo(m)
			return
		}
		v.MoveTo(into)
	}
	dst.MoveTo(m)
	src.RemoveIf(removeAll) // clears the entries, keeps the slice
	src.MoveTo(dst)
}

// keyAt interns k, the key at position i of a map whose shape (the keys
// of the last map of its length) is shape; nil: none kept.
func (in *interner) keyAt(shape *[]internedString, i int, k string) internedString {
	if shape == nil {
		return in.lookup(k)
	}
	if i < len(*shape) && (*shape)[i].s == k {
		return (*shape)[i]
	}
	key := in.lookup(k)
	if i < len(*shape) {
		(*shape)[i] = key
	} else {
		*shape = append(*shape, key)
	}
	return key
}

func removeAll(string, pcommon.Value) bool { return true }

// value interns a string value, or the strings of an array value.
func (in *interner) value(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		v.SetStr(in.str(v.Str()))
	case pcommon.ValueTypeSlice:
		items := v.Slice()
		for i := 0; i < items.Len(); i++ {
			if it := items.At(i); it.Type() == pcommon.ValueTypeStr {
				it.SetStr(in.str(it.Str()))
			}
		}
	}
}
