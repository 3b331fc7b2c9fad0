package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// contractTrace is one agent run in the OTel GenAI conventions: an
// invoke_agent root (3 s) carrying the expectations, an LLM call with usage
// and a JSON answer, two tool calls and a retrieval.
func contractTrace(t *testing.T) string {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	tid := pcommon.TraceID([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	start := time.Unix(1764100000, 0)
	n := byte(0)
	span := func(name string, parent pcommon.SpanID, from, to time.Duration, attrs map[string]any) ptrace.Span {
		n++
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID([8]byte{0, 0, 0, 0, 0, 0, 0, n}))
		s.SetParentSpanID(parent)
		s.SetName(name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(from)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(to)))
		if err := s.Attributes().FromRaw(attrs); err != nil {
			t.Fatal(err)
		}
		return s
	}
	root := span("invoke_agent travel_agent", pcommon.SpanID{}, 0, 3*time.Second, map[string]any{
		"gen_ai.operation.name":    "invoke_agent",
		"gen_ai.agent.name":        "travel_agent",
		"eval.expected.tool_calls": `[{"name": "search", "arguments": {}}, {"name": "book", "arguments": {"nights": 5}}]`,
		"eval.expected.output":     `{"city": "Lisbon", "nights": 5}`,
		"eval.expected.documents":  `["doc_1", "doc_3"]`,
	})
	span("chat gpt-4o", root.SpanID(), 10*time.Millisecond, time.Second, map[string]any{
		"gen_ai.operation.name":      "chat",
		"gen_ai.request.model":       "gpt-4o",
		"gen_ai.response.id":         "chatcmpl-1",
		"gen_ai.usage.input_tokens":  int64(100),
		"gen_ai.usage.output_tokens": int64(50),
		"gen_ai.input.messages":      `[{"role": "user", "parts": [{"type": "text", "content": "Book Lisbon for 5 nights"}]}]`,
		"gen_ai.output.messages":     `[{"role": "assistant", "parts": [{"type": "text", "content": "{\"city\": \"Lisbon\", \"nights\": 5, \"note\": \"ok\"}"}]}]`,
	})
	span("execute_tool search", root.SpanID(), time.Second, 1100*time.Millisecond, map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           "search",
		"gen_ai.tool.call.arguments": `{"q": "Lisbon"}`,
		"gen_ai.tool.call.result":    `{"hotels": 3}`,
	})
	span("execute_tool book", root.SpanID(), 1200*time.Millisecond, 1300*time.Millisecond, map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           "book",
		"gen_ai.tool.call.arguments": `{"nights": 5.0}`,
		"gen_ai.tool.call.result":    `{"error": "sold out"}`,
	})
	span("retrieval hotels", root.SpanID(), 1400*time.Millisecond, 1500*time.Millisecond, map[string]any{
		"gen_ai.operation.name":      "retrieval",
		"gen_ai.retrieval.documents": `[{"id": "doc_1", "score": 0.9}, {"id": "doc_2", "score": 0.5}]`,
	})
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The option spellings of docs/contract.md §6 through the YAML an
// acceptance run gives `evalctl run`, and the attributes of §4 in
// `--out`.
func TestContractOptionsThroughYAML(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "contract.yaml")
	yaml := `evaluators:
  - type: tool_trajectory
    name: traj_subset
    mode: recall
    arguments: {mode: subset}
  - type: tool_trajectory
    name: traj_ignore
    mode: strict
    arguments: {mode: subset}
    tool_arguments: {search: {mode: ignore}}
  - type: tool_call_accuracy
    name: accuracy_ordered
    require_order: true
    penalize_unexpected: true
  - type: tool_error
  - type: latency
    max: 5
  - type: latency
    name: latency_ms
    max: 1500ms
  - type: token_usage
    max: 100
  - type: structural_match
    lenient: true
  - type: retrieval_recall
    match: {field: id}
  - type: retrieval_precision
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	code, stdout, stderr := runEvalctl(t, contractTrace(t)+"\n", "run", "--config", cfg, "--out", out, "--summary", "json", "-")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	attrs := root.Attributes()
	want := map[string]struct {
		score  float64
		status string
	}{
		// search({}) expects no arguments even under subset: 1 of 2 recalled.
		"traj_subset": {0.5, "failed"},
		// search's per-tool ignore matches; book(nights 5.0) = book(nights: 5).
		"traj_ignore":      {1, "passed"},
		"accuracy_ordered": {1, "passed"},
		"tool_error":       {0.5, "failed"},
		// 3 s against `max: 5` (seconds) and `max: 1500ms`.
		"latency":    {1, "passed"},
		"latency_ms": {0, "failed"},
		// `max` is the total: 150 > 100.
		"token_usage":      {0, "failed"},
		"structural_match": {1, "passed"},
		// ids: doc_1 of doc_1, doc_3.
		"retrieval_recall":    {0.5, "passed"},
		"retrieval_precision": {0.5, "passed"},
	}
	for name, w := range want {
		sv, ok := attrs.Get("eval." + name + ".score")
		if !ok || sv.Type() != pcommon.ValueTypeDouble {
			t.Errorf("%s: score %v is not a double", name, sv.AsRaw())
			continue
		}
		if math.Abs(sv.Double()-w.score) > 1e-9 {
			r, _ := attrs.Get("eval." + name + ".reason")
			t.Errorf("%s: score %v, want %v (%s)", name, sv.Double(), w.score, r.AsString())
		}
		st, _ := attrs.Get("eval." + name + ".status")
		if st.Str() != w.status {
			t.Errorf("%s: status %q, want %q", name, st.Str(), w.status)
		}
		p, ok := attrs.Get("eval." + name + ".passed")
		if !ok || p.Type() != pcommon.ValueTypeBool || p.Bool() != (w.status == "passed") {
			t.Errorf("%s: passed = %v", name, p.AsRaw())
		}
		if r, ok := attrs.Get("eval." + name + ".reason"); !ok || r.Str() == "" || len(r.Str()) > 1024 {
			t.Errorf("%s: reason %q", name, r.AsString())
		}
	}
	failed, ok := attrs.Get("eval.failed")
	if !ok || failed.Type() != pcommon.ValueTypeSlice {
		t.Fatalf("eval.failed = %v", failed.AsRaw())
	}
	var names []string
	for i := 0; i < failed.Slice().Len(); i++ {
		names = append(names, failed.Slice().At(i).Str())
	}
	if got := strings.Join(names, ","); got != "traj_subset,tool_error,latency_ms,token_usage" {
		t.Errorf("eval.failed = %s", got)
	}
	events := 0
	for i := 0; i < root.Events().Len(); i++ {
		ev := root.Events().At(i)
		if ev.Name() != "gen_ai.evaluation.result" {
			continue
		}
		events++
		ea := ev.Attributes()
		name, _ := ea.Get("gen_ai.evaluation.name")
		sv, _ := ea.Get("gen_ai.evaluation.score.value")
		label, _ := ea.Get("gen_ai.evaluation.score.label")
		if _, ok := ea.Get("gen_ai.evaluation.explanation"); !ok || sv.Type() != pcommon.ValueTypeDouble {
			t.Errorf("event %s: %v", name.Str(), ea.AsRaw())
		}
		if w := want[name.Str()]; label.Str() != map[bool]string{true: "pass", false: "fail"}[w.status == "passed"] {
			t.Errorf("event %s: label %q", name.Str(), label.Str())
		}
	}
	if events != len(want) {
		t.Errorf("%d events, want %d", events, len(want))
	}

	// The summary counts per evaluator name.
	var sum struct {
		Evaluators []evaluatorSummary `json:"evaluators"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	for _, e := range sum.Evaluators {
		w := want[e.Name]
		if e.Cases != 1 || e.MeanScore == nil || math.Abs(*e.MeanScore-w.score) > 1e-9 ||
			(w.status == "passed") != (e.Passed == 1) || (w.status == "failed") != (e.Failed == 1) {
			t.Errorf("summary %s: %+v", e.Name, e)
		}
	}
}

// docs/contract.md §7: the summary per evaluator name counts cases, passed, failed,
// skipped, errors (timeouts among them) and the mean of the scores.
func TestContractSummaryCounts(t *testing.T) {
	sum := newSummary([]*evaluators.Instance{{Name: "a", Type: "tool_error"}, {Name: "b", Type: "latency"}})
	c := &adapter.Case{}
	res := func(st evaluators.Status, score float64) evaluators.Result {
		return evaluators.Result{Name: "a", Status: st, Score: score, Threshold: 0.5}
	}
	sum.add(engine.Report{Evaluations: []engine.Evaluation{{Case: c, Results: []evaluators.Result{
		res(evaluators.StatusPassed, 1), res(evaluators.StatusFailed, 0.25), res(evaluators.StatusSkipped, 0),
		res(evaluators.StatusError, 0), res(evaluators.StatusTimeout, 0),
	}}}})
	var buf strings.Builder
	if err := sum.writeJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Evaluators []evaluatorSummary `json:"evaluators"`
		Failed     int                `json:"failed"`
	}
	if err := json.Unmarshal([]byte(buf.String()), &got); err != nil {
		t.Fatal(err)
	}
	a, b := got.Evaluators[0], got.Evaluators[1]
	if a.Cases != 5 || a.Passed != 1 || a.Failed != 1 || a.Skipped != 1 || a.Errors != 2 || a.Timeouts != 1 ||
		a.MeanScore == nil || *a.MeanScore != 0.625 || got.Failed != 1 {
		t.Errorf("summary a = %+v (failed %d)", a, got.Failed)
	}
	if b.Cases != 0 || b.MeanScore != nil {
		t.Errorf("summary b = %+v", b)
	}
	buf.Reset()
	if err := sum.writeText(&buf, nil); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(buf.String(), "\n") {
		// The columns of §7 first; the intervals after them. The
		// bootstrap of {1, 0.25} can only give means 0.25, 0.625 or 1.
		found = found || strings.Join(strings.Fields(line), " ") == "a tool_error 5 1 1 1 2 0.625 [0.250, 1.000] 0.500 [0.095, 0.905]"
	}
	if !found {
		t.Errorf("text summary:\n%s", buf.String())
	}
}
