package main

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// Every evalctl command in the README and docs/ names a subcommand evalctl
// has and only flags that subcommand takes (its -h lists them).
func TestDocumentedCommandsUseRealFlags(t *testing.T) {
	testkit.CheckDocCommandFlags(t, "../..", "evalctl", 5, func(sub string) (string, bool) {
		_, _, h := runEvalctl(t, "", sub, "-h")
		return h, strings.Contains(h, "Usage of evalctl "+sub)
	})
}
