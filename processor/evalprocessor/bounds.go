package evalprocessor

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Bounds on one trace (docs/contract.md §17): max_hold and max_trace_spans
// release a trace early; each is counted in
// otelcol_processor_eval_traces_released_early{reason} and logged once.
const (
	boundMaxHold = iota
	boundMaxTraceSpans
)

var boundNames = [...]string{boundMaxHold: reasonMaxHold, boundMaxTraceSpans: reasonMaxTraceSpans}

const (
	reasonMaxHold       = "max_hold"
	reasonMaxTraceSpans = "max_trace_spans"
)

// bounded counts the traces bound b released, and logs the first time.
func (p *evalProcessor) bounded(b int, ts []*heldTrace) {
	p.tel.releasedEarly.Add(context.Background(), int64(len(ts)), p.tel.reasonOpts[boundNames[b]])
	if !p.boundLogged[b].CompareAndSwap(false, true) {
		return
	}
	t := ts[0]
	switch b {
	case boundMaxHold:
		p.logger.Warn("a trace kept getting spans for max_hold; it is scored and released now, and its later spans go on as late spans (logged once; counted in otelcol_processor_eval_traces_released_early{reason=\"max_hold\"})",
			zap.Stringer("trace_id", t.id), zap.Duration("max_hold", p.cfg.MaxHold), zap.Int("spans", t.spans),
			zap.Duration("held", t.lastSeen.Sub(t.first).Round(time.Millisecond)))
	case boundMaxTraceSpans:
		p.logger.Warn("a trace reached max_trace_spans; it is scored and released now, and its later spans go on as late spans (logged once; counted in otelcol_processor_eval_traces_released_early{reason=\"max_trace_spans\"})",
			zap.Stringer("trace_id", t.id), zap.Int("max_trace_spans", p.cfg.MaxTraceSpans), zap.Int("spans", t.spans),
			zap.Int("genai_log_records", len(t.records)))
	}
}
