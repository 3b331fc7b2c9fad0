package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// No false green: when the spans never reach the collector (nothing listens
// at -endpoint), the agent says so and exits non-zero instead of printing
// "flushed" (the SDK's batcher hands export errors to the global handler
// only, and its Shutdown returns nil).
func TestAgentFailsWhenSpansAreNotDelivered(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-endpoint", testkit.FreeAddr(t)).CombinedOutput()
	if err == nil || strings.Contains(string(out), "flushed") {
		t.Fatalf("agent with no collector: err %v, output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "spans were not delivered") {
		t.Errorf("the failure does not say what went wrong:\n%s", out)
	}
}
