// Package dataset reads and writes regression datasets (docs/contract.md
// §27): a directory with one JSON file per captured agent case
// (cases/<id>.json) and a manifest (dataset.json). evalctl's `dataset`,
// `run --dataset` and `review` commands and examples/agent's replay share
// it. Files are written with a fixed key order and indentation, one case
// per file, so a dataset diffs well in git.
package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/evalbridge/evalbridge/adapter"
)

// AttrCaseID is the span attribute that ties a replayed run to its case:
// set on the trace's root span or on its agent span.
const AttrCaseID = "eval.dataset.case_id"

// ManifestFile and CasesDir are the dataset's layout inside its directory.
const (
	ManifestFile = "dataset.json"
	CasesDir     = "cases"
	// LabelsFile is where `evalctl review` appends human labels, in the
	// JSONL `evalctl calibrate --labels` reads (§25).
	LabelsFile = "labels.jsonl"
	// Format names the manifest's format and version.
	Format = "evalbridge.dataset/v1"
)

// Case is one captured agent case: the file cases/<ID>.json.
type Case struct {
	// ID is a hash of the redacted input and the observed tool calls'
	// names and arguments in order (CaseID): the same failure captured
	// twice has one id.
	ID     string `json:"id"`
	Source Source `json:"source"`
	// Input is the user messages of the run, redacted.
	Input    []Message `json:"input"`
	Observed Observed  `json:"observed"`
	// Results are the evaluators' results when the case was captured.
	Results []Result `json:"results"`
	// Expected is the pinned expectation; nil (JSON null) until pinned.
	Expected *Expected `json:"expected"`
}

// Source says where a case was captured from.
type Source struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id,omitempty"`
	Service string `json:"service"`
	// StartTime is the trace's start (its earliest span), RFC 3339 UTC.
	StartTime string `json:"start_time"`
	Agent     string `json:"agent,omitempty"`
}

// Message is one user message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Observed is what the agent did.
type Observed struct {
	ToolCalls []Call `json:"tool_calls"`
	Output    string `json:"output"`
}

// Call is one tool call: its name and arguments (an object; {} when the
// call carried none).
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Result is one evaluator's result at capture.
type Result struct {
	Name   string   `json:"name"`
	Type   string   `json:"type,omitempty"`
	Status string   `json:"status"`
	Score  *float64 `json:"score"`
	// Version is the evaluator's version (§24).
	Version string `json:"version,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Expected is a pinned expectation in the §3 shapes: tool_calls a JSON
// array of {"name", "arguments"} objects or of names; output a string or
// JSON. Either may be absent.
type Expected struct {
	ToolCalls json.RawMessage `json:"tool_calls,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// OutputText is the expected output as the eval.expected.output attribute
// carries it: a string as itself, other JSON as its text.
func (e *Expected) OutputText() (string, bool) {
	if e == nil || len(e.Output) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(e.Output, &s) == nil {
		return s, true
	}
	return string(e.Output), true
}

// Pinned says whether the case has an expectation.
func (c *Case) Pinned() bool {
	return c.Expected != nil && (len(c.Expected.ToolCalls) > 0 || len(c.Expected.Output) > 0)
}

// Failed lists the names of the results that failed at capture.
func (c *Case) Failed() []string {
	var out []string
	for _, r := range c.Results {
		if r.Status == "failed" {
			out = append(out, r.Name)
		}
	}
	return out
}

// Prompt is the last user message: what a replay sends the agent.
func (c *Case) Prompt() string {
	if len(c.Input) == 0 {
		return ""
	}
	return c.Input[len(c.Input)-1].Content
}

// CaseID hashes what makes two captures the same failure: the (redacted)
// user messages and the tool calls' names and arguments, in order. Call
// ids, results and timings are left out, so a second run that did the
// same is the same case.
func CaseID(input []Message, calls []Call) string {
	type call struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	key := struct {
		Input []string `json:"input"`
		Calls []call   `json:"tool_calls"`
	}{Input: []string{}, Calls: []call{}}
	for _, m := range input {
		key.Input = append(key.Input, m.Content)
	}
	for _, c := range calls {
		key.Calls = append(key.Calls, call(c))
	}
	b, err := json.Marshal(key) // map keys sorted: one text per value
	if err != nil {
		// Arguments decoded from JSON always marshal; a NaN cannot get here.
		panic(fmt.Sprintf("dataset: case id: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// ValidID says whether id has the shape CaseID gives (so it is safe as a
// file name).
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ParseExpected checks and normalises a pin: toolCalls (when not nil)
// must be a JSON array in a §3 shape, output (when not nil) any JSON
// value. The result is stored compact with sorted keys.
func ParseExpected(toolCalls, output []byte) (*Expected, error) {
	e := &Expected{}
	if toolCalls != nil {
		var v any
		if err := json.Unmarshal(toolCalls, &v); err != nil {
			return nil, fmt.Errorf("tool calls: not JSON: %w", err)
		}
		if _, ok := v.([]any); !ok {
			return nil, fmt.Errorf("tool calls: want a JSON array of {\"name\", \"arguments\"} objects or of names, got %s", jsonKind(v))
		}
		if _, err := adapter.ParseExpectedCalls(v); err != nil {
			return nil, err
		}
		if err := strictCalls(v.([]any)); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(v)
		e.ToolCalls = b
	}
	if output != nil {
		var v any
		if err := json.Unmarshal(output, &v); err != nil {
			return nil, fmt.Errorf("output: not JSON: %w", err)
		}
		if v == nil {
			return nil, errors.New("output: null is no expectation")
		}
		b, _ := json.Marshal(v)
		e.Output = b
	}
	if len(e.ToolCalls) == 0 && len(e.Output) == 0 {
		return nil, errors.New("nothing to pin: give tool calls or an output")
	}
	return e, nil
}

// strictCalls refuses what §3's reader lets pass but no one means in a
// pin: a blank name (it matches no call) and a key other than name and
// arguments (a misspelt "arguments" would silently accept any arguments).
func strictCalls(items []any) error {
	for i, it := range items {
		name, _ := it.(string)
		if m, ok := it.(map[string]any); ok {
			name, _ = m["name"].(string)
			for k := range m {
				if k != "name" && k != "arguments" {
					return fmt.Errorf("expected tool calls[%d] (%s): unknown key %q: a call is {\"name\", \"arguments\"}", i, name, k)
				}
			}
		}
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("expected tool calls[%d]: the name is blank", i)
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a bool"
	}
	return fmt.Sprintf("%T", v)
}

// Entry is a case's line in the manifest: enough to list and filter
// thousands of cases without opening their files.
type Entry struct {
	ID        string   `json:"id"`
	File      string   `json:"file"`
	TraceID   string   `json:"trace_id"`
	Service   string   `json:"service"`
	StartTime string   `json:"start_time"`
	Pinned    bool     `json:"pinned"`
	Failed    []string `json:"failed"`
}

// Manifest is dataset.json.
type Manifest struct {
	Format string  `json:"format"`
	Cases  []Entry `json:"cases"`
}

func entryOf(c *Case) Entry {
	f := c.Failed()
	if f == nil {
		f = []string{}
	}
	return Entry{ID: c.ID, File: CasesDir + "/" + c.ID + ".json", TraceID: c.Source.TraceID, Service: c.Source.Service,
		StartTime: c.Source.StartTime, Pinned: c.Pinned(), Failed: f}
}

// Dataset is a dataset directory, its cases in manifest order (by id).
type Dataset struct {
	Dir   string
	Cases []*Case
	byID  map[string]*Case
}

// Open reads the dataset in dir: its manifest, every case it lists and
// every case file it does not. A directory without a manifest is an empty
// dataset when create is set, else an error. A case whose file is missing
// or unreadable, or whose id does not match its file, is an error.
func Open(dir string, create bool) (*Dataset, error) {
	d := &Dataset{Dir: dir, byID: map[string]*Case{}}
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		if create {
			return d, nil
		}
		return nil, fmt.Errorf("dataset %s: no %s (not a dataset: `evalctl dataset add` creates one)", dir, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("dataset %s: %s: %w", dir, ManifestFile, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("dataset %s: %s: format %q, want %q", dir, ManifestFile, m.Format, Format)
	}
	for _, e := range m.Cases {
		if !ValidID(e.ID) {
			return nil, fmt.Errorf("dataset %s: %s: case id %q is not 16 hex digits", dir, ManifestFile, e.ID)
		}
		c, err := readCase(filepath.Join(dir, CasesDir, e.ID+".json"))
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", dir, err)
		}
		if c.ID != e.ID {
			return nil, fmt.Errorf("dataset %s: %s/%s.json holds case %q", dir, CasesDir, e.ID, c.ID)
		}
		if _, dup := d.byID[c.ID]; dup {
			continue
		}
		d.byID[c.ID] = c
		d.Cases = append(d.Cases, c)
	}
	// A case file the manifest does not list (a merge that kept one side's
	// manifest) is a case all the same: a dataset is never silently
	// smaller than its case files. The next Save lists it again.
	files, err := filepath.Glob(filepath.Join(dir, CasesDir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	unlisted := false
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if !ValidID(id) || d.byID[id] != nil {
			continue
		}
		c, err := readCase(f)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", dir, err)
		}
		if c.ID != id {
			return nil, fmt.Errorf("dataset %s: %s/%s.json holds case %q", dir, CasesDir, id, c.ID)
		}
		d.byID[id] = c
		d.Cases = append(d.Cases, c)
		unlisted = true
	}
	if unlisted {
		slices.SortFunc(d.Cases, func(a, b *Case) int { return strings.Compare(a.ID, b.ID) })
	}
	return d, nil
}

func readCase(path string) (*Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Case
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Expected != nil && !c.Pinned() {
		c.Expected = nil // {} pins nothing
	}
	if c.Expected != nil {
		// Checked, and compact again (the file holds it indented).
		e, err := ParseExpected(nullIfEmpty(c.Expected.ToolCalls), nullIfEmpty(c.Expected.Output))
		if err != nil {
			return nil, fmt.Errorf("%s: expected: %w", path, err)
		}
		c.Expected = e
	}
	return &c, nil
}

func nullIfEmpty(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Get returns the case with id, or nil.
func (d *Dataset) Get(id string) *Case { return d.byID[id] }

// Add adds c unless a case with its id is there; it reports whether it
// was added. Nothing is written until Save.
func (d *Dataset) Add(c *Case) bool {
	if _, ok := d.byID[c.ID]; ok {
		return false
	}
	d.byID[c.ID] = c
	d.Cases = append(d.Cases, c)
	return true
}

// Save writes the files of the given cases and then the manifest, each
// through a temporary file renamed into place, so a reader never sees a
// half-written file.
func (d *Dataset) Save(changed ...*Case) error {
	if err := os.MkdirAll(filepath.Join(d.Dir, CasesDir), 0o755); err != nil {
		return err
	}
	for _, c := range changed {
		b, err := Encode(c)
		if err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(d.Dir, CasesDir, c.ID+".json"), b); err != nil {
			return err
		}
	}
	slices.SortFunc(d.Cases, func(a, b *Case) int { return strings.Compare(a.ID, b.ID) })
	m := Manifest{Format: Format, Cases: []Entry{}}
	for _, c := range d.Cases {
		m.Cases = append(m.Cases, entryOf(c))
	}
	b, err := encodeIndented(m)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(d.Dir, ManifestFile), b)
}

// Encode is a case's file content: indented JSON, keys in a fixed order
// (struct order; map keys sorted), HTML characters left as they are.
func Encode(c *Case) ([]byte, error) {
	cc := *c
	if cc.Input == nil {
		cc.Input = []Message{}
	}
	if cc.Observed.ToolCalls == nil {
		cc.Observed.ToolCalls = []Call{}
	}
	for i := range cc.Observed.ToolCalls {
		if cc.Observed.ToolCalls[i].Arguments == nil {
			cc.Observed.ToolCalls[i].Arguments = map[string]any{}
		}
	}
	if cc.Results == nil {
		cc.Results = []Result{}
	}
	return encodeIndented(cc)
}

func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
