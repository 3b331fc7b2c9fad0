package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// wellFormed reads every token with encoding/xml in strict mode.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
	}
}

type parsedJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Tests int    `xml:"tests,attr"`
		Cases []struct {
			ClassName string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Type string `xml:"type,attr"`
				Text string `xml:",chardata"`
			} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitOneCasePerEvaluatorAndCase(t *testing.T) {
	sum := newSummary([]*evaluators.Instance{{Name: "booking_flow", Type: "tool_trajectory"}, {Name: "helpful", Type: "llm_judge"}})
	c := &adapter.Case{
		TraceID:  pcommon.TraceID([16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
		SpanID:   pcommon.SpanID([8]byte{0, 0, 0, 0, 0, 0, 0, 0xa1}),
		SpanName: "invoke_agent <travel>",
	}
	// A reason quoting model output: markup, a CDATA terminator, a NUL and
	// an escape character must not break the file.
	nasty := "missing book_hotel; output said <b>\"done\"</b> & ]]> \x00\x1b end"
	sum.add(engine.Report{Evaluations: []engine.Evaluation{{Case: c, Results: []evaluators.Result{
		{Name: "booking_flow", Status: evaluators.StatusFailed, Score: 0.5, Threshold: 1, Reason: nasty},
		{Name: "helpful", Status: evaluators.StatusTimeout, Reason: "judge did not answer within 30s"},
	}}, {Case: c, Results: []evaluators.Result{
		{Name: "booking_flow", Status: evaluators.StatusPassed, Score: 1, Threshold: 1, Reason: "all calls in order"},
		{Name: "helpful", Status: evaluators.StatusSkipped, Reason: "no output"},
	}}}})
	var buf strings.Builder
	if err := writeJUnit(&buf, sum, "https://jaeger.example.com/trace/{trace_id}"); err != nil {
		t.Fatal(err)
	}
	b := []byte(buf.String())
	wellFormed(t, b)
	var got parsedJUnit
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 4 || got.Failures != 1 || got.Errors != 1 || got.Skipped != 1 || len(got.Suites) != 2 {
		t.Fatalf("totals %+v", got)
	}
	bf := got.Suites[0]
	if bf.Name != "booking_flow" || bf.Tests != 2 || bf.Cases[0].ClassName != "booking_flow" {
		t.Errorf("suite %+v", bf)
	}
	f := bf.Cases[0].Failure
	traceID := "ab0102030405060708090a0b0c0d0e0f"
	if f == nil || !strings.Contains(f.Message, `<b>"done"</b> & ]]>`) || !strings.Contains(f.Text, "trace_id: "+traceID) ||
		!strings.Contains(f.Text, "https://jaeger.example.com/trace/"+traceID) || !strings.Contains(f.Text, "missing book_hotel") {
		t.Errorf("failure %+v", f)
	}
	if !strings.Contains(bf.Cases[0].Name, traceID) || !strings.Contains(bf.Cases[0].Name, "invoke_agent <travel>") {
		t.Errorf("test case name %q", bf.Cases[0].Name)
	}
	if bf.Cases[1].Failure != nil || bf.Cases[1].Error != nil || bf.Cases[1].Skipped != nil {
		t.Errorf("the passing case carries %+v", bf.Cases[1])
	}
	h := got.Suites[1]
	if h.Cases[0].ClassName != "helpful" || h.Cases[0].Error == nil || h.Cases[0].Error.Type != "timeout" ||
		!strings.Contains(h.Cases[0].Error.Text, traceID) || h.Cases[1].Skipped == nil {
		t.Errorf("helpful suite %+v", h)
	}
}

func TestJUnitFromTheCLI(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junit.xml")
	args := append([]string{"run", "--config", "../../examples/evalctl.yaml", "--junit", p}, exampleTraces...)
	if code, _, stderr := runEvalctl(t, "", args...); code != exitFailed {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b)
	var got parsedJUnit
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// The summary's 4 failures, one test case per (evaluator, case).
	if got.Failures != 4 || got.Tests != 25 || len(got.Suites) != 6 {
		t.Errorf("tests %d failures %d suites %d", got.Tests, got.Failures, len(got.Suites))
	}
	if code, _, stderr := runEvalctl(t, "", "run", "--config", "../../examples/evalctl.yaml",
		"--junit", filepath.Join(t.TempDir(), "no", "such", "dir.xml"), exampleTraces[0]); code != exitUsage || !strings.Contains(stderr, "--junit") {
		t.Errorf("unwritable --junit: exit %d %q", code, stderr)
	}
}
