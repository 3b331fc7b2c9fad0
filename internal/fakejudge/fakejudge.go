// Package fakejudge is the stand-in LLM judge of the worked example in
// docs/agreement.md: an OpenAI-compatible chat-completions endpoint whose
// verdicts on the travel agent's runs (examples/agent) follow fixed,
// readable rules, so that the example's figures are the same on every
// machine. A real judge model is less predictable; the workflow is the same.
//
// It judges `helpful` (examples/agreement): did the agent do what the user
// asked? Its rules, on the judge question it receives:
//   - as shipped: an answer that says it could not do something fails
//     (score 1); anything else passes (score 5);
//   - drifted (Drift, what a judge model update can do): it no longer
//     reads what the answer says, and instead fails runs that repeated a
//     tool call (search_flights more than once) — it passes the answer
//     that apologises for the missing hotel;
//   - with worked examples in its prompt (`examples: FILE`, §25), it
//     follows them as a model follows few-shot corrections: a fail example
//     whose critique says something was "not booked" makes it fail answers
//     that could not book; a pass example whose critique says repeated
//     searches are fine makes it stop failing repeats.
package fakejudge

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// Judge serves POST …/chat/completions.
type Judge struct {
	// Model is what it answers as (any name; default "fake-judge").
	Model string
	// Drift makes it judge as a drifted model would (see the package comment).
	Drift bool
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// example is one worked example as the judge question shows it.
type example struct {
	Verdict  string `json:"verdict"`
	Critique string `json:"critique"`
}

var examplesRE = regexp.MustCompile(`(?s)<examples>\s*(.*?)\s*</examples>`)

// Verdict is the judge's score (1 or 5) and reason for one question.
func (j Judge) Verdict(system, user string) (int, string) {
	var exs []example
	if m := examplesRE.FindStringSubmatch(system); m != nil {
		_ = json.Unmarshal([]byte(m[1]), &exs) // no examples understood: none followed
	}
	failUnbooked, repeatsFine := !j.Drift, !j.Drift
	for _, ex := range exs {
		c := strings.ToLower(ex.Critique)
		switch {
		case ex.Verdict == "fail" && strings.Contains(c, "not booked"):
			failUnbooked = true
		case ex.Verdict == "pass" && strings.Contains(c, "repeat"):
			repeatsFine = true
		}
	}
	switch {
	case failUnbooked && strings.Contains(user, "could not"):
		return 1, "the answer says part of the request could not be done"
	case !repeatsFine && strings.Count(user, "search_flights") > 1:
		return 1, "the agent repeated search_flights"
	}
	return 5, "the agent did what was asked"
}

func (j Judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "POST /v1/chat/completions only", http.StatusNotFound)
		return
	}
	var req struct {
		Messages []message `json:"messages"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var system, user string
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			system += m.Content
		case "user":
			user += m.Content
		}
	}
	score, reason := j.Verdict(system, user)
	content, _ := json.Marshal(map[string]any{"score": score, "reason": reason})
	model := j.Model
	if model == "" {
		model = "fake-judge"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "fake", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage": map[string]any{"prompt_tokens": (len(system) + len(user)) / 4, "completion_tokens": len(content) / 4,
			"total_tokens": (len(system)+len(user))/4 + len(content)/4},
	})
}
