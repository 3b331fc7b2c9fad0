package webhookexporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/humanlabel"
)

// Results as log records (docs/contract.md §25): in a logs pipeline the
// exporter reads `gen_ai.evaluation.result` records from any producer —
// the eval processor, an SDK's evaluations, people's thumbs up and down —
// and gives them the §9 alerts and §13 monitors. Each record is read into
// the shape the traces path reads (resultSpans: one span per record, with
// the record's trace and span id, attributes and time, and the
// eval.<name>.* attributes and result event the annotator would write), so
// alerts, monitors, rate limiting, the queue and every format are the
// traces path's. A record's outcome is its score.label through `labels:`,
// else error.type (error: no alert, no case, as on spans), else nothing.
// Every other record passes by unread.

// The record fields read (the GenAI conventions' names).
const (
	attrEventName  = "event.name"
	attrScoreValue = "gen_ai.evaluation.score.value"
	attrScoreLabel = "gen_ai.evaluation.score.label"
	attrExplain    = "gen_ai.evaluation.explanation"
	attrErrorType  = "error.type"
)

// LabelsConfig maps score labels to outcomes (`labels:`); a label is
// compared trimmed and case-insensitively.
type LabelsConfig struct {
	Pass []string `mapstructure:"pass"`
	Fail []string `mapstructure:"fail"`
}

// NewDefaultLabels is `labels:` when not set: the evaluators' own labels
// and the usual feedback ones.
func NewDefaultLabels() LabelsConfig {
	return LabelsConfig{Pass: slices.Clone(humanlabel.DefaultPass), Fail: slices.Clone(humanlabel.DefaultFail)}
}

// Validate: no label on both sides.
func (l *LabelsConfig) Validate() error {
	var errs []error
	both, _ := humanlabel.Overlap(l.Pass, l.Fail)
	for _, f := range both {
		errs = append(errs, fmt.Errorf("labels: %q is both pass and fail", f))
	}
	return errors.Join(errs...)
}

// outcomes is the labels mapping, compiled.
type outcomes humanlabel.Mapping

func newOutcomes(l LabelsConfig) outcomes {
	return outcomes(humanlabel.NewMapping(l.Pass, l.Fail))
}

// isResultRecord says lr is a gen_ai.evaluation.result event (EventName,
// else the event.name attribute).
func isResultRecord(lr plog.LogRecord) bool {
	if lr.EventName() != "" {
		return lr.EventName() == resultEventName
	}
	v, ok := lr.Attributes().Get(attrEventName)
	return ok && v.AsString() == resultEventName
}

// resultSpans reads ld's result records as spans; carrier records (monitor
// notifications waiting in a logs queue) become carrier spans again.
func (o outcomes) resultSpans(ld plog.Logs) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, rl := range ld.ResourceLogs().All() {
		var rs ptrace.ResourceSpans
		for _, sl := range rl.ScopeLogs().All() {
			var ss ptrace.ScopeSpans
			for _, lr := range sl.LogRecords().All() {
				carried := sl.Scope().Name() == carrierScope
				if !carried && !isResultRecord(lr) {
					continue
				}
				if rs == (ptrace.ResourceSpans{}) {
					rs = td.ResourceSpans().AppendEmpty()
					rl.Resource().CopyTo(rs.Resource())
				}
				if ss == (ptrace.ScopeSpans{}) {
					ss = rs.ScopeSpans().AppendEmpty()
					ss.Scope().SetName(sl.Scope().Name())
				}
				span := ss.Spans().AppendEmpty()
				if carried {
					span.SetName("webhook monitor notifications")
					if v, ok := lr.Attributes().Get(carrierAttr); ok {
						span.Attributes().PutStr(carrierAttr, v.AsString())
					}
					continue
				}
				o.resultSpan(lr, span)
			}
		}
	}
	return td
}

// resultSpan writes one result record onto span as the annotator writes a
// result onto the evaluated span.
func (o outcomes) resultSpan(lr plog.LogRecord, span ptrace.Span) {
	span.SetTraceID(lr.TraceID())
	span.SetSpanID(lr.SpanID())
	ts := lr.Timestamp()
	if ts == 0 {
		ts = lr.ObservedTimestamp()
	}
	span.SetStartTimestamp(ts)
	span.SetEndTimestamp(ts)
	a := span.Attributes()
	lr.Attributes().CopyTo(a)
	nameV, ok := lr.Attributes().Get(attrEvalName)
	name := ""
	if ok {
		name = nameV.AsString()
	}
	if name == "" {
		return // no evaluation name: nothing to alert on or count
	}
	var status evaluators.Status
	if v, ok := lr.Attributes().Get(attrScoreLabel); ok {
		if pass, known := humanlabel.Mapping(o).Verdict(v.AsString()); known {
			status = evaluators.StatusFailed
			if pass {
				status = evaluators.StatusPassed
			}
		}
	}
	if status == "" {
		if _, ok := lr.Attributes().Get(attrErrorType); !ok {
			return // no outcome: no case
		}
		status = evaluators.StatusError
	}
	a.PutStr(annotator.StatusKey(name), string(status))
	if v, ok := lr.Attributes().Get(attrScoreValue); ok && (v.Type() == pcommon.ValueTypeDouble || v.Type() == pcommon.ValueTypeInt) {
		if v.Type() == pcommon.ValueTypeInt {
			a.PutDouble(annotator.ScoreKey(name), float64(v.Int()))
		} else {
			a.PutDouble(annotator.ScoreKey(name), v.Double())
		}
	}
	if v, ok := lr.Attributes().Get(attrExplain); ok {
		a.PutStr(annotator.ReasonKey(name), v.AsString())
	}
	if status == evaluators.StatusFailed {
		a.PutEmptySlice(annotator.AttrFailed).AppendEmpty().SetStr(name)
	}
	ev := span.Events().AppendEmpty()
	ev.SetName(resultEventName)
	ev.SetTimestamp(ts)
	ev.Attributes().PutStr(attrEvalName, name)
	if v, ok := lr.Attributes().Get(annotator.AttrEvaluatorVersion); ok {
		ev.Attributes().PutStr(annotator.AttrEvaluatorVersion, v.AsString())
	}
}

// resultRecords is ld's result records only (what the queue keeps), and
// how many there are.
func resultRecords(ld plog.Logs) (plog.Logs, int) {
	out := plog.NewLogs()
	n := 0
	for _, rl := range ld.ResourceLogs().All() {
		var orl plog.ResourceLogs
		for _, sl := range rl.ScopeLogs().All() {
			var osl plog.ScopeLogs
			for _, lr := range sl.LogRecords().All() {
				if !isResultRecord(lr) {
					continue
				}
				if orl == (plog.ResourceLogs{}) {
					orl = out.ResourceLogs().AppendEmpty()
					rl.Resource().CopyTo(orl.Resource())
				}
				if osl == (plog.ScopeLogs{}) {
					osl = orl.ScopeLogs().AppendEmpty()
					sl.Scope().CopyTo(osl.Scope())
				}
				lr.CopyTo(osl.LogRecords().AppendEmpty())
				n++
			}
		}
	}
	return out, n
}

// carrierLogs turns carrier traces (monitor notifications) into the log
// records a logs queue holds.
func carrierLogs(td ptrace.Traces) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	sl.Scope().SetName(carrierScope)
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if v, ok := span.Attributes().Get(carrierAttr); ok {
					sl.LogRecords().AppendEmpty().Attributes().PutStr(carrierAttr, v.AsString())
				}
			}
		}
	}
	return ld
}

// logsQueue is the logs exporterhelper as the monitors' machinery sees it:
// notifications (carrier traces) go in as carrier records.
type logsQueue struct {
	exporter.Logs
}

func (q logsQueue) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return q.ConsumeLogs(ctx, carrierLogs(td))
}

// logsExporter is the exporter a logs pipeline sees: the traces exporter's
// monitors, ticker and state over a queue of logs.
type logsExporter struct {
	*tracesExporter
	logs exporter.Logs
	out  outcomes
}

func (l *logsExporter) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	results, n := resultRecords(ld)
	if n == 0 {
		return nil
	}
	td := l.out.resultSpans(results)
	if l.mons != nil {
		l.enqueue(ctx, l.mons.observe(td))
	}
	if !l.e.cfg.PerTraceAlerts {
		return nil
	}
	if err := l.logs.ConsumeLogs(ctx, results); err != nil {
		l.e.dropAlerts(ctx, td, err)
	}
	return nil
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	return newLogsExporterWithTicker(ctx, set, cfg.(*Config), time.Now, realTicker)
}

// newLogsExporterWithTicker builds the logs exporter with an injectable
// clock and ticker (tests).
func newLogsExporterWithTicker(ctx context.Context, set exporter.Settings, c *Config, now func() time.Time,
	newTicker func(time.Duration) (<-chan time.Time, func()),
) (*logsExporter, error) {
	e, err := newWebhookExporter(c, set, now)
	if err != nil {
		return nil, err
	}
	out := newOutcomes(c.Labels)
	inner, err := exporterhelper.NewLogs(ctx, set, c,
		func(ctx context.Context, ld plog.Logs) error { return e.pushTraces(ctx, out.resultSpans(ld)) },
		helperOptions(e, c)...)
	if err != nil {
		return nil, err
	}
	te := &tracesExporter{Traces: logsQueue{inner}, e: e, mons: e.mons, logger: set.Logger, newTicker: newTicker, id: set.ID,
		storeName: storageName + "_logs"}
	return &logsExporter{tracesExporter: te, logs: inner, out: out}, nil
}

// validEvaluationName accepts any evaluation name a producer may write
// (`evaluators:`, a monitor's `evaluator:`): not empty, no spaces or
// control characters.
func validEvaluationName(s string) bool {
	return s != "" && len(s) <= 256 && strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) < 0
}
