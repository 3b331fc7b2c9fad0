package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/evalbridge/evalbridge/evaluators"
)

// JUnit XML (--junit) in the shape CI systems read: one <testsuite> per
// evaluator, one <testcase> per (evaluator, case) with classname the
// evaluator's name. failed → <failure>, error and timeout → <error>,
// skipped → <skipped/>. encoding/xml escapes the text, and replaces
// characters XML 1.0 cannot carry, so a reason quoting model output stays
// well-formed.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	// Properties carry the evaluator's provenance (docs/contract.md §24):
	// evaluator_version and evaluator_type.
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	// CDATA keeps the lines readable in a CI viewer; the text is
	// sanitized first (xmlText), as CDATA cannot escape anything.
	Text string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

func writeJUnit(w io.Writer, s *summary, traceURL string) error {
	byEval := map[string][]caseResult{}
	for _, r := range s.results {
		byEval[r.Evaluator] = append(byEval[r.Evaluator], r)
	}
	doc := junitSuites{Name: "evalctl"}
	for _, name := range s.order {
		suite := junitSuite{Name: name}
		if e := s.byName[name]; e != nil {
			suite.Properties = []junitProperty{{"evaluator_version", e.Version}, {"evaluator_type", e.EvaluatorType}}
		}
		for _, r := range byEval[name] {
			tc := junitCase{ClassName: name, Name: fmt.Sprintf("%s trace=%s span=%s", r.SpanName, r.TraceID, r.SpanID)}
			detail := func() string {
				var b strings.Builder
				fmt.Fprintf(&b, "%s\ntrace_id: %s\nspan_id: %s (%s)\n", r.Reason, r.TraceID, r.SpanID, r.SpanName)
				if r.Status == evaluators.StatusFailed {
					fmt.Fprintf(&b, "score: %.4g < threshold %.4g\n", r.Score, r.Threshold)
				}
				if link := traceLink(traceURL, r.TraceID, r.SpanID); link != "" {
					fmt.Fprintf(&b, "trace: %s\n", link)
				}
				return xmlText(b.String())
			}
			switch r.Status {
			case evaluators.StatusFailed:
				tc.Failure = &junitProblem{Message: r.Reason, Type: "failed", Text: detail()}
				suite.Failures++
			case evaluators.StatusError, evaluators.StatusTimeout:
				tc.Error = &junitProblem{Message: r.Reason, Type: string(r.Status), Text: detail()}
				suite.Errors++
			case evaluators.StatusSkipped:
				tc.Skipped = &junitSkipped{Message: r.Reason}
				suite.Skipped++
			}
			suite.Cases = append(suite.Cases, tc)
		}
		suite.Tests = len(suite.Cases)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
		doc.Skipped += suite.Skipped
		doc.Suites = append(doc.Suites, suite)
	}
	if s.dataset != nil {
		suite := datasetJUnitSuite(s.dataset)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Suites = append(doc.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlText replaces the characters XML 1.0 cannot carry (control
// characters other than tab and newlines, lone surrogates, U+FFFE/U+FFFF)
// with U+FFFD.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF, r == utf8.RuneError:
			return '\uFFFD'
		}
		return r
	}, s)
}

// traceLink fills a trace URL template's {trace_id} and {span_id}, the
// placeholders of the webhook exporter's trace_url; "" without a template.
func traceLink(tmpl, traceID, spanID string) string {
	if tmpl == "" {
		return ""
	}
	return strings.NewReplacer("{trace_id}", traceID, "{span_id}", spanID).Replace(tmpl)
}
