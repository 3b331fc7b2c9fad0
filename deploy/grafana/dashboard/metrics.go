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

// Metrics parses every query of the dashboard (the panels' PromQL and the
// variables' label_values) and returns the metric names they read, each
// with the panels (or variables) that read it. A query that does not parse
// is an error.
func Metrics() (map[string][]string, error) {
	out := map[string][]string{}
	p := parser.NewParser(parser.Options{})
	for _, pn := range Panels() {
		for _, q := range pn.Queries {
			expr, err := p.ParseExpr(grafanaVars.Replace(q.Expr))
			if err != nil {
				return nil, fmt.Errorf("panel %q: %q: %w", pn.Title, q.Expr, err)
			}
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
