package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

const exampleTraceURL = "https://jaeger.example.com/trace/{trace_id}?uiFind={span_id}"

// exampleReport writes the report for the examples, with a gate and trace links.
func exampleReport(t *testing.T, path string) {
	t.Helper()
	args := append([]string{"run", "--config", "../../examples/evalctl.yaml", "--report", path,
		"--trace-url", exampleTraceURL, "--min-pass-rate", "booking_flow=0.9"}, exampleTraces...)
	if code, out, stderr := runEvalctl(t, "", args...); code != exitFailed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

// chromium finds the headless browser. The test is skipped without it,
// unless CI_REQUIRE_CHROMIUM is set (.ci/run installs it and sets it), so
// CI cannot pass by skipping.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed, and CI_REQUIRE_CHROMIUM is set")
	}
	t.Skip("chromium is not installed (Debian: apt-get install chromium)")
	return ""
}

// runChromium runs headless Chromium on a local file with everything that
// could reach the network switched off.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// The report is self-contained: nothing in it is fetched.
func TestReportIsSelfContained(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.html")
	exampleReport(t, p)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<link", " src=", "@import", "url(", "<iframe", "fetch(", "XMLHttpRequest"} {
		if strings.Contains(page, bad) {
			t.Errorf("the report loads something: %q", bad)
		}
	}
	// The only addresses are the trace links.
	for _, m := range regexp.MustCompile(`https?://[^"'\s<]+`).FindAllString(page, -1) {
		if !strings.HasPrefix(m, "https://jaeger.example.com/trace/") {
			t.Errorf("an address that is not a trace link: %s", m)
		}
	}
}

// Everything quoted from a trace is escaped, and a javascript: trace URL
// does not become a link.
func TestReportEscapes(t *testing.T) {
	sum := newSummary([]*evaluators.Instance{{Name: "booking_flow", Type: "tool_trajectory"}})
	c := &adapter.Case{
		TraceID: pcommon.TraceID([16]byte{1}), SpanID: pcommon.SpanID([8]byte{2}),
		SpanName:  `"><img src=x onerror=alert(1)>`,
		ToolCalls: []adapter.ToolCall{{Name: "<script>alert(2)</script>", RawArguments: "{"}},
	}
	sum.add(engine.Report{Evaluations: []engine.Evaluation{{Case: c, Results: []evaluators.Result{
		{Name: "booking_flow", Status: evaluators.StatusFailed, Score: 0, Threshold: 1, Reason: "<script>alert(3)</script>"},
	}}}})
	var buf strings.Builder
	if err := writeReport(&buf, sum, nil, "javascript:alert(4)//{trace_id}"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<img src=x", "<script>alert", "javascript:alert"} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the report", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(3)&lt;/script&gt;") {
		t.Error("the reason is not shown escaped")
	}
}

// The report opened in headless Chromium: the script ran, evaluators are
// worst first with their intervals and histograms, each failing case shows
// the two trajectories with the first divergence marked and a trace link.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	p := filepath.Join(t.TempDir(), "report.html")
	exampleReport(t, p)
	dom := runChromium(t, bin, "--dump-dom", "file://"+p)

	// The script ran to its end: it marks the body with the number of cases.
	if !strings.Contains(dom, `data-ready="4"`) {
		t.Fatalf("the page script did not run (no data-ready=\"4\" on body):\n%.2000s", dom)
	}
	// Worst first: booking_flow (1 of 3) before tool_error (2 of 3) before the 100 % ones.
	cards := regexp.MustCompile(`class="card[^"]*" data-evaluator="([a-z_]+)"`).FindAllStringSubmatch(dom, -1)
	var order []string
	for _, c := range cards {
		order = append(order, c[1])
	}
	if got := strings.Join(order, ","); got != "booking_flow,tool_error,tool_efficiency,tool_call_validity,tool_correctness,token_usage" {
		t.Errorf("evaluator order %s", got)
	}
	for _, want := range []string{
		"33.3 %", "95 % CI 6.1 – 79.2 %", // booking_flow: 1 of 3, Wilson [0.061, 0.792]
		`aria-label="score histogram"`,
		"1 gate(s) failed", "booking_flow: pass rate 0.333 [0.061, 0.792] is below the bar 0.9",
		"4 failing cases",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	// The wrong-order run: booked the hotel first. Lowest score first, so its
	// booking_flow failure (0.5) leads, diverging at step 1.
	firstCase := dom[strings.Index(dom, `<div class="case failed"`):]
	firstCase = firstCase[:strings.Index(firstCase, "</table>")]
	row := regexp.MustCompile(`(?s)<tr class="diverges"><td class="step">(\d+)</td><td>(.*?)</td><td>(.*?)</td></tr>`).FindStringSubmatch(firstCase)
	if row == nil || row[1] != "1" || !strings.HasPrefix(row[2], "search_flights(") || !strings.HasPrefix(row[3], "book_hotel(") ||
		!strings.Contains(row[3], "first divergence") {
		t.Errorf("first divergence row %q in\n%s", row, firstCase)
	}
	if !strings.Contains(firstCase, `href="https://jaeger.example.com/trace/8a3c60f7d188f8fa79d48a391a778fa6?uiFind=00000000000000a1"`) {
		t.Errorf("no trace link in\n%s", firstCase)
	}

	// The filter: #evaluator=tool_error shows only that evaluator's case.
	dom = runChromium(t, bin, "--dump-dom", "file://"+p+"#evaluator=tool_error")
	visible := regexp.MustCompile(`<div class="case failed" data-evaluator="([a-z_]+)"`).FindAllStringSubmatch(dom, -1)
	if len(visible) != 1 || visible[0][1] != "tool_error" || !strings.Contains(dom, "1 of 4 failing cases (tool_error)") {
		t.Errorf("filtered view shows %q", visible)
	}

	// EVALCTL_WRITE_SCREENSHOT=1 refreshes the README's picture of this report.
	if os.Getenv("EVALCTL_WRITE_SCREENSHOT") == "1" {
		png, err := filepath.Abs("../../docs/report.png")
		if err != nil {
			t.Fatal(err)
		}
		runChromium(t, bin, "--hide-scrollbars", "--window-size=1280,1300", "--screenshot="+png, "file://"+p)
	}
}

// A run with nothing failing still gives a page, saying so; an evaluator
// that scored nothing shows no rate rather than 0 %.
func TestReportWithoutFailures(t *testing.T) {
	sum := newSummary([]*evaluators.Instance{{Name: "tool_error", Type: "tool_error"}, {Name: "helpful", Type: "llm_judge"}})
	sum.add(engine.Report{Evaluations: []engine.Evaluation{{Case: &adapter.Case{}, Results: []evaluators.Result{
		{Name: "tool_error", Status: evaluators.StatusPassed, Score: 1, Threshold: 1},
		{Name: "helpful", Status: evaluators.StatusSkipped, Reason: "no output"},
	}}}})
	var buf strings.Builder
	if err := writeReport(&buf, sum, nil, ""); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"No failing case.", "no scored case", "100.0 %"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !strings.Contains(page, `<div class="rate ">—</div>`) {
		t.Error("the evaluator without scores does not show its rate as —")
	}
	// Evaluators with a rate come before those without.
	if strings.Index(page, `data-evaluator="tool_error"`) > strings.Index(page, `data-evaluator="helpful"`) {
		t.Error("the evaluator without a rate is listed first")
	}
}
