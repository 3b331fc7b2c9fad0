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
)

// docBlock is a fenced sh block of a doc and the output block after it.
type docBlock struct {
	script, output string
}

// walkthroughBlocks returns the sh blocks of the section of a markdown
// file that starts at heading, each with the plain block that follows it
// (its documented output), if any.
func walkthroughBlocks(t *testing.T, path, heading string) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no %q", path, heading)
	}
	text = text[start+len(heading)+2:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	fence := regexp.MustCompile("(?s)```(sh|)\n(.*?)```\n")
	var out []docBlock
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		switch {
		case m[1] == "sh":
			out = append(out, docBlock{script: m[2]})
		case len(out) > 0 && out[len(out)-1].output == "":
			out[len(out)-1].output = m[2]
		}
	}
	return out
}

// The walk-through of docs/datasets.md, run as written (with the two `go
// run`s prebuilt): production runs, capture, duplicates, list, pins, the
// failing agent's replay red (exit 1), the fixed agent's green (exit 0).
// Every line of the documented outputs that does not vary from run to run
// (trace ids, times, elided lines) is in what the commands printed, so
// the page shows what a reader gets, case ids included.
func TestDatasetsWalkthroughRunsAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds evalctl and the example agent")
	}
	blocks := walkthroughBlocks(t, "../../docs/datasets.md", "## Walk-through")
	if len(blocks) < 6 {
		t.Fatalf("found %d sh blocks in the walk-through, want at least 6", len(blocks))
	}
	bin, work := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	for name, pkg := range map[string]string{"evalctl": ".", "agent": "../../examples/agent"} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	variable := regexp.MustCompile(`[0-9a-f]{32}|\d{4}-\d\d-\d\d \d\d:|…`)
	var all strings.Builder
	for i, b := range blocks {
		script := strings.NewReplacer("go run ./cmd/evalctl", "evalctl", "go run ./examples/agent", "agent").Replace(b.script)
		wantExit := 0
		if strings.Contains(script, "# exits 1") {
			wantExit = 1
		} else {
			script = "set -e\n" + script
		}
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
		if code != wantExit {
			t.Fatalf("block %d exited %d, want %d:\n%s\n---\n%s", i+1, code, wantExit, b.script, out)
		}
		all.Write(out)
		got := string(out)
		for _, line := range strings.Split(b.output, "\n") {
			line = strings.TrimRight(line, " ")
			if line == "" || variable.MatchString(line) {
				continue
			}
			if !strings.Contains(got, line) {
				t.Errorf("block %d: the documented line\n  %s\nis not in the output:\n%s", i+1, line, got)
			}
		}
	}
	for _, want := range []string{
		"added 4 case(s), 0 duplicate(s)", "added 0 case(s), 4 duplicate(s)",
		"FAIL dataset       4 pinned case(s): 4 run, 0 passed, 4 failed, 0 not run",
		"ok   dataset       4 pinned case(s): 4 run, 4 passed, 0 failed, 0 not run",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the walk-through printed no %q", want)
		}
	}
}
