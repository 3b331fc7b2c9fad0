package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// sessionInput writes three turns of conversation c1 (the last with a
// failed tool) and one of c2, each its own trace, in one OTLP/JSON file
// with c1's turns out of order.
func sessionInput(t *testing.T) string {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "chat")
	ss := rs.ScopeSpans().AppendEmpty()
	turn := func(n byte, conv string, failed bool) {
		agent := ss.Spans().AppendEmpty()
		agent.SetTraceID(pcommon.TraceID{n})
		agent.SetSpanID(pcommon.SpanID{n, 1})
		agent.SetName("invoke_agent helper")
		agent.SetStartTimestamp(pcommon.Timestamp(uint64(n) * 1e12))
		agent.SetEndTimestamp(pcommon.Timestamp(uint64(n)*1e12 + 1e9))
		agent.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		agent.Attributes().PutStr("gen_ai.conversation.id", conv)
		tool := ss.Spans().AppendEmpty()
		tool.SetTraceID(pcommon.TraceID{n})
		tool.SetSpanID(pcommon.SpanID{n, 2})
		tool.SetParentSpanID(pcommon.SpanID{n, 1})
		tool.SetName("execute_tool search")
		tool.SetStartTimestamp(agent.StartTimestamp() + 1)
		tool.SetEndTimestamp(agent.EndTimestamp() - 1)
		tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		tool.Attributes().PutStr("gen_ai.tool.name", "search")
		tool.Attributes().PutStr("gen_ai.tool.call.result", "ok")
		if failed {
			tool.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	turn(3, "c1", true)
	turn(1, "c1", false)
	turn(4, "c2", false)
	turn(2, "c1", false)
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "turns.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunScoresSessionsAfterTheInputs(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "eval.yaml")
	if err := os.WriteFile(cfg, []byte(`
evaluators:
  - type: tool_error
  - type: tool_error
    name: session_errors
    case: session
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	code, stdout, stderr := runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", "--out", out, sessionInput(t))
	if code != exitFailed {
		t.Fatalf("exit %d, want 1 (the session with a failed tool); stderr: %s", code, stderr)
	}
	by := summaryByName(t, stdout)
	if e := by["session_errors"]; e.Cases != 2 || e.Failed != 1 || e.Passed != 1 {
		t.Errorf("session_errors = %+v, want 2 sessions, 1 failed", e)
	}
	if e := by["tool_error"]; e.Cases != 4 {
		t.Errorf("tool_error = %+v, want the 4 turns", e)
	}

	// --out: the input traces, then one evaluate_session span per session.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 {
		t.Fatalf("--out has %d lines, want the input and two sessions", len(lines))
	}
	if strings.Contains(lines[0], "evaluate_session") {
		t.Error("the input traces come first")
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if sp.Name() != "evaluate_session" {
		t.Fatalf("span %q", sp.Name())
	}
	conv, _ := sp.Attributes().Get("gen_ai.conversation.id")
	if conv.Str() == "c1" {
		// In turn order by start time, though the input had them out of order.
		if sp.Links().Len() != 3 || sp.Links().At(0).TraceID() != (pcommon.TraceID{1}) || sp.Links().At(2).TraceID() != (pcommon.TraceID{3}) {
			t.Errorf("links: %d", sp.Links().Len())
		}
		if st, _ := sp.Attributes().Get("eval.session_errors.status"); st.Str() != "failed" {
			t.Errorf("status %q", st.Str())
		}
	}
}
