package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// calibTraceID and the span ids of case i of the calibration fixture.
func calibTraceID(i int) string   { return fmt.Sprintf("%032x", 0xca1b0000+i) }
func calibAgentSpan(i int) string { return fmt.Sprintf("%016x", 0xa000+i) }
func calibChatSpan(i int) string  { return fmt.Sprintf("%016x", 0xc000+i) }

// writeCalibTraces writes n agent runs: an invoke_agent span with a chat
// span below it, asking "question i" and answering "answer i".
func writeCalibTraces(t *testing.T, n int) string {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty()
	ss.Resource().Attributes().PutStr("service.name", "support-agent")
	spans := ss.ScopeSpans().AppendEmpty().Spans()
	for i := range n {
		var tid pcommon.TraceID
		copy(tid[:], mustHex(t, calibTraceID(i)))
		var aid, cid pcommon.SpanID
		copy(aid[:], mustHex(t, calibAgentSpan(i)))
		copy(cid[:], mustHex(t, calibChatSpan(i)))
		start := pcommon.Timestamp(1764100000000000000 + uint64(i)*1e9)
		a := spans.AppendEmpty()
		a.SetTraceID(tid)
		a.SetSpanID(aid)
		a.SetName("invoke_agent support")
		a.SetStartTimestamp(start)
		a.SetEndTimestamp(start + 5e8)
		a.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		a.Attributes().PutStr("gen_ai.agent.name", "support")
		c := spans.AppendEmpty()
		c.SetTraceID(tid)
		c.SetSpanID(cid)
		c.SetParentSpanID(aid)
		c.SetName("chat model")
		c.SetStartTimestamp(start + 1e6)
		c.SetEndTimestamp(start + 4e8)
		c.Attributes().PutStr("gen_ai.operation.name", "chat")
		c.Attributes().PutStr("gen_ai.request.model", "model")
		c.Attributes().PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"question %d"}]}]`, i))
		c.Attributes().PutStr("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"text","content":"answer %d"}],"finish_reason":"stop"}]`, i))
	}
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "traces.json", string(b))
}

// The calibration fixture: the judge's score (on 1..5, so 0, 0.25, 0.5,
// 0.75, 1 on the [0, 1] scale) and the human label of each case.
//
//	group  cases   judge  score  human
//	A      0–13    5      1      pass
//	B      14      5      1      fail
//	C      15–18   4      0.75   pass
//	D      19      4      0.75   fail
//	E      20–24   3      0.5    fail
//	F      25–34   1      0      fail
//	G      35      2      0.25   pass
//	       36–39   5      1      (labels that make no pair: see calibLabels)
//
// By hand, at today's threshold 0.5 (judged pass: A–E; fail: F, G), with
// a = judged pass & human pass, b = pass & fail, c = fail & pass,
// d = fail & fail: a = 18, b = 7, c = 1, d = 10, 36 pairs;
// accuracy 28/36 = 0.7778; caught d/(b+d) = 10/17 = 0.5882; passed
// a/(a+c) = 18/19 = 0.9474; kappa 2(ad−bc)/((a+b)(b+d)+(a+c)(c+d)) =
// 346/634 = 0.5457. The sweep: t=0.25 (a19 b7 c0 d10) 380/632 = 0.6013;
// t=0.75 (a18 b2 c1 d15) 536/644 = 0.8323; t=1 (a14 b1 c5 d16)
// 438/654 = 0.6697; t=0 passes everything: undefined. Best: 0.75.
func calibJudgeScore(i int) int {
	switch {
	case i <= 14, i >= 36:
		return 5
	case i <= 19:
		return 4
	case i <= 24:
		return 3
	case i <= 34:
		return 1
	default:
		return 2
	}
}

func calibHumanPass(i int) bool {
	return i <= 13 || (i >= 15 && i <= 18) || i == 35
}

// calibJudge answers for the case whose question the prompt holds.
func calibJudge(t *testing.T) *judgetest.Server {
	q := regexp.MustCompile(`question (\d+)`)
	return judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		m := q.FindStringSubmatch(r.User())
		if m == nil {
			return judgetest.Reply{Status: 400, Body: "no question in the prompt"}
		}
		i, _ := strconv.Atoi(m[1])
		return judgetest.Reply{Content: fmt.Sprintf(`{"score": %d, "reason": "judged case %d"}`, calibJudgeScore(i), i)}
	})
}

func calibConfig(t *testing.T, srv *judgetest.Server, threshold string) string {
	return writeFile(t, "calibrate.yaml", "judges:\n  default:\n    endpoint: "+srv.Endpoint()+"\n    model: judge-model\n"+
		"evaluators:\n  - type: llm_judge\n    name: helpful\n    judge: default\n    criteria: Does the answer help?\n    score_range: [1, 5]\n"+
		"    threshold: "+threshold+"\n  - type: tool_error\n")
}

// calibLabels writes the labels of cases 0–35 in both formats — JSON Lines
// (with and without span ids, with extra fields) and OTLP/JSON logs of
// human results (by label, and by score.value alone) — and the ones that
// must make no pair: an unknown label, a name no evaluator has, a span
// with no result of the evaluator, a relabel, and a machine's result.
func calibLabels(t *testing.T) string {
	var b strings.Builder
	word := map[bool][]string{true: {"pass", "thumbs_up", "good"}, false: {"fail", "thumbs_down", "bad"}}
	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := range 36 {
		pass := calibHumanPass(i)
		switch i % 3 {
		case 0: // JSONL with the agent span's id
			fmt.Fprintf(&b, `{"trace_id":%q,"span_id":%q,"name":"helpful","label":%q,"critique":"case %d","reviewer":"ana"}`+"\n",
				calibTraceID(i), calibAgentSpan(i), word[pass][i%3], i)
		case 1: // JSONL without a span id: the trace's agent case
			fmt.Fprintf(&b, `{"trace_id":%q,"name":"helpful","label":%q}`+"\n", calibTraceID(i), word[pass][i%3])
		case 2: // an OTLP log record of a human result
			lr := recs.AppendEmpty()
			lr.SetEventName("gen_ai.evaluation.result")
			var tid pcommon.TraceID
			var sid pcommon.SpanID
			copy(tid[:], mustHex(t, calibTraceID(i)))
			copy(sid[:], mustHex(t, calibAgentSpan(i)))
			lr.SetTraceID(tid)
			lr.SetSpanID(sid)
			lr.Attributes().PutStr("gen_ai.evaluation.evaluator.type", "human")
			lr.Attributes().PutStr("gen_ai.evaluation.name", "helpful")
			if i%2 == 0 {
				lr.Attributes().PutStr("gen_ai.evaluation.score.label", word[pass][1])
			} else { // no label: score.value 1 is pass, 0 fail
				v := 0.0
				if pass {
					v = 1
				}
				lr.Attributes().PutDouble("gen_ai.evaluation.score.value", v)
			}
		}
	}
	// A machine's own result record: not a human label.
	m := recs.AppendEmpty()
	m.SetEventName("gen_ai.evaluation.result")
	m.Attributes().PutStr("gen_ai.evaluation.name", "helpful")
	m.Attributes().PutStr("gen_ai.evaluation.score.label", "fail")
	var lm plog.JSONMarshaler
	raw, err := lm.MarshalLogs(ld)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(raw)
	b.WriteString("\n")
	// No pair: an unknown label, an unknown name, the chat span (helpful
	// scores agent cases), and a relabel of case 0 (the first counts).
	fmt.Fprintf(&b, `{"trace_id":%q,"name":"helpful","label":"meh"}`+"\n", calibTraceID(36))
	fmt.Fprintf(&b, `{"trace_id":%q,"name":"polite","label":"pass"}`+"\n", calibTraceID(37))
	fmt.Fprintf(&b, `{"trace_id":%q,"span_id":%q,"name":"helpful","label":"pass"}`+"\n", calibTraceID(38), calibChatSpan(38))
	fmt.Fprintf(&b, `{"trace_id":%q,"name":"helpful","label":"fail"}`+"\n", calibTraceID(0))
	return writeFile(t, "labels.jsonl", b.String())
}

func mustHex(t *testing.T, s string) []byte {
	b := make([]byte, len(s)/2)
	if err := decodeID(b, s); err != nil {
		t.Fatal(err)
	}
	return b
}

type calibSummary struct {
	MinKappa   float64 `json:"min_kappa"`
	FitToGate  bool    `json:"fit_to_gate"`
	Evaluators []map[string]json.RawMessage
}

func (s calibSummary) evaluator(t *testing.T, name string) map[string]json.RawMessage {
	for _, e := range s.Evaluators {
		if string(e["name"]) == strconv.Quote(name) {
			return e
		}
	}
	t.Fatalf("no evaluator %s in the summary", name)
	return nil
}

func num(t *testing.T, e map[string]json.RawMessage, field string) float64 {
	t.Helper()
	var x *float64
	if err := json.Unmarshal(e[field], &x); err != nil || x == nil {
		t.Fatalf("%s = %s, want a number", field, e[field])
	}
	return *x
}

// Every figure of calibrate's JSON summary against the hand computation
// above, with the §25 field names; the unlabelled evaluator is listed as
// not calibrated; labels that make no pair are named on stderr.
func TestCalibrateFiguresByHand(t *testing.T) {
	srv := calibJudge(t)
	traces := writeCalibTraces(t, 40)
	code, out, stderr := runEvalctl(t, "", "calibrate", "--config", calibConfig(t, srv, "0.5"), "--labels", calibLabels(t), "--summary", "json", traces)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1 (not fit to gate)\n%s\n%s", code, out, stderr)
	}
	var sum calibSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	h := sum.evaluator(t, "helpful")
	for field, want := range map[string]float64{
		"pairs": 36, "accuracy": 28.0 / 36, "kappa": 346.0 / 634, "caught": 10.0 / 17, "passed": 18.0 / 19,
		"threshold": 0.5, "kappa_at_threshold": 346.0 / 634, "best_threshold": 0.75, "kappa_at_best_threshold": 536.0 / 644,
	} {
		if got := num(t, h, field); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", field, got, want)
		}
	}
	var conf map[string]map[string]int
	if err := json.Unmarshal(h["confusion"], &conf); err != nil {
		t.Fatal(err)
	}
	if conf["pass"]["pass"] != 18 || conf["pass"]["fail"] != 7 || conf["fail"]["pass"] != 1 || conf["fail"]["fail"] != 10 {
		t.Errorf("confusion %v", conf)
	}
	var ci [2]float64
	if err := json.Unmarshal(h["kappa_ci"], &ci); err != nil || !(ci[0] < 346.0/634 && 346.0/634 < ci[1]) || ci[0] >= 0.6 {
		t.Errorf("kappa_ci %s: want an interval around 0.546 whose lower bound is below 0.6", h["kappa_ci"])
	}
	if string(h["fit_to_gate"]) != "false" || string(h["calibrated"]) != "true" || sum.FitToGate {
		t.Errorf("fit_to_gate %s calibrated %s overall %v", h["fit_to_gate"], h["calibrated"], sum.FitToGate)
	}
	te := sum.evaluator(t, "tool_error")
	if string(te["calibrated"]) != "false" || string(te["kappa"]) != "null" || string(te["fit_to_gate"]) != "false" {
		t.Errorf("tool_error: calibrated %s kappa %s fit %s", te["calibrated"], te["kappa"], te["fit_to_gate"])
	}
	for _, want := range []string{
		`1 label "meh" is not one of pass/thumbs_up/good or fail/thumbs_down/bad`,
		`1 labels naming "polite", which is no evaluator of the config`,
		"1 gen_ai.evaluation.result records whose gen_ai.evaluation.evaluator.type is not human",
		"helpful: 1 label(s) made no pair: its span has no result of this evaluator",
		"helpful: 1 label(s) made no pair: a label for the same span came earlier (the first counts)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// The same pairs, deterministic: a second run gives the same interval.
	_, out2, _ := runEvalctl(t, "", "calibrate", "--config", calibConfig(t, srv, "0.5"), "--labels", calibLabels(t), "--summary", "json", traces)
	var sum2 calibSummary
	_ = json.Unmarshal([]byte(out2), &sum2)
	if string(sum2.evaluator(t, "helpful")["kappa_ci"]) != string(h["kappa_ci"]) {
		t.Errorf("kappa_ci changed between runs: %s then %s", h["kappa_ci"], sum2.evaluator(t, "helpful")["kappa_ci"])
	}
}

// At the best threshold, with a lower bar, the judge is fit to gate and
// calibrate exits 0; the text table says so.
func TestCalibrateTextFitToGate(t *testing.T) {
	srv := calibJudge(t)
	code, out, stderr := runEvalctl(t, "", "calibrate", "--config", calibConfig(t, srv, "0.75"), "--labels", calibLabels(t),
		"--min-kappa", "0.5", writeCalibTraces(t, 40))
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	row := regexp.MustCompile(`(?m)^helpful\s+\S+\s+36\s+0\.917\s+0\.832\s+\[(\S+), (\S+)\]\s+0\.882 \(15/17\)\s+0\.947 \(18/19\)\s+0\.75\s+0\.832\s+0\.75\s+0\.832\s+fit to gate\s*$`)
	if !row.MatchString(out) {
		t.Errorf("no helpful row with the hand-computed figures:\n%s", out)
	}
	for _, want := range []string{"tool_error", "not calibrated (no label)", fmt.Sprintf("judged pass %10d  %10d", 18, 2), "all 1 calibrated evaluator(s) fit to gate"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// Undefined figures are null with a reason, never a number: human labels
// all pass (the judge's side varies), and labels that meet no scored result.
func TestCalibrateUndefined(t *testing.T) {
	srv := calibJudge(t)
	var b strings.Builder
	for _, i := range []int{0, 1, 15, 20, 25} { // judged 1, 1, 0.75, 0.5, 0: all labelled pass
		fmt.Fprintf(&b, `{"trace_id":%q,"name":"helpful","label":"pass"}`+"\n", calibTraceID(i))
	}
	// tool_error's only label is on the chat span, where tool_error does not run.
	fmt.Fprintf(&b, `{"trace_id":%q,"span_id":%q,"name":"tool_error","label":"fail"}`+"\n", calibTraceID(0), calibChatSpan(0))
	code, out, stderr := runEvalctl(t, "", "calibrate", "--config", calibConfig(t, srv, "0.5"), "--labels", writeFile(t, "l.jsonl", b.String()),
		"--summary", "json", writeCalibTraces(t, 30))
	if code != exitFailed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var sum calibSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	h := sum.evaluator(t, "helpful")
	if got := num(t, h, "accuracy"); math.Abs(got-0.8) > 1e-12 {
		t.Errorf("accuracy %v, want 4/5", got)
	}
	var undefined map[string]string
	_ = json.Unmarshal(h["undefined"], &undefined)
	for _, f := range []string{"kappa", "kappa_ci", "caught", "kappa_at_threshold", "best_threshold", "kappa_at_best_threshold"} {
		if string(h[f]) != "null" || undefined[f] == "" {
			t.Errorf("%s = %s (reason %q), want null with a reason", f, h[f], undefined[f])
		}
	}
	if !strings.Contains(undefined["kappa"], "every human label is pass") {
		t.Errorf("kappa's reason: %q", undefined["kappa"])
	}
	te := sum.evaluator(t, "tool_error")
	_ = json.Unmarshal(te["undefined"], &undefined)
	if string(te["calibrated"]) != "true" || string(te["pairs"]) != "0" || string(te["accuracy"]) != "null" || !strings.Contains(undefined["accuracy"], "no pairs") {
		t.Errorf("tool_error with an unpaired label: %v", te)
	}
}

// The same labels give the same verdict in any order: kappa's bootstrap
// interval (and so fit_to_gate) does not depend on the order of the lines
// or of the --labels files.
func TestCalibrateIndependentOfLabelOrder(t *testing.T) {
	srv := calibJudge(t)
	cfg := calibConfig(t, srv, "0.5")
	traces := writeCalibTraces(t, 40)
	var lines []string
	for i := range 36 {
		lines = append(lines, fmt.Sprintf(`{"trace_id":%q,"span_id":%q,"name":"helpful","label":%q}`,
			calibTraceID(i), calibAgentSpan(i), passFail(calibHumanPass(i))))
	}
	forward := writeFile(t, "forward.jsonl", strings.Join(lines, "\n"))
	slices.Reverse(lines)
	backward := writeFile(t, "backward.jsonl", strings.Join(lines, "\n"))
	_, a, _ := runEvalctl(t, "", "calibrate", "--config", cfg, "--labels", forward, "--summary", "json", traces)
	_, b, _ := runEvalctl(t, "", "calibrate", "--config", cfg, "--labels", backward, "--summary", "json", traces)
	if a == "" || a != b {
		t.Errorf("the summary depends on the labels' order:\n%s\n---\n%s", a, b)
	}
}

// Bad labels are bad input (exit 2, naming the file and line); labels that
// name no evaluator calibrate nothing, which is no green.
func TestCalibrateBadLabels(t *testing.T) {
	srv := calibJudge(t)
	cfg := calibConfig(t, srv, "0.5")
	traces := writeCalibTraces(t, 2)
	for _, c := range []struct{ labels, want string }{
		{`{"trace_id":"00","name":"helpful","label":"pass"}`, "l.jsonl:1: trace_id \"00\": want 32 hex digits"},
		{"{\"trace_id\":\"" + calibTraceID(0) + "\",\"name\":\"helpful\",\"label\":\"pass\"}\n{\"name\":\"helpful\",\"label\":\"pass\"}", `l.jsonl:2: no "trace_id"`},
		{"{\"trace_id\":\"" + calibTraceID(0) + "\",\"label\":\"pass\"}", `no "name"`},
		{"not json", "l.jsonl:1: not JSON"},
		{"{\"trace_id\":\"" + calibTraceID(0) + "\",\"name\":\"helpful\",\"label\":\"pass\"}\n{not json", "l.jsonl:2: not JSON"},
		{"{\"trace_id\":\"" + calibTraceID(0) + "\",\"name\":\"helpful\",\"label\":\"pass\"}\n\n[1]", "l.jsonl:3: not a JSON object"},
	} {
		code, out, stderr := runEvalctl(t, "", "calibrate", "--config", cfg, "--labels", writeFile(t, "l.jsonl", c.labels), traces)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q (out %s)", c.labels, code, stderr, c.want, out)
		}
	}
	if code, _, stderr := runEvalctl(t, "", "calibrate", "--config", cfg, traces); code != exitUsage || !strings.Contains(stderr, "--labels is required") {
		t.Errorf("no --labels: exit %d %q", code, stderr)
	}
	code, out, stderr := runEvalctl(t, "", "calibrate", "--config", cfg, "--labels",
		writeFile(t, "l.jsonl", `{"trace_id":"`+calibTraceID(0)+`","name":"polite","label":"pass"}`), traces)
	if code != exitFailed || !strings.Contains(stderr, "no label names an evaluator of the config") {
		t.Errorf("labels naming no evaluator: exit %d\n%s\n%s", code, out, stderr)
	}
}

// The report's calibration section, opened in headless Chromium.
func TestCalibrateReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	srv := calibJudge(t)
	p := filepath.Join(t.TempDir(), "calibration.html")
	code, out, stderr := runEvalctl(t, "", "calibrate", "--config", calibConfig(t, srv, "0.5"), "--labels", calibLabels(t),
		"--report", p, "--trace-url", exampleTraceURL, writeCalibTraces(t, 40))
	if code != exitFailed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	dom := runChromium(t, bin, "--dump-dom", "file://"+p)
	card := dom[strings.Index(dom, `data-calibrated="helpful"`):]
	card = card[:strings.Index(card, `data-calibrated="tool_error"`)]
	for _, want := range []string{
		"not fit to gate", "κ 0.546", `aria-label="kappa interval"`,
		`<td class="agree">18</td><td class="disagree">7</td>`, `<td class="disagree">1</td><td class="agree">10</td>`,
		"36 pairs of 38 labels", "caught 58.8 % (10 of 17)", "passed 94.7 % (18 of 19)", "best 0.75 (kappa 0.832)",
		"8 disagreements", "critique: case 21", `href="https://jaeger.example.com/trace/` + calibTraceID(21),
	} {
		if !strings.Contains(card, want) {
			t.Errorf("the helpful card lacks %q:\n%s", want, card)
		}
	}
	if !strings.Contains(dom, "1 of 1 not fit") || !strings.Contains(dom, "no label names this evaluator") {
		t.Error("the section's heading or the unlabelled card is missing")
	}
	// The rest of the report is there too.
	if !strings.Contains(dom, `data-ready=`) {
		t.Error("the page script did not run")
	}
}
