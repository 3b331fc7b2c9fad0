package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The id ignores what differs between two runs of the same failure (call
// ids, results, timings are not in its inputs; argument order and number
// spelling are normalised by decoding) and changes with the input or any
// call's name or arguments.
func TestCaseID(t *testing.T) {
	in := []Message{{Role: "user", Content: "Refund order 42"}}
	calls := []Call{{Name: "lookup", Arguments: map[string]any{"order": 42.0, "why": "late"}}}
	id := CaseID(in, calls)
	if !ValidID(id) {
		t.Fatalf("id %q", id)
	}
	same := []Call{{Name: "lookup", Arguments: map[string]any{"why": "late", "order": float64(42)}}}
	if CaseID(in, same) != id {
		t.Error("the same calls gave another id")
	}
	for name, other := range map[string]string{
		"input":     CaseID([]Message{{Role: "user", Content: "Refund order 43"}}, calls),
		"name":      CaseID(in, []Call{{Name: "lookup2", Arguments: calls[0].Arguments}}),
		"arguments": CaseID(in, []Call{{Name: "lookup", Arguments: map[string]any{"order": 43.0, "why": "late"}}}),
		"order":     CaseID(in, append(calls, Call{Name: "refund"})),
	} {
		if other == id {
			t.Errorf("another %s gave the same id", name)
		}
	}
}

func TestParseExpected(t *testing.T) {
	for _, bad := range []struct{ calls, output string }{
		{calls: `[`}, {calls: `{"name": "x"}`}, {calls: `[{"arguments": {}}]`}, {calls: `[1]`},
		{calls: `[{"name": "x", "arguments": [1]}]`}, {output: `null`}, {},
	} {
		var c, o []byte
		if bad.calls != "" {
			c = []byte(bad.calls)
		}
		if bad.output != "" {
			o = []byte(bad.output)
		}
		if _, err := ParseExpected(c, o); err == nil {
			t.Errorf("ParseExpected(%q, %q) accepted", bad.calls, bad.output)
		}
	}
	e, err := ParseExpected([]byte(` [ "a", {"name": "b", "arguments": {"z": 1, "a": 2}} ] `), []byte(`"done"`))
	if err != nil || string(e.ToolCalls) != `["a",{"arguments":{"a":2,"z":1},"name":"b"}]` || string(e.Output) != `"done"` {
		t.Fatalf("%v %s %s", err, e.ToolCalls, e.Output)
	}
	if s, ok := e.OutputText(); !ok || s != "done" {
		t.Errorf("OutputText %q", s)
	}
}

// A manifest that lists a case whose file is gone, or a file that holds
// another case, is an error, not a smaller dataset.
func TestOpenRefusesAnInconsistentDataset(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	c := &Case{Input: []Message{{Role: "user", Content: "hi"}}}
	c.ID = CaseID(c.Input, nil)
	d.Add(c)
	if err := d.Save(c); err != nil {
		t.Fatal(err)
	}
	if d2, err := Open(dir, false); err != nil || len(d2.Cases) != 1 || d2.Get(c.ID) == nil || d2.Cases[0].Pinned() {
		t.Fatalf("reopened: %v", err)
	}
	other := filepath.Join(dir, CasesDir, c.ID+".json")
	raw, _ := os.ReadFile(other)
	if err := os.WriteFile(other, []byte(strings.Replace(string(raw), c.ID, "0123456789abcdef", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, false); err == nil || !strings.Contains(err.Error(), "holds case") {
		t.Errorf("a file holding another case: %v", err)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, false); err == nil {
		t.Error("a missing case file was not an error")
	}
	if _, err := Open(t.TempDir(), false); err == nil {
		t.Error("a directory without a manifest opened")
	}
}
