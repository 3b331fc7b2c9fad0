package adapter

import (
	"bytes"
	"cmp"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The trace graph: spans indexed by id, the parent tree (cycles broken,
// missing parents made top-level), children lists and the time order
// every case is built in.

type trace struct {
	spans []spanData
	// the children of span i are kids[first[i]:first[i+1]], in span order
	kids, first []int
	root        int // earliest span without parent; -1 when none
	cases       []Case
	caseCap     int      // the most cases the trace can have
	extra       []string // structural problems not tied to a span's parsing
	opts        Options
	cache       traceCache
	// full reads every span wholly when first needed (both levels are
	// built, so nearly everything is needed); otherwise spans are read
	// part by part, as far as the cases need them.
	full bool
	// byID, buf, members, stack and state are scratch space kept with t
	// in tracePool.
	byID           map[pcommon.SpanID]int
	buf            []int
	members, stack []int
	state          []uint8
	reqs           []ToolCall // cleared after each use
}

// tracePool keeps traces between Adapt calls so that the per-span records
// (spanData) and the scratch space are not allocated for every trace.
// release clears everything a trace read before it goes back: the pool
// keeps no span, no case data and no problem alive.
var tracePool = sync.Pool{New: func() any { return new(trace) }}

// maxPooledSpans bounds the traces kept in tracePool; maxPooledCacheEntries,
// the traceCache maps kept with them.
const (
	maxPooledSpans        = 256
	maxPooledCacheEntries = 32
)

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
	clear(t.reqs[:cap(t.reqs)]) // a failed quickRequests leaves calls there
	// the caches' maps are kept when small (clearing a map costs its
	// size, however few entries it still holds)
	cache := traceCache{json: t.cache.json, defs: t.cache.defs, flat: t.cache.flat, keyBuf: t.cache.keyBuf}
	cache.flat.reset() // a span's reading stopped midway leaves values
	if len(cache.json) > maxPooledCacheEntries {
		cache.json = nil
	}
	if len(cache.defs) > maxPooledCacheEntries {
		cache.defs = nil
	}
	clear(cache.json)
	clear(cache.defs)
	*t = trace{spans: t.spans[:0], byID: t.byID, buf: t.buf, members: t.members[:0], stack: t.stack[:0], state: t.state[:0], cache: cache, reqs: t.reqs[:0]}
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
	state := grow(t.state, len(t.spans)) // 0 new, 1 on path, 2 done
	clear(state)
	stack := t.stack[:0]
	defer func() { t.state, t.stack = state[:0], stack[:0] }()
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

// descendants lists every span below i (iteratively; no recursion). The
// list is t's scratch space: valid until the next call.
func (t *trace) descendants(i int) []int {
	out := grow(t.members, len(t.spans))[:0]
	stack := append(grow(t.stack, len(t.spans))[:0], t.children(i)...)
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, j)
		stack = append(stack, t.children(j)...)
	}
	t.members, t.stack = out[:0], stack[:0]
	return out
}

// grow returns s with length n, reallocated only when its capacity is
// short (the contents are not kept).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
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
