package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// evalctl runs the custom evaluators as the collector does: a CEL
// expression in process, a remote evaluator against its configured endpoint.
func TestRunWithCELAndRemote(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body struct {
			Case struct {
				ToolCalls []struct{ Name string } `json:"tool_calls"`
			} `json:"case"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Header.Get("Authorization") != "Bearer sk-remote-secret" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"score": 0.25, "reason": "saw `+body.Case.ToolCalls[0].Name+`"}`)
	}))
	defer srv.Close()
	cfg := "evaluators:\n" +
		"  - type: cel\n    name: hotel_nights\n    expression: |\n" +
		"      case.tool_calls.filter(t, t.name == \"book_hotel\").all(t, t.arguments.nights <= 14)\n" +
		"  - type: remote\n    name: house_rules\n    endpoint: " + srv.URL + "\n    api_key: ${env:EVALCTL_REMOTE_KEY}\n"
	cfgPath := writeFile(t, "custom.yaml", cfg)
	t.Setenv("EVALCTL_REMOTE_KEY", "sk-remote-secret")
	code, out, stderr := runEvalctl(t, "", "run", "--config", cfgPath, "--summary", "json", exampleTraces[0])
	if code != exitFailed {
		t.Fatalf("exit %d, want 1 (remote score 0.25 < 0.5)\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		Evaluators []map[string]any `json:"evaluators"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	sum := map[string]map[string]any{}
	for _, ev := range doc.Evaluators {
		sum[ev["name"].(string)] = ev
	}
	if s := sum["hotel_nights"]; s == nil || s["passed"] != 1.0 {
		t.Errorf("cel summary: %v", s)
	}
	if s := sum["house_rules"]; s == nil || s["failed"] != 1.0 || s["mean_score"] != 0.25 {
		t.Errorf("remote summary: %v", s)
	}
	if calls.Load() != 1 {
		t.Errorf("remote endpoint got %d requests", calls.Load())
	}
	if strings.Contains(stderr+out, "sk-remote-secret") {
		t.Error("the API key leaked into evalctl's output")
	}

	// A typo in the expression is a config error (exit 2) naming the evaluator and the position.
	bad := strings.Replace(cfg, "t.arguments.nights", "t.argumnets.nights", 1)
	if err := os.WriteFile(cfgPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runEvalctl(t, "", "validate", "--config", cfgPath)
	if code != exitUsage || !strings.Contains(stderr, `evaluator "hotel_nights" (cel)`) || !strings.Contains(stderr, "undefined field 'argumnets'") ||
		!strings.Contains(stderr, "<input>:1:59") {
		t.Fatalf("validate: exit %d\n%s", code, stderr)
	}
}
