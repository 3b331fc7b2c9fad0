package dashboard

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// grafanaVars are the Grafana variables the queries use where PromQL
// expects a duration, replaced by one to parse them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// ParsedQuery is one panel query with its PromQL parsed (Grafana's
// duration variables replaced by durations).
type ParsedQuery struct {
	Panel  Panel
	Query  Query
	Parsed parser.Expr
}

// ParsedQueries parses every panel query; one that does not parse is an
// error naming its panel.
func ParsedQueries() ([]ParsedQuery, error) {
	var out []ParsedQuery
	p := parser.NewParser(parser.Options{})
	for _, pn := range Panels() {
		for _, q := range pn.Queries {
			expr, err := p.ParseExpr(grafanaVars.Replace(q.Expr))
			if err != nil {
				return nil, fmt.Errorf("panel %q: %q: %w", pn.Title, q.Expr, err)
			}
			out = append(out, ParsedQuery{Panel: pn, Query: q, Parsed: expr})
		}
	}
	return out, nil
}

// Metrics parses every query of the dashboard (the panels' PromQL and the
// variables' label_values) and returns the metric names they read, each
// with the panels (or variables) that read it. A query that does not parse
// is an error.
func Metrics() (map[string][]string, error) {
	out := map[string][]string{}
	qs, err := ParsedQueries()
	if err != nil {
		return nil, err
	}
	for _, pq := range qs {
		pn, q, expr := pq.Panel, pq.Query, pq.Parsed
		names := 0
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			if vs.Name == "" {
				err = fmt.Errorf("panel %q: a selector without a metric name: %s", pn.Title, vs)
				return err
			}
			out[vs.Name] = appendOnce(out[vs.Name], pn.Title)
			names++
			return nil
		})
		if err != nil {
			return nil, err
		}
		if names == 0 {
			return nil, fmt.Errorf("panel %q: %q reads no metric", pn.Title, q.Expr)
		}
	}
	for _, v := range Variables {
		m := labelValues.FindStringSubmatch(v.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Query)
		}
		out[m[1]] = appendOnce(out[m[1]], "$"+v.Name)
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out, nil
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// LabelUse is a set of label names one query needs: each label of Labels
// must be a label of at least one metric of Metrics (a selector's matchers:
// of its metric; an aggregation's `by`: of some metric it aggregates).
type LabelUse struct {
	Panel   string
	Expr    string
	Labels  []string
	Metrics []string
}

// LabelUses lists the label names every panel query reads, to be checked
// against a scrape: a misspelt or renamed label parses, and then matches
// nothing or folds series together.
func LabelUses() ([]LabelUse, error) {
	var out []LabelUse
	qs, err := ParsedQueries()
	if err != nil {
		return nil, err
	}
	for _, pq := range qs {
		pn, q, expr := pq.Panel, pq.Query, pq.Parsed
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.VectorSelector:
				var ls []string
				for _, m := range n.LabelMatchers {
					if m.Name != "__name__" {
						ls = append(ls, m.Name)
					}
				}
				if len(ls) > 0 {
					out = append(out, LabelUse{Panel: pn.Title, Expr: q.Expr, Labels: ls, Metrics: []string{n.Name}})
				}
			case *parser.AggregateExpr:
				if n.Without || len(n.Grouping) == 0 {
					return nil
				}
				var names []string
				parser.Inspect(n.Expr, func(m parser.Node, _ []parser.Node) error {
					if vs, ok := m.(*parser.VectorSelector); ok {
						names = appendOnce(names, vs.Name)
					}
					return nil
				})
				out = append(out, LabelUse{Panel: pn.Title, Expr: q.Expr, Labels: n.Grouping, Metrics: names})
			}
			return nil
		})
	}
	return out, nil
}
