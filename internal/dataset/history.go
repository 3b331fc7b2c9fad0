package dataset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// HistoryFile is where `evalctl run --dataset DIR --record` appends each
// pinned case's outcome: one JSON line per case and run, so a case's
// results across agent and evaluator versions can be read back (and the
// file only grows at its end: it diffs well).
const HistoryFile = "history.jsonl"

// HistoryEntry is one case's outcome in one run.
type HistoryEntry struct {
	Time     string   `json:"time"`
	CaseID   string   `json:"case_id"`
	Status   string   `json:"status"` // passed, failed or not_run
	TraceIDs []string `json:"trace_ids"`
	Results  []Result `json:"results"`
}

// AppendHistory appends entries to dir's history file.
func AppendHistory(dir string, entries []HistoryEntry) error {
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			_ = f.Close()
			return err
		}
		_, _ = w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// History reads the entries of case id (all cases when id is ""), oldest
// first. No history file is no history.
func History(dir, id string) ([]HistoryEntry, error) {
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []HistoryEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var e HistoryEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", HistoryFile, n, err)
		}
		if id == "" || e.CaseID == id {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
