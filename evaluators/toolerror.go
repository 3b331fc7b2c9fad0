package evaluators

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// toolErrorOptions follow Dokimos' ToolErrorEvaluator (treatBlankAsError and
// detectJsonErrorField default true) plus the span status, which traces
// carry and Dokimos has no notion of (default true).
type toolErrorOptions struct {
	TreatBlankAsError    bool   `mapstructure:"treat_blank_as_error"`
	DetectJSONErrorField bool   `mapstructure:"detect_json_error_field"`
	ErrorPattern         string `mapstructure:"error_pattern"`
	SpanStatus           bool   `mapstructure:"span_status"`
}

type toolError struct {
	o       toolErrorOptions
	pattern *regexp.Regexp
	metricsOff
}

func newToolError(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	o := toolErrorOptions{TreatBlankAsError: true, DetectJSONErrorField: true, SpanStatus: true}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	t := &toolError{o: o, metricsOff: metricsOff(deps.NoMetrics)}
	if o.ErrorPattern != "" {
		re, err := compileOptionRegex("error_pattern", o.ErrorPattern)
		if err != nil {
			return nil, err
		}
		t.pattern = re
	}
	return t, nil
}

// why says why a call failed, "" when it did not: head followed by detail
// (apart, so that the reason is written without joining them first).
func (t *toolError) why(c *adapter.ToolCall) (head, detail string) {
	if t.o.SpanStatus && c.Errored {
		if c.ErrorMessage != "" {
			return "span status ERROR: ", truncate(c.ErrorMessage, 100)
		}
		return "span status ERROR", ""
	}
	// A result that was never recorded (content capture off, or a call
	// requested by the model with no tool span) is not a blank result.
	if !c.HasResult {
		return "", ""
	}
	res := c.Result
	if strings.TrimSpace(res) == "" {
		if t.o.TreatBlankAsError {
			return "blank result", ""
		}
		return "", ""
	}
	if t.pattern != nil && t.pattern.MatchString(res) {
		return "result matches error_pattern: ", truncate(res, 100)
	}
	if t.o.DetectJSONErrorField {
		trimmed := strings.TrimSpace(res)
		// Only a key written "error" (or spelled with \u escapes) decodes
		// to "error": without either there is nothing to find.
		if strings.HasPrefix(trimmed, "{") && (strings.Contains(trimmed, `"error"`) || strings.Contains(trimmed, `\u`)) {
			var top map[string]json.RawMessage
			if json.Unmarshal([]byte(trimmed), &top) == nil {
				if raw, ok := top["error"]; ok && strings.TrimSpace(string(raw)) != "null" {
					return "result has a top-level \"error\" field: ", truncate(string(raw), 100)
				}
			}
		}
	}
	return "", ""
}

func (t *toolError) Evaluate(_ context.Context, c *adapter.Case) Result {
	n := len(c.ToolCalls)
	if n == 0 {
		return Scored(1, "no tool calls to inspect", map[string]float64{"errors": 0, "calls": 0})
	}
	// The reason is written in one buffer: the first four failures are
	// listed, the rest counted.
	type failure struct {
		i            int
		head, detail string
	}
	var first [4]failure
	errs := 0
	for i := range c.ToolCalls {
		if head, detail := t.why(&c.ToolCalls[i]); head != "" {
			if errs < len(first) {
				first[errs] = failure{i, head, detail}
			}
			errs++
		}
	}
	var reason string
	if errs == 0 {
		reason = strconv.Itoa(n) + " of " + strconv.Itoa(n) + " tool calls succeeded"
	} else {
		listed := first[:min(errs, len(first))]
		size := 64
		for _, f := range listed {
			size += len(c.ToolCalls[f.i].Name) + len(f.head) + len(f.detail) + 16
		}
		var b strings.Builder
		b.Grow(size)
		writeInt(&b, n-errs)
		b.WriteString(" of ")
		writeInt(&b, n)
		b.WriteString(" tool calls succeeded; failed: ")
		for k, f := range listed {
			if k > 0 {
				b.WriteString("; ")
			}
			b.WriteString("call #")
			writeInt(&b, f.i+1)
			b.WriteByte(' ')
			b.WriteString(c.ToolCalls[f.i].Name)
			b.WriteString(": ")
			b.WriteString(f.head)
			b.WriteString(f.detail)
		}
		if errs > len(listed) {
			b.WriteString("; and ")
			writeInt(&b, errs-len(listed))
			b.WriteString(" more")
		}
		reason = b.String()
	}
	var m map[string]float64
	if !t.metricsOff {
		m = map[string]float64{"errors": float64(errs), "calls": float64(n)}
	}
	return Scored(float64(n-errs)/float64(n), reason, m)
}

// writeInt writes n in decimal to b without an allocation of its own.
func writeInt(b *strings.Builder, n int) {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], int64(n), 10))
}
