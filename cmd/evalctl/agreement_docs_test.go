package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/internal/fakejudge"
)

// The offline half of docs/agreement.md, command by command, from the
// repository root: twelve rounds of the agent's runs written to files,
// the users' feedback on them as labels, then `evalctl calibrate` against
// the drifted stand-in judge — not fit to gate — and with the reviewers'
// examples — fit to gate, with the figures the page shows.
func TestAgreementDocsCalibrate(t *testing.T) {
	judge := httptest.NewServer(fakejudge.Judge{Drift: true})
	t.Cleanup(judge.Close)
	t.Setenv("FAKE_JUDGE_ENDPOINT", judge.URL+"/v1")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./examples/agent", "./examples/feedback")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	// for i in $(seq 12); do go run ./examples/agent -out runs-$i.jsonl; done | go run ./examples/feedback -out labels.jsonl
	var runs strings.Builder
	var files []string
	for i := 1; i <= 12; i++ {
		f := filepath.Join(work, fmt.Sprintf("runs-%d.jsonl", i))
		out, err := exec.Command(filepath.Join(bin, "agent"), "-out", f).CombinedOutput()
		if err != nil {
			t.Fatalf("agent -out: %v\n%s", err, out)
		}
		runs.Write(out)
		files = append(files, f)
	}
	labels := filepath.Join(work, "labels.jsonl")
	fb := exec.Command(filepath.Join(bin, "feedback"), "-out", labels)
	fb.Stdin = strings.NewReader(runs.String())
	if out, err := fb.CombinedOutput(); err != nil || !strings.Contains(string(out), "wrote 60 labels") {
		t.Fatalf("feedback -out: %v\n%s", err, out)
	}

	t.Chdir(root) // the configs name examples/agreement/examples.jsonl from the root
	report := filepath.Join(work, "calibration.html")
	calibrate := func(config string, extra ...string) (int, string) {
		args := append([]string{"calibrate", "--config", config, "--labels", labels}, extra...)
		code, out, stderr := runEvalctl(t, "", append(args, files...)...)
		t.Logf("evalctl %s:\n%s%s", strings.Join(args, " "), out, stderr)
		return code, out
	}
	// Before: the drifted judge passes the runs that could not book the
	// hotel and fails the loops. po = 39/60, pe = 0.65: kappa 0.
	code, out := calibrate("examples/agreement/judge.yaml")
	before := regexp.MustCompile(`(?m)^helpful\s+sha256:[0-9a-f]{12}\s+60\s+0\.650\s+0\.000\s+\[-0\.\d+, 0\.\d+\]\s+0\.200 \(3/15\)\s+0\.800 \(36/45\)\s+0\.75\s+0\.000\s+1\s+0\.000\s+not fit to gate`)
	if code != exitFailed || !before.MatchString(out) {
		t.Errorf("before examples: exit %d, want 1 and the row the docs show", code)
	}
	// After: with examples it fails the 12 unbooked runs again and passes
	// the loops: a=45 b=3 c=0 d=12, kappa 2(45·12)/(48·15+45·12) = 6/7.
	code, out = calibrate("examples/agreement/judge-examples.yaml", "--report", report)
	after := regexp.MustCompile(`(?m)^helpful\s+sha256:[0-9a-f]{12}\s+60\s+0\.950\s+0\.857\s+\[0\.6\d\d, 1\.000\]\s+0\.800 \(12/15\)\s+1\.000 \(45/45\)\s+0\.75\s+0\.857\s+1\s+0\.857\s+fit to gate`)
	if code != exitOK || !after.MatchString(out) {
		t.Errorf("after examples: exit %d, want 0 and the row the docs show", code)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), `data-calibrated="helpful"`) {
		t.Errorf("no calibration section in %s: %v", report, err)
	}
}
