package prometheus

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"gopkg.in/yaml.v3"
)

// The subset of promtool's unit-test file format (`promtool test rules`)
// that rules_test.yaml uses: input series in expanding notation, alert
// tests and PromQL expression tests at evaluation times.
type unitTestFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	Tests              []testGroup    `yaml:"tests"`
}

type testGroup struct {
	Name        string         `yaml:"name"`
	Interval    model.Duration `yaml:"interval"`
	InputSeries []struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	} `yaml:"input_series"`
	AlertRuleTests []struct {
		EvalTime  model.Duration `yaml:"eval_time"`
		Alertname string         `yaml:"alertname"`
		ExpAlerts []struct {
			ExpLabels      map[string]string `yaml:"exp_labels"`
			ExpAnnotations map[string]string `yaml:"exp_annotations"`
		} `yaml:"exp_alerts"`
	} `yaml:"alert_rule_test"`
	PromqlExprTests []struct {
		Expr       string         `yaml:"expr"`
		EvalTime   model.Duration `yaml:"eval_time"`
		ExpSamples []struct {
			Labels string  `yaml:"labels"`
			Value  float64 `yaml:"value"`
		} `yaml:"exp_samples"`
	} `yaml:"promql_expr_test"`
}

// TestRules runs rules_test.yaml as `promtool test rules rules_test.yaml`
// would.
func TestRules(t *testing.T) {
	raw, err := os.ReadFile("rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f unitTestFile
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("rules_test.yaml: %v", err)
	}
	if len(f.Tests) == 0 || len(f.RuleFiles) == 0 {
		t.Fatal("rules_test.yaml has no tests or no rule files")
	}
	files := make([]string, len(f.RuleFiles))
	for i, rf := range f.RuleFiles {
		files[i] = filepath.Clean(rf)
	}
	for _, tg := range f.Tests {
		t.Run(tg.Name, func(t *testing.T) {
			runGroup(t, tg, time.Duration(f.EvaluationInterval), files)
		})
	}
}

func runGroup(t *testing.T, tg testGroup, evalInterval time.Duration, files []string) {
	if evalInterval == 0 {
		evalInterval = time.Minute
	}
	interval := time.Duration(tg.Interval)
	if interval == 0 {
		interval = evalInterval
	}
	var load strings.Builder
	fmt.Fprintf(&load, "load %s\n", model.Duration(interval))
	for _, s := range tg.InputSeries {
		fmt.Fprintf(&load, "  %s %s\n", s.Series, s.Values)
	}
	suite, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{EnableAtModifier: true, EnableNegativeOffset: true})
	if err != nil {
		t.Fatalf("input series: %v", err)
	}
	defer func() {
		if err := suite.Close(); err != nil {
			t.Error(err)
		}
	}()
	p := parser.NewParser(parser.Options{})
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:  rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		Appendable: suite.Storage(),
		Context:    context.Background(),
		NotifyFunc: func(context.Context, string, ...*rules.Alert) {},
		Logger:     promslog.NewNopLogger(),
		Parser:     p,
	})
	groupsMap, errs := m.LoadGroups(interval, labels.EmptyLabels(), "", nil, false, files...)
	if len(errs) > 0 {
		t.Fatalf("loading the rules: %v", errs)
	}
	// Recording rules first (the alerts read them), as in rules.yaml.
	var groups []*rules.Group
	for _, g := range groupsMap {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].File()+groups[i].Name() < groups[j].File()+groups[j].Name() })
	sort.SliceStable(groups, func(i, j int) bool { return strings.HasSuffix(groups[i].Name(), ".recording") })
	for _, g := range groups {
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true)
			}
		}
	}

	alertsAt := map[time.Duration][]int{}
	maxT := time.Duration(0)
	for i, at := range tg.AlertRuleTests {
		d := time.Duration(at.EvalTime)
		if d%evalInterval != 0 {
			t.Fatalf("alert test %s: eval_time %v is not a multiple of the evaluation interval", at.Alertname, d)
		}
		alertsAt[d] = append(alertsAt[d], i)
		maxT = max(maxT, d)
	}
	for _, pt := range tg.PromqlExprTests {
		maxT = max(maxT, time.Duration(pt.EvalTime))
	}
	start := time.Unix(0, 0).UTC()
	for d := time.Duration(0); d <= maxT; d += evalInterval {
		ts := start.Add(d)
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				g.Eval(suite.Context(), ts)
				for _, r := range g.Rules() {
					if err := r.LastError(); err != nil {
						t.Fatalf("rule %s at %v: %v", r.Name(), d, err)
					}
				}
			}
		})
		for _, i := range alertsAt[d] {
			at := tg.AlertRuleTests[i]
			var got []string
			for _, g := range groups {
				for _, r := range g.Rules() {
					ar, ok := r.(*rules.AlertingRule)
					if !ok || ar.Name() != at.Alertname {
						continue
					}
					for _, a := range ar.ActiveAlerts() {
						if a.State == rules.StateFiring {
							got = append(got, a.Labels.String()+" "+a.Annotations.String())
						}
					}
				}
			}
			var want []string
			for _, e := range at.ExpAlerts {
				l := map[string]string{labels.AlertName: at.Alertname}
				for k, v := range e.ExpLabels {
					l[k] = v
				}
				want = append(want, labels.FromMap(l).String()+" "+labels.FromMap(e.ExpAnnotations).String())
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("alert %s at %v:\n  want %v\n  got  %v", at.Alertname, d, want, got)
			}
		}
	}

	for _, pt := range tg.PromqlExprTests {
		ts := start.Add(time.Duration(pt.EvalTime))
		q, err := suite.QueryEngine().NewInstantQuery(suite.Context(), suite.Queryable(), nil, pt.Expr, ts)
		if err != nil {
			t.Fatalf("%s: %v", pt.Expr, err)
		}
		res := q.Exec(suite.Context())
		if res.Err != nil {
			t.Fatalf("%s: %v", pt.Expr, res.Err)
		}
		vec, ok := res.Value.(promql.Vector)
		if !ok {
			t.Fatalf("%s: %T, want a vector", pt.Expr, res.Value)
		}
		got := map[string]float64{}
		for _, s := range vec {
			got[s.Metric.String()] = s.F
		}
		want := map[string]float64{}
		for _, e := range pt.ExpSamples {
			l, err := p.ParseMetric(e.Labels)
			if err != nil {
				t.Fatalf("exp_samples %q: %v", e.Labels, err)
			}
			want[l.String()] = e.Value
		}
		if len(got) != len(want) {
			t.Errorf("%s at %v: got %v, want %v", pt.Expr, pt.EvalTime, got, want)
			continue
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("%s at %v: %s = %v (present %v), want %v", pt.Expr, pt.EvalTime, k, g, ok, w)
			}
		}
		q.Close()
	}
}

// prometheus.yaml, the server config docs/metrics.md shows, loads with
// Prometheus' own config loader and names rules.yaml.
func TestServerConfig(t *testing.T) {
	cfg, err := config.LoadFile("prometheus.yaml", false, promslog.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.RuleFiles) != 1 || filepath.Base(cfg.RuleFiles[0]) != "rules.yaml" {
		t.Errorf("rule_files = %v", cfg.RuleFiles)
	}
	if len(cfg.ScrapeConfigs) != 2 {
		t.Fatalf("%d scrape configs", len(cfg.ScrapeConfigs))
	}
	if s := cfg.String(); !strings.Contains(s, "localhost:8889") || !strings.Contains(s, "localhost:8888") {
		t.Errorf("the scrape targets are not the collector's ports:\n%s", s)
	}
}

// The chart's PrometheusRule is rendered from its rules/ copy of
// rules.yaml (a link would make helm warn and package this directory's Go
// files): the copy is the file. `cp deploy/prometheus/rules.yaml
// deploy/helm/evalbridge/rules/rules.yaml` after a change.
func TestChartCarriesTheRules(t *testing.T) {
	want, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../helm/evalbridge/rules/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("deploy/helm/evalbridge/rules/rules.yaml differs from deploy/prometheus/rules.yaml: cp deploy/prometheus/rules.yaml deploy/helm/evalbridge/rules/rules.yaml")
	}
}
