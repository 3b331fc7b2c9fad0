package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// Every evalbridge-loadgen command in the README and docs/ names a
// subcommand it has and only flags that subcommand takes (its -h lists them).
func TestDocumentedCommandsUseRealFlags(t *testing.T) {
	cmds := testkit.DocCommands(t, "../..", "evalbridge-loadgen")
	if len(cmds) < 4 {
		t.Fatalf("found %d documented evalbridge-loadgen commands; the docs show more (is the extraction broken?)", len(cmds))
	}
	for _, c := range cmds {
		var out, errb bytes.Buffer
		realMain([]string{c.Sub, "-h"}, &out, &errb)
		h := errb.String() + out.String()
		if !strings.Contains(h, "-") || strings.Contains(h, "unknown command") {
			t.Errorf("%s: %q: no subcommand %q (-h printed %q)", c.File, c.Line, c.Sub, h)
			continue
		}
		for _, f := range c.Flags {
			if f == "h" || f == "help" {
				continue
			}
			if !strings.Contains(h, "  -"+f+" ") && !strings.Contains(h, "  -"+f+"\n") {
				t.Errorf("%s: %q: evalbridge-loadgen %s has no flag -%s", c.File, c.Line, c.Sub, f)
			}
		}
	}
}
