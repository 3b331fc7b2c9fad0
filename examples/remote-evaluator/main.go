// Command remote-evaluator is an example `type: remote` evaluator: it scores
// an agent run by the share of its tool calls that did not fail, and skips
// runs without tool calls. Run it with `go run ./examples/remote-evaluator`
// and point an evaluator at it:
//
//   - type: remote
//     name: tool_success
//     endpoint: http://localhost:8081/
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strings"
)

// request is the part of the POSTed body this check reads.
type request struct {
	Evaluator string `json:"evaluator"`
	Case      struct {
		ToolCalls []struct {
			Name    string `json:"name"`
			Errored bool   `json:"errored"`
		} `json:"tool_calls"`
	} `json:"case"`
}

func evaluate(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	calls := req.Case.ToolCalls
	reply := map[string]any{"skipped": "no tool calls"}
	if len(calls) > 0 {
		var failed []string
		for _, c := range calls {
			if c.Errored {
				failed = append(failed, c.Name)
			}
		}
		reply = map[string]any{
			"score":  1 - float64(len(failed))/float64(len(calls)),
			"reason": fmt.Sprintf("%d of %d tool calls failed %s", len(failed), len(calls), strings.Join(failed, ", ")),
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func main() {
	log.Fatal(http.ListenAndServe("localhost:8081", http.HandlerFunc(evaluate)))
}
