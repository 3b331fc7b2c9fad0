package evalprocessor

import (
	"context"
	"fmt"

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
// changes pipeline. Routes are per signal: traces routes index tracesOut,
// logs routes logsOut.

// route is the index of a pipeline's next consumer among those of its
// signal.
type route uint8

// maxRoutes bounds the pipelines of one signal that list one `eval`.
const maxRoutes = 256

// addTracesRoute registers the next consumer of one more traces pipeline.
func (p *evalProcessor) addTracesRoute(next consumer.Traces) (route, error) {
	p.routesMu.Lock()
	defer p.routesMu.Unlock()
	if len(p.tracesOut) >= maxRoutes {
		return 0, fmt.Errorf("eval processor %q: listed in more than %d traces pipelines", p.id, maxRoutes)
	}
	p.tracesOut = append(p.tracesOut, next)
	return route(len(p.tracesOut) - 1), nil
}

// addLogsRoute registers the next consumer of one more logs pipeline.
func (p *evalProcessor) addLogsRoute(next consumer.Logs) (route, error) {
	p.routesMu.Lock()
	defer p.routesMu.Unlock()
	if len(p.logsOut) >= maxRoutes {
		return 0, fmt.Errorf("eval processor %q: listed in more than %d logs pipelines", p.id, maxRoutes)
	}
	p.logsOut = append(p.logsOut, next)
	return route(len(p.logsOut) - 1), nil
}

// fixRoutes, at Start, takes the single next consumers a test (or an
// embedder) set directly as route 0. After Start the routes do not change.
func (p *evalProcessor) fixRoutes() {
	p.routesMu.Lock()
	defer p.routesMu.Unlock()
	if len(p.tracesOut) == 0 && p.next != nil {
		p.tracesOut = []consumer.Traces{p.next}
	}
	if len(p.logsOut) == 0 && p.nextLogs != nil {
		p.logsOut = []consumer.Logs{p.nextLogs}
	}
}

// tracesTo is route r's next traces consumer; nil when eval is in no
// traces pipeline (only in a logs one).
func (p *evalProcessor) tracesTo(r route) consumer.Traces {
	if int(r) < len(p.tracesOut) {
		return p.tracesOut[r]
	}
	if len(p.tracesOut) > 0 {
		return p.tracesOut[0] // a route restored from storage that no longer exists
	}
	return nil
}

// logsTo is route r's next logs consumer; nil when eval is in no logs
// pipeline.
func (p *evalProcessor) logsTo(r route) consumer.Logs {
	if int(r) < len(p.logsOut) {
		return p.logsOut[r]
	}
	if len(p.logsOut) > 0 {
		return p.logsOut[0]
	}
	return nil
}

// errNoPipeline is what sending to a signal eval is in no pipeline of
// returns (late results of a logs-only eval, say): dropped and counted.
var errNoPipeline = fmt.Errorf("eval processor: no pipeline of this signal lists it")

func (p *evalProcessor) sendTraces(ctx context.Context, r route, td ptrace.Traces) error {
	next := p.tracesTo(r)
	if next == nil {
		return errNoPipeline
	}
	return next.ConsumeTraces(ctx, td)
}

func (p *evalProcessor) sendLogs(ctx context.Context, r route, ld plog.Logs) error {
	next := p.logsTo(r)
	if next == nil {
		return errNoPipeline
	}
	return next.ConsumeLogs(ctx, ld)
}

// routedTraces and routedLogs are the released data of one trace for one
// route, with the storage keys of the chunks in it.
type routedTraces struct {
	route route
	td    ptrace.Traces
	spans int
	keys  []string
}

type routedLogs struct {
	route route
	ld    plog.Logs
	count int
	keys  []string
}

// tracePart is one held chunk of spans: the copy, the route it came
// through, and its storage key.
type tracePart struct {
	td    ptrace.Traces
	route route
	spans int
	key   string
}

// logPartHeld is one held chunk of log records.
type logPartHeld struct {
	ld    plog.Logs
	route route
	count int
	key   string
}

// byRoute merges a released trace's span chunks into one batch per route
// (nearly always one). Chunks without spans (emptied by a redelivery
// check) give only their keys.
func byRoute(parts []tracePart) []routedTraces {
	var out []routedTraces
	for _, pt := range parts {
		i := 0
		for i < len(out) && out[i].route != pt.route {
			i++
		}
		if i == len(out) {
			out = append(out, routedTraces{route: pt.route})
		}
		o := &out[i]
		if pt.key != "" {
			o.keys = append(o.keys, pt.key)
		}
		if pt.spans == 0 {
			continue
		}
		if o.spans == 0 {
			o.td = pt.td
		} else {
			pt.td.ResourceSpans().MoveAndAppendTo(o.td.ResourceSpans())
		}
		o.spans += pt.spans
	}
	return out
}

// logsByRoute is byRoute for log chunks.
func logsByRoute(parts []logPartHeld) []routedLogs {
	var out []routedLogs
	for _, pt := range parts {
		i := 0
		for i < len(out) && out[i].route != pt.route {
			i++
		}
		if i == len(out) {
			out = append(out, routedLogs{route: pt.route, ld: plog.NewLogs()})
		}
		o := &out[i]
		if pt.key != "" {
			o.keys = append(o.keys, pt.key)
		}
		pt.ld.ResourceLogs().MoveAndAppendTo(o.ld.ResourceLogs())
		o.count += pt.count
	}
	return out
}
