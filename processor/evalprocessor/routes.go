package evalprocessor

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// One `eval` in several pipelines of the same signal (docs/contract.md
// §17). The collector builds one processor node per pipeline; the factory
// hands every node of one component id the same processor (one state: the
// held traces), and each node its own route: the index of its pipeline's
// next consumer. Every chunk held remembers the route it came in through,
// and goes on through it when its trace is released, so a span never
// changes pipeline. Routes are per signal: traces routes index traces,
// logs routes logs.

// route is the index of a pipeline's next consumer among those of its
// signal.
type route uint8

// maxRoutes bounds the pipelines of one signal that list one `eval`.
const maxRoutes = 256

// routes are the next consumers of the pipelines that list the processor.
// They are added while the collector builds its pipelines and fixed at
// Start; from then on they are only read.
type routes struct {
	id     component.ID
	mu     sync.Mutex
	traces []consumer.Traces
	logs   []consumer.Logs
}

// addRoute registers the next consumer of one more pipeline of a signal.
func addRoute[C any](rs *routes, list *[]C, next C, signal string) (route, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(*list) >= maxRoutes {
		return 0, fmt.Errorf("eval processor %q: listed in more than %d %s pipelines", rs.id, maxRoutes, signal)
	}
	*list = append(*list, next)
	return route(len(*list) - 1), nil
}

// addTraces and addLogs register the next consumer of one more traces
// (logs) pipeline.
func (rs *routes) addTraces(next consumer.Traces) (route, error) {
	return addRoute(rs, &rs.traces, next, "traces")
}

func (rs *routes) addLogs(next consumer.Logs) (route, error) {
	return addRoute(rs, &rs.logs, next, "logs")
}

// fix, at Start, takes the single next consumers a test (or an embedder)
// set directly as route 0. After Start the routes do not change.
func (rs *routes) fix(next consumer.Traces, nextLogs consumer.Logs) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.traces) == 0 && next != nil {
		rs.traces = []consumer.Traces{next}
	}
	if len(rs.logs) == 0 && nextLogs != nil {
		rs.logs = []consumer.Logs{nextLogs}
	}
}

// pick is route r's next consumer; a route restored from storage that no
// longer exists is route 0; ok is false when eval is in no pipeline of
// that signal.
func pick[C any](list []C, r route) (next C, ok bool) {
	switch {
	case int(r) < len(list):
		return list[r], true
	case len(list) > 0:
		return list[0], true
	}
	return next, false
}

// errNoPipeline is what sending to a signal eval is in no pipeline of
// returns (late results of a logs-only eval, say): dropped and counted.
var errNoPipeline = fmt.Errorf("eval processor: no pipeline of this signal lists it")

func (rs *routes) sendTraces(ctx context.Context, r route, td ptrace.Traces) error {
	next, ok := pick(rs.traces, r)
	if !ok {
		return errNoPipeline
	}
	return next.ConsumeTraces(ctx, td)
}

func (rs *routes) sendLogs(ctx context.Context, r route, ld plog.Logs) error {
	next, ok := pick(rs.logs, r)
	if !ok {
		return errNoPipeline
	}
	return next.ConsumeLogs(ctx, ld)
}

// routed is the released data of one trace (or group of traces) for one
// route: spans (ptrace.Traces) or log records (plog.Logs), how many, and
// the storage keys of the chunks in it.
type routed[D pdata] struct {
	route route
	data  D
	n     int
	keys  []string
	// shared lists the resources data's ResourceSpans (ResourceLogs)
	// share (sharedres.go).
	shared []*sharedResource
}

type routedTraces = routed[ptrace.Traces]

// tracePart is one held chunk of spans: the copy, the route it came
// through, and its storage key.
type tracePart struct {
	td     ptrace.Traces
	shared []*sharedResource // td's shared resources (sharedres.go)
	route  route
	spans  int
	key    string
}

// logPartHeld is one held chunk of log records.
type logPartHeld struct {
	ld     plog.Logs
	shared []*sharedResource // ld's shared resources (sharedres.go)
	route  route
	count  int
	key    string
}

func (p tracePart) routed() routed[ptrace.Traces] {
	return routed[ptrace.Traces]{route: p.route, data: p.td, n: p.spans, keys: keysOfKey(p.key), shared: p.shared}
}

func (p logPartHeld) routed() routed[plog.Logs] {
	return routed[plog.Logs]{route: p.route, data: p.ld, n: p.count, keys: keysOfKey(p.key), shared: p.shared}
}

func keysOfKey(k string) []string {
	if k == "" {
		return nil
	}
	return []string{k}
}

// pdata is the data of either signal the release path moves.
type pdata interface{ ptrace.Traces | plog.Logs }

// moveAll appends src's resources to dst's (src is left empty).
func moveAll[D pdata](dst, src D) {
	switch d := any(dst).(type) {
	case ptrace.Traces:
		any(src).(ptrace.Traces).ResourceSpans().MoveAndAppendTo(d.ResourceSpans())
	case plog.Logs:
		any(src).(plog.Logs).ResourceLogs().MoveAndAppendTo(d.ResourceLogs())
	}
}

// copyAll appends copies of src's resources to dst's (src is only read).
func copyAll[D pdata](dst, src D) {
	switch d := any(dst).(type) {
	case ptrace.Traces:
		rss := any(src).(ptrace.Traces).ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rss.At(i).CopyTo(d.ResourceSpans().AppendEmpty())
		}
	case plog.Logs:
		rls := any(src).(plog.Logs).ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			rls.At(i).CopyTo(d.ResourceLogs().AppendEmpty())
		}
	}
}

// readOnly tells whether d is marked read-only (a fan-out shares it).
func readOnly[D pdata](d D) bool {
	switch d := any(d).(type) {
	case ptrace.Traces:
		return d.IsReadOnly()
	case plog.Logs:
		return d.IsReadOnly()
	}
	return false
}

// merge adds src to o (of the same route): its keys, and its data unless
// it has none (a chunk emptied by a redelivery check gives only its key);
// spans under the resource and scope o has for them (merge.go).
func (o *routed[D]) merge(src routed[D]) {
	o.keys = append(o.keys, src.keys...)
	if src.n == 0 {
		return
	}
	if td, ok := any(o.data).(ptrace.Traces); ok && o.n > 0 {
		o.shared = moveTraces(td, o.shared, any(src.data).(ptrace.Traces), src.shared)
	} else if o.n > 0 {
		o.shared = moveLogs(any(o.data).(plog.Logs), o.shared, any(src.data).(plog.Logs), src.shared)
	} else {
		o.data, o.shared = src.data, src.shared
	}
	o.n += src.n
}

// byRoute merges a released trace's chunks into one batch per route
// (nearly always one).
func byRoute[D pdata, P interface{ routed() routed[D] }](parts []P) []routed[D] {
	var out []routed[D]
	for _, pt := range parts {
		r := pt.routed()
		i := 0
		for i < len(out) && out[i].route != r.route {
			i++
		}
		if i == len(out) {
			out = append(out, routed[D]{route: r.route})
		}
		out[i].merge(r)
	}
	return out
}
