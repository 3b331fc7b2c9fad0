package evaluators

import (
	"context"
	"encoding/json"
	"fmt"
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

// why says why a call failed, "" when it did not.
func (t *toolError) why(c *adapter.ToolCall) string {
	if t.o.SpanStatus && c.Errored {
		if c.ErrorMessage != "" {
			return "span status ERROR: " + truncate(c.ErrorMessage, 100)
		}
		return "span status ERROR"
	}
	// A result that was never recorded (content capture off, or a call
	// requested by the model with no tool span) is not a blank result.
	if !c.HasResult {
		return ""
	}
	res := c.Result
	if strings.TrimSpace(res) == "" {
		if t.o.TreatBlankAsError {
			return "blank result"
		}
		return ""
	}
	if t.pattern != nil && t.pattern.MatchString(res) {
		return fmt.Sprintf("result matches error_pattern: %s", truncate(res, 100))
	}
	if t.o.DetectJSONErrorField {
		trimmed := strings.TrimSpace(res)
		// Only a key written "error" (or spelled with \u escapes) decodes
		// to "error": without either there is nothing to find.
		if strings.HasPrefix(trimmed, "{") && (strings.Contains(trimmed, `"error"`) || strings.Contains(trimmed, `\u`)) {
			var top map[string]json.RawMessage
			if json.Unmarshal([]byte(trimmed), &top) == nil {
				if raw, ok := top["error"]; ok && strings.TrimSpace(string(raw)) != "null" {
					return "result has a top-level \"error\" field: " + truncate(string(raw), 100)
				}
			}
		}
	}
	return ""
}

func (t *toolError) Evaluate(_ context.Context, c *adapter.Case) Result {
	n := len(c.ToolCalls)
	if n == 0 {
		return Scored(1, "no tool calls to inspect", map[string]float64{"errors": 0, "calls": 0})
	}
	errs := 0
	var list []string
	for i := range c.ToolCalls {
		if w := t.why(&c.ToolCalls[i]); w != "" {
			errs++
			if len(list) < 4 {
				list = append(list, fmt.Sprintf("call #%d %s: %s", i+1, c.ToolCalls[i].Name, w))
			}
		}
	}
	reason := strconv.Itoa(n-errs) + " of " + strconv.Itoa(n) + " tool calls succeeded"
	if errs > 0 {
		reason += "; failed: " + strings.Join(list, "; ")
		if errs > len(list) {
			reason += fmt.Sprintf("; and %d more", errs-len(list))
		}
	}
	var m map[string]float64
	if !t.metricsOff {
		m = map[string]float64{"errors": float64(errs), "calls": float64(n)}
	}
	return Scored(float64(n-errs)/float64(n), reason, m)
}
