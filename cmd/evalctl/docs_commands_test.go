package main

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// Every evalctl command in the README and docs/ names a subcommand evalctl
// has and only flags that subcommand takes (its -h lists them).
func TestDocumentedCommandsUseRealFlags(t *testing.T) {
	cmds := testkit.DocCommands(t, "../..", "evalctl")
	if len(cmds) < 5 {
		t.Fatalf("found %d documented evalctl commands; the docs show more (is the extraction broken?)", len(cmds))
	}
	help := map[string]string{}
	for _, c := range cmds {
		h, ok := help[c.Sub]
		if !ok {
			_, _, h = runEvalctl(t, "", c.Sub, "-h")
			help[c.Sub] = h
		}
		if !strings.Contains(h, "Usage of evalctl "+c.Sub) {
			t.Errorf("%s: %q: evalctl has no subcommand %q", c.File, c.Line, c.Sub)
			continue
		}
		for _, f := range c.Flags {
			if f == "h" || f == "help" {
				continue
			}
			if !strings.Contains(h, "  -"+f+" ") && !strings.Contains(h, "  -"+f+"\n") {
				t.Errorf("%s: %q: evalctl %s has no flag -%s", c.File, c.Line, c.Sub, f)
			}
		}
	}
}
