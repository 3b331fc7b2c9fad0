package main

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// instrument is a metric the distribution registers: its name (what the
// code passes to the meter, what the tables document) and its kind.
type instrument struct {
	kind  string // counter, updowncounter, gauge, histogram, or "" when unknown
	attrs map[string]bool
}

// declaredInstruments reads what the distribution says it emits: every
// component's metadata.yaml (kind and attributes), and every "otelcol_…"
// string literal of the product's Go code passed to a meter (kind from the
// constructor), so that a metric another package registers without
// metadata.yaml counts too.
func declaredInstruments(t *testing.T) map[string]*instrument {
	t.Helper()
	out := map[string]*instrument{}
	ctor := regexp.MustCompile(`(?s)(Int64|Float64)(Counter|UpDownCounter|Histogram|Gauge|ObservableCounter|ObservableUpDownCounter|ObservableGauge)\(\s*(?:\n\s*)?"(otelcol_[a-z0-9_]*[a-z0-9])"`)
	constDecl := regexp.MustCompile(`(\w+)\s*=\s*"(otelcol_[a-z0-9_]*[a-z0-9])"`)
	constUse := regexp.MustCompile(`(?s)(Int64|Float64)(Counter|UpDownCounter|Histogram|Gauge|ObservableCounter|ObservableUpDownCounter|ObservableGauge)\(\s*(\w+)\s*,`)
	kindOf := func(k string) string {
		switch k {
		case "Counter", "ObservableCounter":
			return "counter"
		case "UpDownCounter", "ObservableUpDownCounter":
			return "updowncounter"
		case "Gauge", "ObservableGauge":
			return "gauge"
		}
		return "histogram"
	}
	err := telemetrydoc.WalkModule(repoRoot, func(path string, d fs.DirEntry) error {
		switch {
		case d.Name() == "metadata.yaml":
			md, err := telemetrydoc.Load(path)
			if err != nil {
				return err
			}
			for key, m := range md.Telemetry.Metrics {
				in := &instrument{attrs: map[string]bool{}}
				switch {
				case m.Sum != nil && m.Sum.Monotonic:
					in.kind = "counter"
				case m.Sum != nil:
					in.kind = "updowncounter"
				case m.Gauge != nil:
					in.kind = "gauge"
				default:
					in.kind = "histogram"
				}
				for _, a := range m.Attributes {
					in.attrs[md.Attributes[a].Name(a)] = true
				}
				out["otelcol_"+key] = in
			}
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !strings.Contains(path, "loadgen"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			consts := map[string]string{}
			for _, m := range constDecl.FindAllStringSubmatch(string(src), -1) {
				consts[m[1]] = m[2]
			}
			add := func(name, kind string) {
				if out[name] == nil {
					out[name] = &instrument{kind: kind}
				}
			}
			for _, m := range ctor.FindAllStringSubmatch(string(src), -1) {
				add(m[3], kindOf(m[2]))
			}
			for _, m := range constUse.FindAllStringSubmatch(string(src), -1) {
				if name, ok := consts[m[3]]; ok {
					add(name, kindOf(m[2]))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The collector's own metrics as its Prometheus endpoint exposes them
// (service::telemetry::metrics, a pull reader with its defaults): the
// series names a PromQL expression may use.
func TestMetricsInDocsAreEmitted(t *testing.T) {
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"{\"score\": 0.4, \"reason\": \"meh\"}"}}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
	}))
	defer judge.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer hook.Close()
	otlpAddr, promAddr := freeAddr(t), freeAddr(t)
	promHost, promPort, _ := strings.Cut(promAddr, ":")
	startCollector(t, testkit.Config(t, "testdata/docs-metrics.yaml", map[string]string{
		"OTLP": otlpAddr, "Judge": judge.URL + "/v1", "Webhook": hook.URL, "PromHost": promHost, "PromPort": promPort}))
	for _, f := range []string{"travel-agent-semconv.json", "travel-agent-wrong-order.json"} {
		postJSON(t, "http://"+otlpAddr+"/v1/traces", filepath.Join(repoRoot, "examples", "traces", f))
	}
	url := "http://" + promAddr + "/metrics"
	waitFor(t, 30*time.Second, "evaluation and judge metrics", func() bool {
		types := testkit.Scrape(t, url).Types
		return types["otelcol_processor_eval_judge_requests"] != "" || types["otelcol_processor_eval_judge_requests_total"] != ""
	})

	// A series appears once its component first records it: the
	// exporters' once the released spans reach them, after the judge's
	// metrics. So the docs are checked against scrapes until they hold, and
	// the last scrape's problems are reported when 30 s are up.
	declared := declaredInstruments(t)
	var problems []string
	retryFor(30*time.Second, func() bool {
		problems = docProblems(t, declared, testkit.Scrape(t, url))
		return len(problems) == 0
	})
	for _, p := range problems {
		t.Error(p)
	}
}

// docProblems checks the docs against the declared instruments and one
// scrape of the endpoint.
func docProblems(t *testing.T, declared map[string]*instrument, e testkit.Exposition) []string {
	t.Helper()
	types, labels := e.Types, e.LabelNames()
	// The naming rule, read off the endpoint: which suffix a counter gets.
	counterSuffix := "?"
	for name, in := range declared {
		if in.kind != "counter" {
			continue
		}
		for _, suffix := range []string{"", "_total"} {
			if types[name+suffix] == "counter" {
				if counterSuffix != "?" && counterSuffix != suffix {
					return []string{fmt.Sprintf("counters are exposed both with and without _total (%s)", name)}
				}
				counterSuffix = suffix
			}
		}
	}
	if counterSuffix == "?" {
		return []string{fmt.Sprintf("no declared counter on the endpoint: %v", slices.Sorted(maps.Keys(types)))}
	}

	// series: every name a PromQL expression may select, with its labels.
	series := map[string]map[string]bool{}
	instruments := map[string]bool{}
	for name, in := range declared {
		instruments[name] = true
		switch in.kind {
		case "counter":
			series[name+counterSuffix] = maps.Clone(in.attrs)
		case "histogram":
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[name+s] = maps.Clone(in.attrs)
			}
		default: // a gauge, or a kind unknown: its plain name only
			series[name] = maps.Clone(in.attrs)
		}
	}
	for name, typ := range types {
		if series[name] == nil {
			series[name] = labels[name]
		}
		instruments[name] = true
		if typ == "counter" {
			instruments[strings.TrimSuffix(name, "_total")] = true
		}
		if typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[name+s] = labels[name+s]
			}
		}
	}
	for name := range types {
		for l := range labels[name] {
			if series[name] != nil {
				series[name][l] = true
			}
		}
	}
	return checkDocs(t, instruments, series)
}

var (
	metricToken = regexp.MustCompile(`otelcol_[a-z0-9_]+\*?`)
	fenceRE     = regexp.MustCompile("(?s)```(yaml|promql)\n(.*?)```")
	envRE       = regexp.MustCompile(`\$\{env:[A-Za-z_]+\}`)
)

// checkDocs reads docs/*.md and README.md (but its Changelog, which names
// old metrics on purpose): every metric name must be an instrument the
// distribution registers or a series its endpoint exposes; every PromQL
// expression (`expr:` of a yaml block, a promql block) must parse and
// select only exposed series, with labels the metric carries.
func checkDocs(t *testing.T, instruments map[string]bool, series map[string]map[string]bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	var problems []string
	names, exprs := 0, 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if strings.HasSuffix(f, "README.md") {
			if i := strings.Index(text, "\n## Changelog"); i >= 0 {
				rest := text[i+1:]
				end := strings.Index(rest[3:], "\n## ")
				if end < 0 {
					text = text[:i]
				} else {
					text = text[:i] + rest[3+end:]
				}
			}
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, tok := range metricToken.FindAllString(text, -1) {
			names++
			if strings.HasSuffix(tok, "*") {
				prefix := strings.TrimSuffix(tok, "*")
				found := false
				for n := range instruments {
					found = found || strings.HasPrefix(n, prefix)
				}
				if !found {
					problems = append(problems, fmt.Sprintf("%s: %s matches no metric the distribution emits", rel, tok))
				}
				continue
			}
			if !instruments[tok] && series[tok] == nil {
				problems = append(problems, fmt.Sprintf("%s: %s is not a metric the distribution emits (nor a series of its Prometheus endpoint)", rel, tok))
			}
		}
		for _, block := range fenceRE.FindAllStringSubmatch(text, -1) {
			var list []string
			if block[1] == "promql" {
				list = append(list, block[2])
			} else {
				var doc any
				if err := yaml.Unmarshal([]byte(envRE.ReplaceAllString(block[2], "x")), &doc); err != nil {
					continue // not every yaml block is whole (excerpts with "…")
				}
				list = exprValues(doc, list)
			}
			for _, expr := range list {
				if !strings.Contains(expr, "otelcol_") {
					continue
				}
				exprs++
				parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: PromQL does not parse: %v\n%s", rel, err, expr))
					continue
				}
				parser.Inspect(parsed, func(n parser.Node, _ []parser.Node) error {
					vs, ok := n.(*parser.VectorSelector)
					if !ok {
						return nil
					}
					ls, ok := series[vs.Name]
					if !ok {
						problems = append(problems, fmt.Sprintf("%s: PromQL selects %s, which the endpoint does not expose (%s)", rel, vs.Name, strings.TrimSpace(expr)))
						return nil
					}
					for _, m := range vs.LabelMatchers {
						if m.Name != "__name__" && len(ls) > 0 && !ls[m.Name] {
							problems = append(problems, fmt.Sprintf("%s: PromQL selects %s{%s}, a label the metric does not carry", rel, vs.Name, m.Name))
						}
					}
					return nil
				})
			}
		}
	}
	if names == 0 || exprs == 0 {
		problems = append(problems, fmt.Sprintf("found %d metric names and %d PromQL expressions in the docs: the scan is broken", names, exprs))
	}
	return problems
}

// exprValues collects the `expr` strings of a YAML document (Prometheus
// rules), wherever they are nested.
func exprValues(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && k == "expr" {
				out = append(out, s)
				continue
			}
			out = exprValues(c, out)
		}
	case []any:
		for _, c := range x {
			out = exprValues(c, out)
		}
	}
	return out
}
