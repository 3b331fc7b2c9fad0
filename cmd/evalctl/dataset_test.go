package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/dataset"
)

// dsCall is one tool call of a test agent run; failed marks the tool span
// with status ERROR.
type dsCall struct {
	name, args string
	failed     bool
}

// dsRun is one agent run of a test trace: an invoke_agent root with the
// user's prompt and the answer, and one execute_tool span per call.
type dsRun struct {
	trace  byte
	prompt string
	calls  []dsCall
	answer string
	// attrs are put on the root span besides the GenAI ones
	// (eval.expected.*, eval.dataset.case_id).
	attrs map[string]any
}

// dsTraces writes runs into td, each its own trace; the call ids and
// timings differ from run to run (so two runs alike are still two traces
// with different details).
func dsTraces(t *testing.T, runs ...dsRun) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "support-bot")
	ss := rs.ScopeSpans().AppendEmpty()
	for k, r := range runs {
		tid := pcommon.TraceID([16]byte{0xda, 0x7a, 15: r.trace})
		start := time.Unix(1764100000+int64(k)*60, int64(k)*1000)
		root := ss.Spans().AppendEmpty()
		root.SetTraceID(tid)
		root.SetSpanID(pcommon.SpanID([8]byte{r.trace, 0, 0, 0, 0, 0, 0, 1}))
		root.SetName("invoke_agent support_agent")
		root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(2 * time.Second)))
		attrs := map[string]any{
			"gen_ai.operation.name":  "invoke_agent",
			"gen_ai.agent.name":      "support_agent",
			"gen_ai.input.messages":  mustJSONText(t, []any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": r.prompt}}}}),
			"gen_ai.output.messages": mustJSONText(t, []any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": r.answer}}}}),
		}
		for k, v := range r.attrs {
			attrs[k] = v
		}
		if err := root.Attributes().FromRaw(attrs); err != nil {
			t.Fatal(err)
		}
		for i, c := range r.calls {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(tid)
			s.SetSpanID(pcommon.SpanID([8]byte{r.trace, 0, 0, 0, 0, 0, 1, byte(i + 1)}))
			s.SetParentSpanID(root.SpanID())
			s.SetName("execute_tool " + c.name)
			at := start.Add(time.Duration(100*(i+1)+k) * time.Millisecond)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(10+k) * time.Millisecond)))
			s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
			s.Attributes().PutStr("gen_ai.tool.name", c.name)
			s.Attributes().PutStr("gen_ai.tool.call.id", "call_"+string(rune('a'+k))+string(rune('0'+i)))
			s.Attributes().PutStr("gen_ai.tool.call.arguments", c.args)
			s.Attributes().PutStr("gen_ai.tool.call.result", `{"ok": true}`)
			if c.failed {
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage("upstream timeout")
			}
		}
	}
	return td
}

func mustJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeTraces writes td as one OTLP/JSON line into dir/name.
func writeTraces(t *testing.T, dir, name string, tds ...ptrace.Traces) string {
	t.Helper()
	var buf bytes.Buffer
	var m ptrace.JSONMarshaler
	for _, td := range tds {
		b, err := m.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const datasetConfig = `evaluators:
  - type: tool_error
    name: no_tool_errors
  - type: tool_trajectory
    name: refund_flow
    mode: strict
redaction:
  patterns:
    - {name: customer_id, regex: 'CUST-\d{8}'}
`

// The runs the dataset tests capture: a refund whose lookup fails
// (carrying an e-mail address and a customer id in the prompt and the
// arguments), the same failure again in another trace, a clean run, and
// one whose trajectory is wrong.
var (
	refundPrompt = "Refund order 42 for bob@example.com (customer CUST-12345678), please."
	failedRefund = dsRun{trace: 1, prompt: refundPrompt, answer: "Sorry, I could not look the order up.",
		calls: []dsCall{{name: "lookup_order", args: `{"order": 42, "email": "bob@example.com"}`, failed: true}},
		attrs: map[string]any{"eval.expected.tool_calls": `["lookup_order", "refund"]`}}
	sameFailureAgain = dsRun{trace: 2, prompt: refundPrompt, answer: "Sorry, the lookup failed again.",
		calls: []dsCall{{name: "lookup_order", args: `{"email": "bob@example.com", "order": 42.0}`, failed: true}},
		attrs: map[string]any{"eval.expected.tool_calls": `["lookup_order", "refund"]`}}
	cleanRun = dsRun{trace: 3, prompt: "Refund order 7.", answer: "Refunded.",
		calls: []dsCall{{name: "lookup_order", args: `{"order": 7}`}, {name: "refund", args: `{"order": 7}`}},
		attrs: map[string]any{"eval.expected.tool_calls": `["lookup_order", "refund"]`}}
	wrongOrder = dsRun{trace: 4, prompt: "Refund order 9 now.", answer: "Refunded.",
		calls: []dsCall{{name: "refund", args: `{"order": 9}`}, {name: "lookup_order", args: `{"order": 9}`}},
		attrs: map[string]any{"eval.expected.tool_calls": `["lookup_order", "refund"]`}}
)

func datasetSetup(t *testing.T) (dir, cfg, prod string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "evals.yaml")
	if err := os.WriteFile(cfg, []byte(datasetConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	prod = writeTraces(t, dir, "prod.jsonl", dsTraces(t, failedRefund, sameFailureAgain, cleanRun, wrongOrder))
	return dir, cfg, prod
}

// snapshot is every file under dir with its content, to show that a
// refused command changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readCaseFile(t *testing.T, dir, id string) (dataset.Case, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "cases", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c dataset.Case
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Expected != nil { // compact, to compare with literals
		for _, m := range []*json.RawMessage{&c.Expected.ToolCalls, &c.Expected.Output} {
			var b bytes.Buffer
			if len(*m) > 0 && json.Compact(&b, *m) == nil {
				*m = b.Bytes()
			}
		}
	}
	return c, string(raw)
}

func addJSON(t *testing.T, args ...string) (code int, out struct {
	Added        int      `json:"added"`
	Duplicates   int      `json:"duplicates"`
	AddedIDs     []string `json:"added_ids"`
	DuplicateIDs []string `json:"duplicate_ids"`
	Cases        int      `json:"cases"`
},
) {
	t.Helper()
	code, stdout, stderr := runEvalctl(t, "", append([]string{"dataset", "add", "--summary", "json"}, args...)...)
	if code == exitOK {
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("dataset add --summary json: %v\n%s", err, stdout)
		}
	} else {
		t.Logf("stderr: %s", stderr)
	}
	return code, out
}

// The default selection captures every agent case with a failed result,
// once: the same failure in a second trace (other call ids, timings,
// argument order and number spelling) is a duplicate. The files carry the
// input and what the agent did redacted, the results at capture and no
// expectation; a second add of the same traces changes no file.
func TestDatasetAddCapturesEachFailureOnce(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	code, got := addJSON(t, ds, "--config", cfg, prod)
	if code != exitOK || got.Added != 2 || got.Duplicates != 1 || got.Cases != 2 {
		t.Fatalf("exit %d, %+v; want 2 added (failed refund, wrong order), 1 duplicate", code, got)
	}
	refundID := got.AddedIDs[0]
	c, raw := readCaseFile(t, ds, refundID)
	if c.ID != refundID || !dataset.ValidID(c.ID) {
		t.Fatalf("case id %q in file %s", c.ID, refundID)
	}
	for _, secret := range []string{"bob@example.com", "CUST-12345678"} {
		if strings.Contains(raw, secret) {
			t.Errorf("case file holds %q:\n%s", secret, raw)
		}
	}
	if want := "Refund order 42 for [REDACTED:email#1] (customer [REDACTED:customer_id#1]), please."; len(c.Input) != 1 || c.Input[0].Content != want || c.Input[0].Role != "user" {
		t.Errorf("input %+v, want one user message %q", c.Input, want)
	}
	if len(c.Observed.ToolCalls) != 1 || c.Observed.ToolCalls[0].Name != "lookup_order" ||
		c.Observed.ToolCalls[0].Arguments["email"] != "[REDACTED:email#1]" || c.Observed.ToolCalls[0].Arguments["order"] != 42.0 {
		t.Errorf("observed calls %+v", c.Observed.ToolCalls)
	}
	if c.Observed.Output != "Sorry, I could not look the order up." {
		t.Errorf("observed output %q", c.Observed.Output)
	}
	if c.Source.TraceID != "da7a0000000000000000000000000001" || c.Source.Service != "support-bot" || c.Source.StartTime != "2025-11-25T19:46:40Z" {
		t.Errorf("source %+v", c.Source)
	}
	if c.Expected != nil || !strings.Contains(raw, `"expected": null`) {
		t.Errorf("expected should be null until pinned:\n%s", raw)
	}
	statuses := map[string]string{}
	for _, r := range c.Results {
		statuses[r.Name] = r.Status
		if r.Score == nil || !strings.HasPrefix(r.Version, "sha256:") {
			t.Errorf("result %s has no score or no version (§24): %+v", r.Name, r)
		}
	}
	if statuses["no_tool_errors"] != "failed" || statuses["refund_flow"] != "failed" {
		t.Errorf("results at capture %+v", c.Results)
	}
	if got.DuplicateIDs[0] != refundID {
		t.Errorf("duplicate %s, want the refund case %s", got.DuplicateIDs[0], refundID)
	}

	// The manifest lists both cases by id, with their files.
	var m dataset.Manifest
	raw2, _ := os.ReadFile(filepath.Join(ds, "dataset.json"))
	if err := json.Unmarshal(raw2, &m); err != nil || len(m.Cases) != 2 || !sort.SliceIsSorted(m.Cases, func(i, j int) bool { return m.Cases[i].ID < m.Cases[j].ID }) {
		t.Fatalf("manifest %v: %s", err, raw2)
	}

	before := snapshot(t, ds)
	code, got = addJSON(t, ds, "--config", cfg, prod)
	if code != exitOK || got.Added != 0 || got.Duplicates != 3 || got.Cases != 2 {
		t.Fatalf("second add: exit %d, %+v; want 0 added, 3 duplicates", code, got)
	}
	if after := snapshot(t, ds); !equalMaps(before, after) {
		t.Error("a second add of the same traces changed the dataset's files")
	}

	code, out, _ := runEvalctl(t, "", "dataset", "add", ds, "--config", cfg, prod)
	if code != exitOK || !strings.Contains(out, "added 0 case(s), 3 duplicate(s)") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// --where selects with run_if's CEL; names it reads must be evaluators of
// agent cases, and a condition that does not compile is bad usage.
func TestDatasetAddWhere(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	code, got := addJSON(t, ds, "--config", cfg, "--where", `results.refund_flow.status == "failed" && !case.input.contains("bob")`, prod)
	if code != exitOK || got.Added != 1 {
		t.Fatalf("exit %d, %+v; want the wrong-order case only", code, got)
	}
	c, _ := readCaseFile(t, ds, got.AddedIDs[0])
	if c.Source.TraceID != "da7a0000000000000000000000000004" {
		t.Errorf("captured %s, want the wrong-order trace", c.Source.TraceID)
	}
	code, got = addJSON(t, filepath.Join(dir, "all"), "--config", cfg, "--where", `results.no_tool_errors.passed`, prod)
	if code != exitOK || got.Added != 2 || got.Duplicates != 0 {
		t.Errorf("--where passed: exit %d, %+v; want the clean and the wrong-order run", code, got)
	}
	for _, where := range []string{`results.nope.status == "failed"`, `results.refund_flow.status ==`, `1 + 1`} {
		code, _, stderr := runEvalctl(t, "", "dataset", "add", filepath.Join(dir, "bad"), "--config", cfg, "--where", where, prod)
		if code != exitUsage || !strings.Contains(stderr, "--where") {
			t.Errorf("--where %q: exit %d, %s", where, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("a refused add created the dataset directory")
	}
}

// The same traces from a (fake) Jaeger query API give the same cases as
// from the file: same ids, so a file capture and a Jaeger capture dedupe.
func TestDatasetAddFromJaeger(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	export := jaegerExportOf(t, dsTraces(t, failedRefund, sameFailureAgain, cleanRun, wrongOrder))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/services":
			_, _ = w.Write([]byte(`{"data": ["support-bot"]}`))
		case "/api/traces":
			_, _ = w.Write(export)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ds := filepath.Join(dir, "ds")
	code, fromJaeger := addJSON(t, ds, "--config", cfg, "--jaeger", srv.URL, "--service", "support-bot", "--lookback", "87600h")
	if code != exitOK || fromJaeger.Added != 2 || fromJaeger.Duplicates != 1 {
		t.Fatalf("from Jaeger: exit %d, %+v", code, fromJaeger)
	}
	code, fromFile := addJSON(t, ds, "--config", cfg, prod)
	if code != exitOK || fromFile.Added != 0 || fromFile.Duplicates != 3 {
		t.Errorf("the file's cases after Jaeger's: exit %d, %+v; want all duplicates", code, fromFile)
	}
}

func TestDatasetBadUsageExit2(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	for name, args := range map[string][]string{
		"no dir":       {"dataset", "add"},
		"no config":    {"dataset", "add", filepath.Join(dir, "ds"), prod},
		"no input":     {"dataset", "add", filepath.Join(dir, "ds"), "--config", cfg},
		"bad input":    {"dataset", "add", filepath.Join(dir, "ds"), "--config", cfg, cfg},
		"unknown sub":  {"dataset", "frobnicate"},
		"list missing": {"dataset", "list", filepath.Join(dir, "nothing")},
		"run missing":  {"run", "--config", cfg, "--dataset", filepath.Join(dir, "nothing"), prod},
	} {
		if code, _, stderr := runEvalctl(t, "", args...); code != exitUsage {
			t.Errorf("%s: exit %d, want 2\n%s", name, code, stderr)
		}
	}
}

// Pins: an unknown id, invalid JSON, an expectation that does not fit §3,
// or a good run that is not in the file exit 2 and change no file; good
// pins set `expected` in the §3 shapes, merge with what was pinned, and
// show in list's PINNED column and filters.
func TestDatasetPinAndList(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund, wrong := got.AddedIDs[0], got.AddedIDs[1]

	before := snapshot(t, ds)
	good := writeTraces(t, dir, "good.jsonl", dsTraces(t, cleanRun))
	for name, args := range map[string][]string{
		"unknown id":         {refund[:15] + "0", "--tool-calls", `["lookup_order"]`},
		"not an id":          {"../dataset", "--output", "x"},
		"invalid JSON":       {refund, "--tool-calls", `[{"name": "lookup_order"`},
		"not an array":       {refund, "--tool-calls", `{"name": "lookup_order"}`},
		"call without name":  {refund, "--tool-calls", `[{"arguments": {"order": 42}}]`},
		"arguments a number": {refund, "--tool-calls", `[{"name": "lookup_order", "arguments": 42}]`},
		"empty name":         {refund, "--tool-calls", `["lookup_order", ""]`},
		"blank name":         {refund, "--tool-calls", `[{"name": "  "}]`},
		"misspelt arguments": {refund, "--tool-calls", `[{"name": "lookup_order", "argumnts": {"order": 42}}]`},
		"nothing to pin":     {refund},
		"from without trace": {refund, "--from", good},
		"from unknown trace": {refund, "--from", good, "--trace-id", "da7a0000000000000000000000000099"},
		"from and calls":     {refund, "--from", good, "--trace-id", "da7a0000000000000000000000000003", "--tool-calls", `[]`},
	} {
		code, _, stderr := runEvalctl(t, "", append([]string{"dataset", "pin", ds}, args...)...)
		if code != exitUsage || stderr == "" {
			t.Errorf("%s: exit %d, want 2 with a message\n%s", name, code, stderr)
		}
	}
	if !equalMaps(before, snapshot(t, ds)) {
		t.Fatal("a refused pin changed the dataset's files")
	}

	if code, out, stderr := runEvalctl(t, "", "dataset", "pin", ds, refund, "--tool-calls", `[{"name": "lookup_order", "arguments": {"order": 42}}, "refund"]`); code != exitOK {
		t.Fatalf("pin: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, refund, "--output", "Refunded order 42."); code != exitOK {
		t.Fatalf("pin --output: exit %d\n%s", code, stderr)
	}
	c, raw := readCaseFile(t, ds, refund)
	if string(c.Expected.ToolCalls) != `[{"arguments":{"order":42},"name":"lookup_order"},"refund"]` || string(c.Expected.Output) != `"Refunded order 42."` {
		t.Errorf("expected after two pins: %s", raw)
	}
	if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, wrong, "--from", good, "--trace-id", "DA7A0000000000000000000000000003"); code != exitOK {
		t.Fatalf("pin --from: exit %d\n%s", code, stderr)
	}
	c, _ = readCaseFile(t, ds, wrong)
	if string(c.Expected.ToolCalls) != `[{"arguments":{"order":7},"name":"lookup_order"},{"arguments":{"order":7},"name":"refund"}]` {
		t.Errorf("pinned from the good run: %s", c.Expected.ToolCalls)
	}

	_, text, _ := runEvalctl(t, "", "dataset", "list", ds)
	if !strings.Contains(text, "PINNED") || strings.Count(text, "  yes  ") != 2 {
		t.Errorf("list:\n%s", text)
	}
	code, js, _ := runEvalctl(t, "", "dataset", "list", ds, "--json", "--failed", "no_tool_errors")
	var rows []listedCase
	if err := json.Unmarshal([]byte(js), &rows); code != exitOK || err != nil || len(rows) != 1 || rows[0].ID != refund || !rows[0].Pinned {
		t.Errorf("list --json --failed no_tool_errors: exit %d, %v\n%s", code, err, js)
	}
	_, js, _ = runEvalctl(t, "", "dataset", "list", ds, "--json", "--unpinned")
	if strings.TrimSpace(js) != "[]" {
		t.Errorf("list --unpinned: %s", js)
	}
}

// run --dataset: the replays (tagged eval.dataset.case_id) are scored
// against their case's pin, not the trace's own expectation; a pinned case
// without a replay is "not run" and fails the gate; the summary, JUnit and
// report say the same. With every case replayed and right, the gate holds.
func TestRunDatasetGate(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund, wrong := got.AddedIDs[0], got.AddedIDs[1]
	for id, calls := range map[string]string{refund: `["lookup_order", "refund"]`, wrong: `["lookup_order", "refund"]`} {
		if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, id, "--tool-calls", calls); code != exitOK {
			t.Fatal(stderr)
		}
	}
	tag := func(r dsRun, id string, trace byte) dsRun {
		r.trace = trace
		// The trace's own expectation says something else: the pin wins.
		r.attrs = map[string]any{dataset.AttrCaseID: id, "eval.expected.tool_calls": `["something_else"]`}
		return r
	}
	fixedRefund := tag(dsRun{prompt: refundPrompt, answer: "Refunded.", calls: []dsCall{
		{name: "lookup_order", args: `{"order": 42}`}, {name: "refund", args: `{"order": 42}`}}}, refund, 0x11)

	// Only the refund is replayed, fixed: one passed, one not run.
	replay := writeTraces(t, dir, "replay1.jsonl", dsTraces(t, fixedRefund))
	junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.html")
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--summary", "json", "--junit", junit, "--report", report, replay)
	var sum struct {
		Dataset datasetSummary `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	d := sum.Dataset
	if code != exitFailed || d.Pinned != 2 || d.Run != 1 || d.Passed != 1 || d.Failed != 0 || len(d.NotRun) != 1 || d.NotRun[0] != wrong {
		t.Fatalf("exit %d, dataset %+v; want 2 pinned, 1 run and passed, %s not run\n%s", code, d, wrong, stderr)
	}
	if !strings.Contains(stderr, "gate dataset failed") {
		t.Errorf("stderr does not say the gate failed:\n%s", stderr)
	}
	jb, _ := os.ReadFile(junit)
	var suites junitSuites
	if err := xml.Unmarshal(jb, &suites); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range suites.Suites {
		if s.Name == "dataset" {
			found = true
			if s.Tests != 2 || s.Failures != 1 {
				t.Errorf("JUnit dataset suite: %d tests, %d failures; want 2, 1", s.Tests, s.Failures)
			}
		}
	}
	if !found || !strings.Contains(string(jb), "not run") {
		t.Errorf("JUnit has no dataset suite saying not run:\n%s", jb)
	}
	rb, _ := os.ReadFile(report)
	if !strings.Contains(string(rb), `id="dataset"`) || !strings.Contains(string(rb), "case "+wrong+": not run") {
		t.Error("the report has no dataset section naming the case not run")
	}
	_, text, _ := runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, replay)
	if !strings.Contains(text, "NOT RUN "+wrong) || !strings.Contains(text, "FAIL dataset") {
		t.Errorf("text summary:\n%s", text)
	}

	// Both replayed; the wrong-order one still wrong: failed, exit 1.
	stillWrong := tag(wrongOrder, wrong, 0x12)
	replay = writeTraces(t, dir, "replay2.jsonl", dsTraces(t, fixedRefund, stillWrong))
	code, out, _ = runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--summary", "json", replay)
	_ = json.Unmarshal([]byte(out), &sum)
	if d := sum.Dataset; code != exitFailed || d.Run != 2 || d.Passed != 1 || d.Failed != 1 || len(d.NotRun) != 0 {
		t.Errorf("one replay still wrong: exit %d, %+v", code, d)
	}

	// Both fixed: green.
	fixedWrong := tag(dsRun{prompt: wrongOrder.prompt, answer: "Refunded.", calls: []dsCall{
		{name: "lookup_order", args: `{"order": 9}`}, {name: "refund", args: `{"order": 9}`}}}, wrong, 0x13)
	replay = writeTraces(t, dir, "replay3.jsonl", dsTraces(t, fixedRefund, fixedWrong))
	code, out, stderr = runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--summary", "json", replay)
	_ = json.Unmarshal([]byte(out), &sum)
	if d := sum.Dataset; code != exitOK || d.Run != 2 || d.Passed != 2 {
		t.Errorf("both fixed: exit %d, %+v\n%s", code, d, stderr)
	}
}

// run --dataset --record appends each pinned case's outcome, with its
// results' evaluator versions, to DIR/history.jsonl; `dataset history`
// reads a case's runs back, oldest first, a not-run one included.
func TestRunDatasetRecordsHistory(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund, wrong := got.AddedIDs[0], got.AddedIDs[1]
	for _, id := range got.AddedIDs {
		if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, id, "--tool-calls", `["lookup_order", "refund"]`); code != exitOK {
			t.Fatal(stderr)
		}
	}
	fixed := dsRun{trace: 0x21, prompt: refundPrompt, answer: "Refunded.", attrs: map[string]any{dataset.AttrCaseID: refund},
		calls: []dsCall{{name: "lookup_order", args: `{"order": 42}`}, {name: "refund", args: `{"order": 42}`}}}
	replay := writeTraces(t, dir, "replay.jsonl", dsTraces(t, fixed))
	for range 2 {
		if code, _, stderr := runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--record", replay); code != exitFailed {
			t.Fatalf("exit %d (the wrong-order case is not run)\n%s", code, stderr)
		}
	}
	code, out, stderr := runEvalctl(t, "", "dataset", "history", ds, refund, "--json")
	var entries []dataset.HistoryEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e dataset.HistoryEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %q\n%s", err, line, stderr)
		}
		entries = append(entries, e)
	}
	if code != exitOK || len(entries) != 2 || entries[0].Status != "passed" || len(entries[0].Results) != 2 ||
		!strings.HasPrefix(entries[0].Results[0].Version, "sha256:") || entries[0].TraceIDs[0] != "da7a0000000000000000000000000021" {
		t.Fatalf("history of %s: exit %d, %+v", refund, code, entries)
	}
	_, text, _ := runEvalctl(t, "", "dataset", "history", ds, wrong)
	if !strings.Contains(text, "not_run") || !strings.Contains(text, "2 run(s) recorded") {
		t.Errorf("history of the case not run:\n%s", text)
	}
	if code, _, _ := runEvalctl(t, "", "dataset", "history", ds, "0000000000000000"); code != exitUsage {
		t.Errorf("history of an unknown case: exit %d, want 2", code)
	}
}

// A case file that the manifest does not list (a merge that kept one
// side's dataset.json) is still a case of the dataset: its pin is gated
// and, not replayed, it fails as not run; a dataset is never silently
// smaller than its case files.
func TestRunDatasetCaseFileMissingFromManifest(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund, wrong := got.AddedIDs[0], got.AddedIDs[1]
	for _, id := range []string{refund, wrong} {
		if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, id, "--tool-calls", `["lookup_order", "refund"]`); code != exitOK {
			t.Fatal(stderr)
		}
	}
	manifest := filepath.Join(ds, dataset.ManifestFile)
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var m dataset.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Cases = slices.DeleteFunc(m.Cases, func(e dataset.Entry) bool { return e.ID == wrong })
	b, _ := json.Marshal(m)
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}

	_, text, _ := runEvalctl(t, "", "dataset", "list", ds)
	if !strings.Contains(text, wrong) {
		t.Errorf("list does not show the unlisted case %s:\n%s", wrong, text)
	}
	replay := writeTraces(t, dir, "replay.jsonl", dsTraces(t, dsRun{prompt: refundPrompt, answer: "Refunded.", trace: 0x11,
		attrs: map[string]any{dataset.AttrCaseID: refund},
		calls: []dsCall{{name: "lookup_order", args: `{"order": 42}`}, {name: "refund", args: `{"order": 42}`}}}))
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--summary", "json", replay)
	var sum struct {
		Dataset datasetSummary `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := sum.Dataset; code != exitFailed || d.Pinned != 2 || len(d.NotRun) != 1 || d.NotRun[0] != wrong {
		t.Errorf("exit %d, dataset %+v; want 2 pinned, %s not run, exit 1\n%s", code, d, wrong, stderr)
	}
}

// No false green: a pin that no evaluator of the config reads (only
// tool_error here, which never looks at expected tool calls or output) is
// not checked, so its case fails and says why, instead of passing on
// whatever else was scored.
func TestRunDatasetPinReadByNoEvaluator(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund := got.AddedIDs[0]
	if code, _, stderr := runEvalctl(t, "", "dataset", "pin", ds, refund, "--tool-calls", `["lookup_order", "refund"]`); code != exitOK {
		t.Fatal(stderr)
	}
	// The replay calls refund before lookup_order, without a tool error.
	replay := writeTraces(t, dir, "replay.jsonl", dsTraces(t, dsRun{prompt: refundPrompt, answer: "Refunded.", trace: 0x11,
		attrs: map[string]any{dataset.AttrCaseID: refund},
		calls: []dsCall{{name: "refund", args: `{"order": 42}`}, {name: "lookup_order", args: `{"order": 42}`}}}))
	errorsOnly := writeFile(t, "errors-only.yaml", "evaluators:\n  - type: tool_error\n    name: no_tool_errors\n")
	code, out, stderr := runEvalctl(t, "", "run", "--config", errorsOnly, "--dataset", ds, "--summary", "json", replay)
	var sum struct {
		Dataset datasetSummary `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	d := sum.Dataset
	if code != exitFailed || d.Failed != 1 || len(d.Cases) != 1 || !strings.Contains(strings.Join(d.Cases[0].Failures, ";"), "tool calls") {
		t.Errorf("exit %d, dataset %+v; want the case failed: no evaluator reads its pinned tool calls\n%s", code, d, stderr)
	}

	// A reader that did not run on the replay (its `when` selects another
	// agent) checks nothing either.
	elsewhere := writeFile(t, "elsewhere.yaml", "evaluators:\n  - type: tool_error\n    name: no_tool_errors\n"+
		"  - type: tool_trajectory\n    name: refund_flow\n    when: ['attributes[\"gen_ai.agent.name\"] == \"nobody\"']\n")
	code, out, stderr = runEvalctl(t, "", "run", "--config", elsewhere, "--dataset", ds, "--summary", "json", replay)
	_ = json.Unmarshal([]byte(out), &sum)
	if d := sum.Dataset; code != exitFailed || d.Failed != 1 || !strings.Contains(strings.Join(d.Cases[0].Failures, ";"), "pinned tool calls not checked") {
		t.Errorf("reader not run: exit %d, %+v\n%s", code, d, stderr)
	}

	// With an evaluator that compares them, the wrong order fails on its own
	// account, and the right order passes.
	code, out, _ = runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, "--summary", "json", replay)
	_ = json.Unmarshal([]byte(out), &sum)
	if d := sum.Dataset; code != exitFailed || d.Failed != 1 || strings.Contains(strings.Join(d.Cases[0].Failures, ";"), "no evaluator") {
		t.Errorf("tool_trajectory configured: exit %d, %+v", code, d)
	}
	right := writeTraces(t, dir, "right.jsonl", dsTraces(t, dsRun{prompt: refundPrompt, answer: "Refunded.", trace: 0x12,
		attrs: map[string]any{dataset.AttrCaseID: refund},
		calls: []dsCall{{name: "lookup_order", args: `{"order": 42}`}, {name: "refund", args: `{"order": 42}`}}}))
	if code, out, stderr := runEvalctl(t, "", "run", "--config", cfg, "--dataset", ds, right); code != exitOK {
		t.Errorf("right order: exit %d\n%s\n%s", code, out, stderr)
	}
}
