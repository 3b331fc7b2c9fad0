package redact

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type planted struct {
	kind       string
	start, end int
}

// parseCorpusLine removes the «kind|value» markers and says where each
// planted value is in the text that remains.
func parseCorpusLine(t *testing.T, line string) (string, []planted) {
	var b strings.Builder
	var ps []planted
	for {
		i := strings.Index(line, "«")
		if i < 0 {
			b.WriteString(line)
			break
		}
		b.WriteString(line[:i])
		rest := line[i+len("«"):]
		j := strings.Index(rest, "»")
		bar := strings.IndexByte(rest, '|')
		require.True(t, j > 0 && bar > 0 && bar < j, "bad marker in %q", line)
		start := b.Len()
		b.WriteString(rest[bar+1 : j])
		ps = append(ps, planted{kind: rest[:bar], start: start, end: b.Len()})
		line = rest[j+len("»"):]
	}
	return b.String(), ps
}

type tally struct{ tp, fp, fn int }

func (t tally) precision() float64 {
	if t.tp+t.fp == 0 {
		return 1
	}
	return float64(t.tp) / float64(t.tp+t.fp)
}

func (t tally) recall() float64 {
	if t.tp+t.fn == 0 {
		return 1
	}
	return float64(t.tp) / float64(t.tp+t.fn)
}

// TestCorpusPrecisionRecall runs every built-in detector over the labelled
// corpus (testdata/corpus.txt): a planted value counts as found (true
// positive) when its detector replaces exactly it, or it plus surrounding
// separators; every other replacement is a false positive of the detector
// that made it, every planted value not found a false negative. Precision
// and recall per detector must hold 0.95.
func TestCorpusPrecisionRecall(t *testing.T) {
	tallies, lines := scoreCorpus(t, "testdata/corpus.txt")
	require.GreaterOrEqual(t, lines, 400, "the corpus holds several hundred strings")
	for _, name := range Builtins() {
		tl := tallies[name]
		require.GreaterOrEqual(t, tl.tp+tl.fn, 20, "%s: at least 20 planted values", name)
		require.GreaterOrEqual(t, tl.precision(), 0.95, "%s precision", name)
		require.GreaterOrEqual(t, tl.recall(), 0.95, "%s recall", name)
	}
	// The held-out strings were not used to tune the detectors: their
	// figures are reported, with a lower floor (few strings each).
	tallies, _ = scoreCorpus(t, "testdata/corpus_holdout.txt")
	for _, name := range Builtins() {
		tl := tallies[name]
		require.GreaterOrEqual(t, tl.precision(), 0.8, "held out: %s precision", name)
		require.GreaterOrEqual(t, tl.recall(), 0.8, "held out: %s recall", name)
	}
}

// scoreCorpus runs the default redactor over one corpus file and tallies
// each detector's outcomes.
func scoreCorpus(t *testing.T, path string) (map[string]*tally, int) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := defaultRedactor(t)

	tallies := map[string]*tally{}
	for _, b := range Builtins() {
		tallies[b] = &tally{}
	}
	lines, positives, negatives := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		text, ps := parseCorpusLine(t, line)
		if len(ps) == 0 {
			negatives++
		}
		positives += len(ps)
		found := make([]bool, len(ps))
		for _, m := range r.find(text) {
			name := r.dets[m.det].name
			hit := false
			for k, p := range ps {
				if p.kind == name && !found[k] && m.start <= p.start && m.end >= p.end &&
					strings.Trim(text[m.start:p.start]+text[p.end:m.end], " ") == "" {
					found[k], hit = true, true
					break
				}
			}
			if hit {
				tallies[name].tp++
			} else {
				tallies[name].fp++
				t.Logf("false positive %s: %q in %q", name, text[m.start:m.end], text)
			}
		}
		for k, p := range ps {
			if !found[k] {
				tallies[p.kind].fn++
				t.Logf("missed %s: %q in %q", p.kind, text[p.start:p.end], text)
			}
		}
	}
	require.NoError(t, sc.Err())

	var rep strings.Builder
	fmt.Fprintf(&rep, "%s: %d strings, %d planted values, %d look-alike negatives\n", path, lines, positives, negatives)
	fmt.Fprintf(&rep, "%-12s %5s %4s %4s %9s %7s\n", "detector", "tp", "fp", "fn", "precision", "recall")
	for _, name := range Builtins() {
		tl := tallies[name]
		fmt.Fprintf(&rep, "%-12s %5d %4d %4d %9.3f %7.3f\n", name, tl.tp, tl.fp, tl.fn, tl.precision(), tl.recall())
	}
	t.Log("\n" + rep.String())
	return tallies, lines
}

// Real captures of instrumented agents (the interop suite's OTLP/JSON,
// the examples) are full of ids, timestamps, token counts, versions and
// model names, and hold no personal data: the only values found there are
// the loopback addresses the instrumentations record as server.address.
func TestRealCapturesHoldNoFalsePositive(t *testing.T) {
	r := defaultRedactor(t)
	var files []string
	for _, g := range []string{"../../examples/traces/*.json", "../../interop/testdata/*.json", "../../interop/testdata/logs/*.json"} {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.GreaterOrEqual(t, len(files), 15)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(b)
		for _, m := range r.find(text) {
			got := r.dets[m.det].name + " " + text[m.start:m.end]
			assert.Equal(t, "ip_address 127.0.0.1", got, "in %s", f)
		}
	}
}
