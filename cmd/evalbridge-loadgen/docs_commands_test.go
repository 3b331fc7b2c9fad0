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
	testkit.CheckDocCommandFlags(t, "../..", "evalbridge-loadgen", 4, func(sub string) (string, bool) {
		var out, errb bytes.Buffer
		realMain([]string{sub, "-h"}, &out, &errb)
		h := errb.String() + out.String()
		return h, strings.Contains(h, "-") && !strings.Contains(h, "unknown command")
	})
}
