package evaluators

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Few-shot examples from corrections (docs/contract.md §25, docs/judges.md):
// a judge evaluator's `examples: FILE` is JSONL, one worked example a line,
// put into the system message of every question the evaluator asks, so the
// judge sees how people judged earlier material. The judge client's
// redaction masks them like the rest of the prompt, and they are part of
// the evaluator's version (version.go) through the prompts it asks.

// Example is one line of an examples file.
type Example struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	Label    string `json:"label"`
	Critique string `json:"critique"`
}

// Bounds of an examples file: each example goes into every prompt, so a
// file far beyond a few dozen is a mistake, not a calibration set.
const (
	maxExamples         = 100
	maxExamplesFileSize = 1 << 20
)

// LoadExamples reads and checks an examples file, naming the line of the
// first problem.
func LoadExamples(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("examples: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxExamplesFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("examples: %s: %w", path, err)
	}
	if len(data) > maxExamplesFileSize {
		return nil, fmt.Errorf("examples: %s is larger than %d bytes; keep the few dozen examples that teach the judge most", path, maxExamplesFileSize)
	}
	exs, err := parseExamples(data)
	if err != nil {
		return nil, fmt.Errorf("examples: %s: %w", path, err)
	}
	return exs, nil
}

func parseExamples(data []byte) ([]Example, error) {
	var out []Example
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), maxExamplesFileSize)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var ex Example
		if err := dec.Decode(&ex); err != nil {
			return nil, fmt.Errorf("line %d: %v (each line is one JSON object {\"input\", \"output\", \"label\": \"pass\"|\"fail\", \"critique\"})", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value on the line", line)
		}
		ex.Label = strings.ToLower(strings.TrimSpace(ex.Label))
		if ex.Label != "pass" && ex.Label != "fail" {
			return nil, fmt.Errorf("line %d: label %q must be pass or fail", line, ex.Label)
		}
		if strings.TrimSpace(ex.Input) == "" && strings.TrimSpace(ex.Output) == "" {
			return nil, fmt.Errorf("line %d: an example needs an input or an output", line)
		}
		if len(out) == maxExamples {
			return nil, fmt.Errorf("more than %d examples; keep the ones that teach the judge most", maxExamples)
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no examples in the file")
	}
	return out, nil
}

// examplesText is the part of the system message that shows the examples,
// each field clipped to limit bytes like span content.
func examplesText(exs []Example, limit int) string {
	if len(exs) == 0 {
		return ""
	}
	type shown struct {
		Input    string `json:"input,omitempty"`
		Output   string `json:"output,omitempty"`
		Verdict  string `json:"verdict"`
		Critique string `json:"critique,omitempty"`
	}
	list := make([]shown, len(exs))
	for i, ex := range exs {
		list[i] = shown{Input: clipText(ex.Input, limit), Output: clipText(ex.Output, limit), Verdict: ex.Label,
			Critique: clipText(ex.Critique, limit)}
	}
	b, _ := json.MarshalIndent(list, "", "  ") // strings only: cannot fail
	return "\n\nWorked examples: how human reviewers judged earlier material by these criteria (verdict pass or fail) and why. " +
		"Judge the data by the same standard; answer in the form above.\n<examples>\n" + string(b) + "\n</examples>"
}
