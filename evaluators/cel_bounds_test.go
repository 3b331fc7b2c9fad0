package evaluators

import (
	"context"
	"strings"
	"testing"
)

// bigJSON is a JSON document of about n bytes.
func bigJSON(n int) string {
	item := `"xxxxxxxxxxxxxxxx",`
	return `{"a": [` + strings.Repeat(item, n/len(item)) + `1]}`
}

// issue 19 finding 10: json.decode cost 1 whatever its input (4 MB: 94 MB
// allocated) and format too, so cost_limit did not bound them; they cost
// by size now, and a json.decode input above cost_limit is refused before
// it is decoded. The other string functions already cost by size.
func TestCELStringFunctionsCostBySize(t *testing.T) {
	c := testCELCase()
	c.Output = bigJSON(2 << 20)
	for _, expr := range []string{
		`json.decode(case.output).a.size() > 0`,
		`"%s".format([case.output]).size() > 0`,
		`case.output.lowerAscii().size() > 0`,
		`case.output.replace("x", "y").size() > 0`,
		`regex.replace(case.output, "x", "y").size() > 0`,
	} {
		in := build(t, Config{Type: "cel", Name: "x", Options: obj("expression", expr)})
		r := in.Evaluate(context.Background(), c)
		if r.Status != StatusError || !strings.Contains(r.Reason, "cost_limit") {
			t.Errorf("%s on 2 MB: %s %q (cost %v), want an error naming cost_limit", expr, r.Status, r.Reason, r.Metrics["cost"])
		}
	}
	// Within the limit it works, and the cost says what it read.
	c.Output = bigJSON(100 << 10)
	in := build(t, Config{Type: "cel", Name: "x", Options: obj("expression", `json.decode(case.output).a.size() > 0`)})
	if r := in.Evaluate(context.Background(), c); r.Status != StatusPassed || r.Metrics["cost"] < 100<<10 {
		t.Errorf("100 KB: %s %q cost %v", r.Status, r.Reason, r.Metrics["cost"])
	}
	// Many calls add up: 2000 decodes of 100 KB stop at cost_limit (about
	// ten of them), not 200 MB of input later.
	in = build(t, Config{Type: "cel", Name: "x", Options: obj("expression", `lists.range(2000).all(i, json.decode(case.output).a.size() > 0)`)})
	if r := in.Evaluate(context.Background(), c); r.Status != StatusError || !strings.Contains(r.Reason, "cost_limit") {
		t.Errorf("2000 × 100 KB: %s %q", r.Status, r.Reason)
	}
}

// max_tool_calls applies to `cel` cases as to the tool-call evaluators.
func TestCELMaxToolCalls(t *testing.T) {
	in := build(t, Config{Type: "cel", Name: "x", MaxToolCalls: new(1),
		Options: obj("expression", `case.tool_calls.all(t, !t.errored)`)})
	r := in.Evaluate(context.Background(), testCELCase()) // 2 calls
	if r.Status != StatusSkipped || !strings.Contains(r.Reason, "more than max_tool_calls (1)") {
		t.Fatalf("%s %q", r.Status, r.Reason)
	}
}

// Allocation of one evaluation of json.decode over a 4 MB tool result:
// with the default cost_limit (refused before decoding) and with a
// cost_limit that pays for it (decoded).
func BenchmarkCELJSONDecode4MB(b *testing.B) {
	c := testCELCase()
	c.Output = bigJSON(4 << 20)
	for _, bc := range []struct {
		name  string
		limit int
	}{{"default_cost_limit", defaultCELCostLimit}, {"cost_limit_8M", 8_000_000}} {
		b.Run(bc.name, func(b *testing.B) {
			in := build(b, Config{Type: "cel", Name: "x", Options: obj("expression", `json.decode(case.output).a.size() > 0`, "cost_limit", bc.limit)})
			b.ReportAllocs()
			for b.Loop() {
				in.Evaluate(context.Background(), c)
			}
		})
	}
}
