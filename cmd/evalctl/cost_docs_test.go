package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/cost.md's worked example: the documented command prints the
// documented output, and the per-1000-traces figures with and without the
// cascade are what estimate computes.
func TestCostDocsWorkedExample(t *testing.T) {
	raw, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const cmd = "$ evalctl estimate --config examples/cost.yaml examples/traces/*.json\n"
	at := strings.Index(doc, cmd)
	if at < 0 {
		t.Fatal("docs/cost.md lost the worked example's command")
	}
	block := doc[at+len(cmd):]
	block = block[:strings.Index(block, "```")]

	inputs, err := filepath.Glob("../../examples/traces/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("examples: %v", err)
	}
	code, out, stderr := runEvalctl(t, "", append([]string{"estimate", "--config", "../../examples/cost.yaml"}, inputs...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if trimLines(out) != trimLines(block) {
		t.Errorf("docs/cost.md shows\n%s\nevalctl prints\n%s", block, out)
	}

	per1000 := func(cfg string) string {
		code, out, stderr := runEvalctl(t, "", append([]string{"estimate", "--config", cfg, "--summary", "json"}, inputs...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rep estimateReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Totals) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		return fmt.Sprintf("%.4f USD", rep.Totals[0].MaxCostPer1000Traces)
	}
	y, err := os.ReadFile("../../examples/cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noCascade := writeFile(t, "no-cascade.yaml", strings.Replace(string(y), "run_if:", "# run_if:", 1))
	for _, tc := range []struct{ sentence, figure string }{
		{"So 1000 traces of this mix cost at most **", per1000("../../examples/cost.yaml")},
		{"judges all three traces: 4 calls, at most **", per1000(noCascade)},
	} {
		if !strings.Contains(doc, tc.sentence+tc.figure+"**") {
			t.Errorf("docs/cost.md: %q should give %s", tc.sentence, tc.figure)
		}
	}
}

var trailingSpace = regexp.MustCompile(`(?m)[ \t]+$`)

func trimLines(s string) string { return strings.TrimSpace(trailingSpace.ReplaceAllString(s, "")) }

// The cascade snippet of docs/judges.md is a valid config (with a judge
// added).
func TestCostSnippetValidates(t *testing.T) {
	raw, err := os.ReadFile("../../docs/judges.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	at := strings.Index(s, "### Cost in money, cascades, estimates")
	if at < 0 {
		t.Fatal("docs/judges.md lost its cost section")
	}
	s = s[at:]
	s = s[strings.Index(s, "```yaml\n")+len("```yaml\n"):]
	snippet := s[:strings.Index(s, "```")]
	cfg := "judges:\n  default: {endpoint: http://localhost:1/v1, model: m, price: {input_per_million_tokens: 1, output_per_million_tokens: 2, currency: EUR}}\n" + snippet
	p := writeFile(t, "snippet.yaml", cfg)
	if code, out, stderr := runEvalctl(t, "", "validate", "--config", p); code != exitOK {
		t.Fatalf("docs/judges.md snippet: exit %d: %s%s", code, out, stderr)
	}
}
