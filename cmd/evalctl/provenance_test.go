package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// provenanceConfig is gateConfig with a threshold on tool_error: the same
// evaluators, the first meaning something else.
const provenanceConfig = "evaluators:\n  - type: tool_error\n    name: no_tool_errors\n    threshold: 0.9\n  - type: latency\n    max: 10s\n"

func summaryVersions(t *testing.T, js string) map[string][2]string {
	t.Helper()
	var sum struct {
		Evaluators []evaluatorSummary `json:"evaluators"`
	}
	if err := json.Unmarshal([]byte(js), &sum); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	out := map[string][2]string{}
	for _, e := range sum.Evaluators {
		out[e.Name] = [2]string{e.Version, e.EvaluatorType}
	}
	return out
}

// TestSummariesCarryVersion: text, JSON, JUnit and the report name each
// evaluator's version and type (docs/contract.md §24), the same in each.
func TestSummariesCarryVersion(t *testing.T) {
	dir, cfg := gateSetup(t)
	in := suiteFile(t, dir, 3, 4)
	junit, report := filepath.Join(dir, "out.xml"), filepath.Join(dir, "out.html")
	_, js, stderr := runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", "--junit", junit, "--report", report, in)
	v := summaryVersions(t, js)
	hashed := regexp.MustCompile(`^sha256:[0-9a-f]{12}$`)
	for _, name := range []string{"no_tool_errors", "latency"} {
		if !hashed.MatchString(v[name][0]) || v[name][1] != "deterministic" {
			t.Fatalf("%s: version %q type %q\n%s\n%s", name, v[name][0], v[name][1], js, stderr)
		}
	}
	if v["no_tool_errors"][0] == v["latency"][0] {
		t.Errorf("two evaluators of different types share version %s", v["latency"][0])
	}
	_, text, _ := runEvalctl(t, "", "run", "--config", cfg, in)
	if !strings.Contains(text, "VERSION") || !regexp.MustCompile(`(?m)^no_tool_errors .*`+regexp.QuoteMeta(v["no_tool_errors"][0])).MatchString(text) {
		t.Errorf("text summary lacks the version:\n%s", text)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Suites {
		props := map[string]string{}
		for _, p := range s.Properties {
			props[p.Name] = p.Value
		}
		if props["evaluator_version"] != v[s.Name][0] || props["evaluator_type"] != "deterministic" {
			t.Errorf("JUnit suite %s: properties %v, want version %s", s.Name, props, v[s.Name][0])
		}
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "version <code>"+v["no_tool_errors"][0]+"</code>") {
		t.Errorf("the report does not show no_tool_errors' version %s", v["no_tool_errors"][0])
	}
}

// TestBaselineRefusesAnotherVersion: after a change of threshold the
// evaluator is not comparable with the baseline and its gate fails with
// that reason, however good the new rate; --allow-version-change compares
// it and says the version changed. The unchanged evaluator is compared.
// TestBaselineComparableAcrossSpellings: the same evaluators spelt another
// way (a limit in milliseconds, a default written out) keep their versions,
// so a baseline taken with one config gates a run with the other
// (docs/contract.md §24), not "not comparable: version changed".
func TestBaselineComparableAcrossSpellings(t *testing.T) {
	dir, cfg := gateSetup(t)
	code, baseline, stderr := runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", suiteFile(t, dir, 95, 100))
	if code != exitFailed {
		t.Fatalf("baseline run: exit %d\n%s", code, stderr)
	}
	basePath := filepath.Join(dir, "baseline.json")
	if err := os.WriteFile(basePath, []byte(baseline), 0o600); err != nil {
		t.Fatal(err)
	}
	respelt := filepath.Join(dir, "respelt.yaml")
	if err := os.WriteFile(respelt, []byte("evaluators:\n  - type: tool_error\n    name: no_tool_errors\n    threshold: 1\n"+
		"  - type: latency\n    max: 10000ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	better := suiteFile(t, dir, 100, 100)
	_, now, _ := runEvalctl(t, "", "run", "--config", respelt, "--summary", "json", better)
	if got, want := summaryVersions(t, now), summaryVersions(t, baseline); got["latency"] != want["latency"] || got["no_tool_errors"] != want["no_tool_errors"] {
		t.Errorf("versions %v, want the baseline's %v", got, want)
	}
	code, out, _ := runEvalctl(t, "", "run", "--config", respelt, "--baseline", basePath, better)
	if code != exitOK || strings.Contains(out, "not comparable") || !strings.Contains(out, "ok   baseline      latency:") ||
		!strings.Contains(out, "ok   baseline      no_tool_errors:") {
		t.Errorf("respelt config: exit %d, want 0 and both gates compared\n%s", code, out)
	}
}

func TestBaselineRefusesAnotherVersion(t *testing.T) {
	dir, cfg := gateSetup(t)
	code, baseline, stderr := runEvalctl(t, "", "run", "--config", cfg, "--summary", "json", suiteFile(t, dir, 95, 100))
	if code != exitFailed {
		t.Fatalf("baseline run: exit %d\n%s", code, stderr)
	}
	old := summaryVersions(t, baseline)
	basePath := filepath.Join(dir, "baseline.json")
	if err := os.WriteFile(basePath, []byte(baseline), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(dir, "changed.yaml")
	if err := os.WriteFile(changed, []byte(provenanceConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	better := suiteFile(t, dir, 100, 100)

	// The same config, even better data: comparable, all gates hold.
	if code, out, _ := runEvalctl(t, "", "run", "--config", cfg, "--baseline", basePath, better); code != exitOK ||
		strings.Contains(out, "not comparable") {
		t.Fatalf("same config: exit %d\n%s", code, out)
	}

	code, out, _ := runEvalctl(t, "", "run", "--config", changed, "--baseline", basePath, better)
	_, now, _ := runEvalctl(t, "", "run", "--config", changed, "--summary", "json", better)
	newV := summaryVersions(t, now)["no_tool_errors"][0]
	if newV == old["no_tool_errors"][0] {
		t.Fatalf("a new threshold kept the version %s", newV)
	}
	want := "FAIL baseline      no_tool_errors: not comparable: version changed: " + old["no_tool_errors"][0] + " -> " + newV
	if code != exitFailed || !strings.Contains(out, want) || !strings.Contains(out, "ok   baseline      latency:") ||
		!strings.Contains(out, "1 of 2 gate(s) failed") {
		t.Errorf("changed config: exit %d, want 1 and %q\n%s", code, want, out)
	}

	code, out, _ = runEvalctl(t, "", "run", "--config", changed, "--baseline", basePath, "--allow-version-change", better)
	if code != exitOK || !strings.Contains(out, "ok   baseline      no_tool_errors: pass rate") ||
		!strings.Contains(out, "(version changed: "+old["no_tool_errors"][0]+" -> "+newV+")") {
		t.Errorf("--allow-version-change: exit %d\n%s", code, out)
	}
	// A clear drop under a changed version still fails when compared.
	code, out, _ = runEvalctl(t, "", "run", "--config", changed, "--baseline", basePath, "--allow-version-change", suiteFile(t, dir, 50, 100))
	if code != exitFailed || !strings.Contains(out, "pass rate dropped") || !strings.Contains(out, "version changed: ") {
		t.Errorf("--allow-version-change with a drop: exit %d\n%s", code, out)
	}
}
