package testkit

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Sample is one sample line of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
	Line   string
}

// Exposition is a scraped Prometheus text exposition.
type Exposition struct {
	Samples []Sample
	Types   map[string]string // family name -> type, from the # TYPE lines
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([^ ]+)`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// Scrape reads url's Prometheus text exposition; the test fails when the
// endpoint does not answer 200.
func Scrape(t testing.TB, url string) Exposition {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	out := Exposition{Types: map[string]string{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out.Types[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := Sample{Name: m[1], Labels: map[string]string{}, Value: v, Line: line}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.Labels[p[1]] = p[2]
		}
		out.Samples = append(out.Samples, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return out
}

// Total adds up the values of name's samples whose labels include every
// pair of match.
func (e Exposition) Total(name string, match map[string]string) float64 {
	v := 0.0
	for _, s := range e.Samples {
		if s.Name == name && hasLabels(s.Labels, match) {
			v += s.Value
		}
	}
	return v
}

// LabelNames is, per sample name, the label names seen on its samples.
func (e Exposition) LabelNames() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, s := range e.Samples {
		if out[s.Name] == nil {
			out[s.Name] = map[string]bool{}
		}
		for l := range s.Labels {
			out[s.Name][l] = true
		}
	}
	return out
}

// String is the exposition's sample lines, for a failure message.
func (e Exposition) String() string {
	lines := make([]string, 0, len(e.Samples))
	for _, s := range e.Samples {
		lines = append(lines, s.Line)
	}
	return strings.Join(lines, "\n")
}

func hasLabels(labels, match map[string]string) bool {
	for k, want := range match {
		if labels[k] != want {
			return false
		}
	}
	return true
}
