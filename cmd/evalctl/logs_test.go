package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JS @opentelemetry/instrumentation-openai writes chat content only in
// log records: given the logs export beside the traces (in either order),
// evalctl scores the output; without it, the output evaluator is skipped.
func TestRunJoinsContentLogRecords(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(`evaluators:
  - type: tool_trajectory
    mode: strict
    expected: [search_flights, book_hotel]
  - type: regex
    name: cites_flight
    case: agent
    pattern: 'TP 541'
`), 0o600); err != nil {
		t.Fatal(err)
	}
	traces := "../../interop/testdata/otel-instrumentation-openai.json"
	logs := "../../interop/testdata/logs/otel-instrumentation-openai.logs.json"
	status := func(args ...string) map[string]evaluatorSummary {
		t.Helper()
		code, out, stderr := runEvalctl(t, "", append([]string{"run", "--config", cfg, "--summary", "json"}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		if strings.Contains(stderr, "warning") {
			t.Errorf("warnings: %s", stderr)
		}
		return summaryByName(t, out)
	}
	for _, order := range [][]string{{traces, logs}, {logs, traces}} {
		by := status(order...)
		if e := by["cites_flight"]; e.Passed != 1 {
			t.Errorf("order %v: cites_flight = %+v, want passed from the log content", order, e)
		}
		if e := by["tool_trajectory"]; e.Passed != 1 {
			t.Errorf("order %v: tool_trajectory = %+v", order, e)
		}
	}
	// Alone, an evaluator scores nothing: accepted only with --allow-unscored.
	if e := status(traces, "--allow-unscored")["cites_flight"]; e.Skipped != 1 {
		t.Errorf("traces alone: cites_flight = %+v, want skipped (no content)", e)
	}
}
