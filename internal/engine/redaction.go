package engine

import (
	"context"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine/internal/metadata"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// The redaction side of the engine (docs/contract.md §20,
// docs/redaction.md): what leaves the collector — judge prompts, remote
// evaluator bodies — and what is written back — reasons, explanations, on
// the evaluated spans, late-result and session spans — is masked. The
// evaluators themselves (deterministic, cel) read the original case, and
// the evaluated spans' own attributes are never changed.

// MetricRedactions counts the values replaced, by detector.
const MetricRedactions = "otelcol_processor_eval_redactions"

// newRedactor builds the config's redactor and its counter; nil when
// redaction is off (`detectors: []` and no patterns).
func newRedactor(cfg redact.Config, set component.TelemetrySettings) (*redact.Redactor, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if set.MeterProvider == nil {
		set.MeterProvider = noop.NewMeterProvider()
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	counter := tb.ProcessorEvalRedactions
	opts := map[string]metric.AddOption{}
	for _, n := range append(redact.Builtins(), patternNames(cfg)...) {
		opts[n] = metric.WithAttributeSet(attribute.NewSet(attribute.String("detector", n)))
	}
	return redact.New(cfg, func(d string) { counter.Add(context.Background(), 1, opts[d]) })
}

func patternNames(cfg redact.Config) []string {
	out := make([]string, len(cfg.Patterns))
	for i, p := range cfg.Patterns {
		out[i] = p.Name
	}
	return out
}

// redactedJudge masks every message of a judge request, numbering values
// across the request's messages (the same e-mail address is
// [REDACTED:email#1] in every field of one prompt).
type redactedJudge struct {
	evaluators.Judge
	r *redact.Redactor
}

func (j redactedJudge) Complete(ctx context.Context, msgs []judge.Message) (string, error) {
	s := j.r.NewSession()
	out := make([]judge.Message, len(msgs))
	for i, m := range msgs {
		out[i] = judge.Message{Role: m.Role, Content: redactPrompt(s, m.Content)}
	}
	return j.Judge.Complete(ctx, out)
}

// redactPrompt keeps a prompt's JSON data block (between the lines <data>
// and </data>) valid JSON: its strings are redacted one by one; the text
// around it is redacted as text.
func redactPrompt(s *redact.Session, content string) string {
	const open, closing = "<data>\n", "\n</data>"
	i := strings.Index(content, open)
	if i < 0 {
		return s.Text(content)
	}
	body := content[i+len(open):]
	k := strings.LastIndex(body, closing)
	if k < 0 {
		return s.Text(content)
	}
	return s.Text(content[:i]) + open + string(s.JSON([]byte(body[:k]))) + s.Text(body[k:])
}

// redactResults masks the reasons of results about to be written back.
// Each result's reason is a text of its own.
func (e *Engine) redactResults(results []evaluators.Result) {
	if e.redactor == nil {
		return
	}
	for i := range results {
		results[i].Reason = e.redactor.Text(results[i].Reason)
	}
}

// RedactCopied masks the given string attributes of a span the caller
// made from an evaluated span (stream mode's result spans), as
// redactCopied does for the engine's own.
func (e *Engine) RedactCopied(attrs pcommon.Map, keys ...string) { e.redactCopied(attrs, keys...) }

// redactCopied masks the given string attributes of a span evalbridge
// creates (an evaluate_session span, a late-result span): the text they
// copy from the evaluated spans (conversation id, agent name, span name)
// is written back like a reason. One numbering per span.
func (e *Engine) redactCopied(attrs pcommon.Map, keys ...string) {
	if e.redactor == nil {
		return
	}
	s := e.redactor.NewSession()
	for _, k := range keys {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			if red := s.Text(v.Str()); red != v.Str() {
				v.SetStr(red)
			}
		}
	}
}

// RedactInfo masks what result log records copy from a case, as
// redactInfo does for the result events.
func (e *Engine) RedactInfo(info annotator.CaseInfo) annotator.CaseInfo { return e.redactInfo(info) }

// redactInfo masks what the result events copy from the case (the agent
// and model names): they are written back like a reason. The names a
// service sends repeat on every case: a pair redaction left unchanged is
// remembered and not read again (with nothing replaced, nothing is
// counted, and the same texts give the same answer).
func (e *Engine) redactInfo(info annotator.CaseInfo) annotator.CaseInfo {
	if e.redactor == nil {
		return info
	}
	if c := e.cleanInfo.Load(); c != nil && *c == info {
		return info
	}
	s := e.redactor.NewSession()
	out := annotator.CaseInfo{AgentName: s.Text(info.AgentName), Model: s.Text(info.Model)}
	if out == info {
		e.cleanInfo.Store(&info)
	}
	return out
}
