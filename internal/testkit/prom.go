package testkit

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
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

// Histogram is one histogram series of an exposition: its cumulative
// buckets by upper bound (+Inf last), sum and count.
type Histogram struct {
	Name   string            // the family: the name without _bucket
	Labels map[string]string // without le
	Bounds []float64         // upper bounds, ascending, +Inf last
	Counts []float64         // cumulative counts, one per bound
	Sum    float64
	Count  float64
}

// Histograms gathers the exposition's histogram series.
func (e Exposition) Histograms() []Histogram {
	byKey := map[string]*Histogram{}
	var order []string
	key := func(name string, labels map[string]string) string {
		ks := make([]string, 0, len(labels))
		for k, v := range labels {
			if k != "le" {
				ks = append(ks, k+"="+v)
			}
		}
		sort.Strings(ks)
		return name + "{" + strings.Join(ks, ",") + "}"
	}
	get := func(name string, labels map[string]string) *Histogram {
		k := key(name, labels)
		h, ok := byKey[k]
		if !ok {
			ls := map[string]string{}
			for l, v := range labels {
				if l != "le" {
					ls[l] = v
				}
			}
			h = &Histogram{Name: name, Labels: ls}
			byKey[k] = h
			order = append(order, k)
		}
		return h
	}
	for _, s := range e.Samples {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			family := strings.TrimSuffix(s.Name, suffix)
			if family == s.Name || e.Types[family] != "histogram" {
				continue
			}
			h := get(family, s.Labels)
			switch suffix {
			case "_bucket":
				le, err := strconv.ParseFloat(s.Labels["le"], 64)
				if err != nil {
					continue
				}
				h.Bounds = append(h.Bounds, le)
				h.Counts = append(h.Counts, s.Value)
			case "_sum":
				h.Sum = s.Value
			case "_count":
				h.Count = s.Value
			}
		}
	}
	out := make([]Histogram, 0, len(order))
	for _, k := range order {
		h := byKey[k]
		idx := make([]int, len(h.Bounds))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return h.Bounds[idx[a]] < h.Bounds[idx[b]] })
		bs, cs := make([]float64, len(idx)), make([]float64, len(idx))
		for i, j := range idx {
			bs[i], cs[i] = h.Bounds[j], h.Counts[j]
		}
		h.Bounds, h.Counts = bs, cs
		out = append(out, *h)
	}
	return out
}

// Quantile estimates the q-quantile from the buckets as PromQL's
// histogram_quantile does: linear within the bucket holding the rank (the
// lowest bucket from 0 when its bound is positive), the last finite bound
// when the rank lies in +Inf.
func (h Histogram) Quantile(q float64) float64 {
	n := len(h.Bounds)
	if n < 2 || h.Counts[n-1] == 0 {
		return math.NaN()
	}
	rank := q * h.Counts[n-1]
	i := sort.SearchFloat64s(h.Counts, rank)
	if i >= n-1 {
		return h.Bounds[n-2]
	}
	lower, prev := 0.0, 0.0
	if i > 0 {
		lower, prev = h.Bounds[i-1], h.Counts[i-1]
	} else if h.Bounds[0] <= 0 {
		return h.Bounds[0]
	}
	inBucket := h.Counts[i] - prev
	if inBucket == 0 {
		return h.Bounds[i]
	}
	return lower + (h.Bounds[i]-lower)*(rank-prev)/inBucket
}

// BucketProblem says why h's buckets do not resolve the values observed
// (contract §18): the p90 from the buckets is not within 10 times the
// observed mean, or more than 10 % of the observations lie past the last
// finite bucket. Empty when they do, or when there is nothing to judge
// (no observations, or a mean of 0).
func (h Histogram) BucketProblem() string {
	n := len(h.Bounds)
	if h.Count == 0 || n < 2 {
		return ""
	}
	if past := h.Count - h.Counts[n-2]; past > 0.1*h.Count {
		return fmt.Sprintf("%.0f of %.0f observations lie past the last finite bucket (le=%g)", past, h.Count, h.Bounds[n-2])
	}
	mean := h.Sum / h.Count
	if mean <= 0 {
		return ""
	}
	if p90 := h.Quantile(0.9); p90 > 10*mean || p90 < mean/10 {
		return fmt.Sprintf("p90 from the buckets %g is not within 10 times the observed mean %g", p90, mean)
	}
	return ""
}
