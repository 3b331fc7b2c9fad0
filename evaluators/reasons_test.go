package evaluators

import (
	"context"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

// The reasons of tool_error and token_usage, word for word, for the shapes
// their text takes (they are written onto spans and read by people and
// alerts): the rewrite of how they are built must not change them.
func TestToolErrorReasons(t *testing.T) {
	long := strings.Repeat("x", 150)
	calls := []adapter.ToolCall{
		{Name: "ok", HasResult: true, Result: `{"ok":true}`},
		{Name: "status", Errored: true, ErrorMessage: "timeout after 30s"},
		{Name: "status_bare", Errored: true},
		{Name: "blank", HasResult: true, Result: "  "},
		{Name: "json_error", HasResult: true, Result: `{"error": {"code": 5}}`},
		{Name: "pattern", HasResult: true, Result: "FATAL: " + long},
		{Name: "status_long", Errored: true, ErrorMessage: long},
		{Name: "unrecorded"},
	}
	in := build(t, Config{Type: "tool_error", Options: obj("error_pattern", "^FATAL")})
	for _, tc := range []struct {
		name  string
		calls []adapter.ToolCall
		want  string
	}{
		{"none failed", calls[:1], "1 of 1 tool calls succeeded"},
		{"one failed", calls[:2], "1 of 2 tool calls succeeded; failed: call #2 status: span status ERROR: timeout after 30s"},
		{"four listed", calls[:5], "1 of 5 tool calls succeeded; failed: call #2 status: span status ERROR: timeout after 30s; " +
			"call #3 status_bare: span status ERROR; call #4 blank: blank result; call #5 json_error: result has a top-level \"error\" field: {\"code\": 5}"},
		{"more counted", calls, "2 of 8 tool calls succeeded; failed: call #2 status: span status ERROR: timeout after 30s; " +
			"call #3 status_bare: span status ERROR; call #4 blank: blank result; call #5 json_error: result has a top-level \"error\" field: {\"code\": 5}; and 2 more"},
		{"truncated", []adapter.ToolCall{calls[5], calls[6]}, "0 of 2 tool calls succeeded; failed: call #1 pattern: result matches error_pattern: FATAL: " +
			strings.Repeat("x", 93) + "…; call #2 status_long: span status ERROR: " + strings.Repeat("x", 100) + "…"},
	} {
		r := in.Evaluate(context.Background(), &adapter.Case{Level: adapter.LevelAgent, ToolCalls: tc.calls})
		if r.Reason != tc.want {
			t.Errorf("%s: reason\n%q\nwant\n%q", tc.name, r.Reason, tc.want)
		}
	}
}

func TestTokenUsageReasons(t *testing.T) {
	// a negative count: unknown
	u := func(in, out int64) adapter.Usage {
		return adapter.Usage{InputTokens: max(in, 0), OutputTokens: max(out, 0), HasInputTokens: in >= 0, HasOutputTokens: out >= 0}
	}
	for _, tc := range []struct {
		name  string
		opts  map[string]any
		usage adapter.Usage
		want  string
	}{
		{"within total", obj("max_total", 2000), u(900, 120), "within the limits: total tokens 1020 <= 2000"},
		{"within all", obj("max_input", 1000, "max_output", 200, "max_total", 2000), u(900, 120),
			"within the limits: input tokens 900 <= 1000, output tokens 120 <= 200, total tokens 1020 <= 2000"},
		{"over some", obj("max_input", 800, "max_output", 100, "max_total", 2000), u(900, 120),
			"over the limit: input tokens 900 > 800, output tokens 120 > 100"},
		{"unknown noted", obj("max_input", 1000, "max_output", 200), u(900, -1),
			"within the limits: input tokens 900 <= 1000; not checked (count unknown): output"},
		{"over, unknown noted", obj("max_input", 10, "max_output", 200, "max_total", 5000), u(900, -1),
			"over the limit: input tokens 900 > 10; not checked (count unknown): output"},
		{"all unknown", obj("max_output", 200, "max_total", 5000), u(-1, -1), "token counts unknown (output, total)"},
	} {
		in := build(t, Config{Type: "token_usage", Options: tc.opts})
		r := in.Evaluate(context.Background(), &adapter.Case{Level: adapter.LevelAgent, Usage: tc.usage})
		if r.Reason != tc.want {
			t.Errorf("%s: reason\n%q\nwant\n%q", tc.name, r.Reason, tc.want)
		}
	}
}
