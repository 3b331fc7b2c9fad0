// Package dashboard builds evalbridge's Grafana dashboard from code with
// Grafana's foundation SDK: evaluation quality from the evalmetrics
// connector's metrics (pass rate, score distribution, results by status,
// canary versions), the judges' tokens, cost and latency, and the eval
// processor's health. `go run ./deploy/grafana` writes it to
// deploy/grafana/dashboard.json.
package dashboard

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's uid (stable across imports).
const UID = "evalbridge-quality"

// Query is one PromQL target of a panel.
type Query struct {
	Expr   string
	Legend string
}

// Panel is one panel of the dashboard, as the code declares it.
type Panel struct {
	Row     string
	Title   string
	About   string
	Kind    string // timeseries, heatmap
	Unit    string
	Min     *float64
	Max     *float64
	Stacked bool
	Queries []Query
}

// The filters every quality panel applies (the dashboard's variables).
const (
	sel      = `gen_ai_agent_name=~"$agent", gen_ai_evaluation_name=~"$evaluator"`
	scored   = `gen_ai_evaluation_results_total{gen_ai_evaluation_score_label=~"pass|fail", ` + sel + `}`
	passed   = `gen_ai_evaluation_results_total{gen_ai_evaluation_score_label="pass", ` + sel + `}`
	rateWin  = `[$__rate_interval]`
	rowQual  = "Evaluation quality"
	rowJudge = "Judges"
	rowProc  = "eval processor health"
	rowHuman = "Judge versus human"
)

func f(v float64) *float64 { return &v }

// passRate is the pass rate by the labels by: passed / scored results.
func passRate(by string) string {
	return `sum by (` + by + `) (rate(` + passed + rateWin + `))
  / sum by (` + by + `) (rate(` + scored + rateWin + `))`
}

// Panels lists the dashboard's panels in order.
func Panels() []Panel {
	return []Panel{
		{Row: rowQual, Title: "Pass rate by evaluator and agent", Kind: "timeseries", Unit: "percentunit", Min: f(0), Max: f(1),
			About: "Passed / (passed + failed) results; errors and timeouts are left out.",
			Queries: []Query{{
				Expr:   passRate("gen_ai_evaluation_name, gen_ai_agent_name"),
				Legend: "{{gen_ai_agent_name}} · {{gen_ai_evaluation_name}}",
			}}},
		{Row: rowQual, Title: "Score distribution", Kind: "heatmap",
			About: "gen_ai.evaluation.score buckets (score_buckets of the connector).",
			Queries: []Query{{
				Expr:   `sum by (le) (increase(gen_ai_evaluation_score_bucket{` + sel + `}` + rateWin + `))`,
				Legend: "{{le}}",
			}}},
		{Row: rowQual, Title: "Score quantiles (exemplars link to the scored trace)", Kind: "timeseries", Unit: "none", Min: f(0), Max: f(1),
			Queries: []Query{
				{Expr: `histogram_quantile(0.1, sum by (le, gen_ai_evaluation_name) (rate(gen_ai_evaluation_score_bucket{` + sel + `}` + rateWin + `)))`,
					Legend: "p10 {{gen_ai_evaluation_name}}"},
				{Expr: `histogram_quantile(0.5, sum by (le, gen_ai_evaluation_name) (rate(gen_ai_evaluation_score_bucket{` + sel + `}` + rateWin + `)))`,
					Legend: "p50 {{gen_ai_evaluation_name}}"},
			}},
		{Row: rowQual, Title: "Results by status", Kind: "timeseries", Unit: "ops", Stacked: true,
			About: "pass, fail, and errors and timeouts (error.type).",
			Queries: []Query{{
				Expr:   `sum by (gen_ai_evaluation_score_label, error_type) (rate(gen_ai_evaluation_results_total{` + sel + `}` + rateWin + `))`,
				Legend: "{{gen_ai_evaluation_score_label}}{{error_type}}",
			}}},
		{Row: rowQual, Title: "Canary: pass rate by service.version", Kind: "timeseries", Unit: "percentunit", Min: f(0), Max: f(1),
			About: "A version below the others' line is what the EvalCanaryVersionBelowOthers alert reports.",
			Queries: []Query{{
				Expr:   passRate("service_name, service_version"),
				Legend: "{{service_name}} {{service_version}}",
			}}},

		{Row: rowJudge, Title: "Judge tokens", Kind: "timeseries", Unit: "short", Stacked: true,
			Queries: []Query{{
				Expr:   `sum by (judge, type) (rate(otelcol_processor_eval_judge_tokens` + rateWin + `))`,
				Legend: "{{judge}} {{type}}",
			}}},
		{Row: rowJudge, Title: "Judge cost", Kind: "timeseries", Unit: "short", Stacked: true,
			About: "In the currency of the judge's price (contract §21), per evaluator.",
			Queries: []Query{{
				Expr:   `sum by (judge, evaluator) (increase(otelcol_processor_eval_judge_cost` + rateWin + `))`,
				Legend: "{{judge}} {{evaluator}}",
			}}},
		{Row: rowJudge, Title: "Judge latency and requests", Kind: "timeseries", Unit: "s",
			Queries: []Query{
				{Expr: `histogram_quantile(0.9, sum by (le, judge) (rate(otelcol_processor_eval_judge_request_duration_bucket` + rateWin + `)))`,
					Legend: "p90 {{judge}}"},
				{Expr: `sum by (judge, outcome) (rate(otelcol_processor_eval_judge_requests` + rateWin + `))`,
					Legend: "{{judge}} {{outcome}} req/s"},
			}},

		// §25: the evalmetrics connector joins human labels with the
		// machine result of the same trace, span and evaluation. Kappa is
		// the recording rule eval:agreement_kappa:7d (deploy/prometheus),
		// not a query here: the dashboard reads only what a scrape has.
		{Row: rowHuman, Title: "Judge-versus-human pairs (machine label, human label)", Kind: "timeseries", Unit: "short", Stacked: true,
			About: "Pairs of a human label and the machine result for the same span and evaluation, per evaluator version. Kappa over 7 days: eval:agreement_kappa:7d; alert EvalJudgeHumanKappaLow.",
			Queries: []Query{{
				Expr:   `sum by (gen_ai_evaluation_name, gen_ai_evaluation_evaluator_version, eval_machine_label, eval_human_label) (increase(eval_agreement_pairs_total` + rateWin + `))`,
				Legend: "{{gen_ai_evaluation_name}} {{gen_ai_evaluation_evaluator_version}} judge {{eval_machine_label}} / human {{eval_human_label}}",
			}}},
		{Row: rowHuman, Title: "Judge-versus-human agreement", Kind: "timeseries", Unit: "percentunit", Min: f(0), Max: f(1),
			About: "Share of pairs where the judge and the human gave the same label, per evaluation and version.",
			Queries: []Query{{
				Expr: `(sum by (gen_ai_evaluation_name, gen_ai_evaluation_evaluator_version) (increase(eval_agreement_pairs_total{eval_machine_label="pass", eval_human_label="pass"}` + rateWin + `))
  + on (gen_ai_evaluation_name, gen_ai_evaluation_evaluator_version)
  sum by (gen_ai_evaluation_name, gen_ai_evaluation_evaluator_version) (increase(eval_agreement_pairs_total{eval_machine_label="fail", eval_human_label="fail"}` + rateWin + `)))
  / sum by (gen_ai_evaluation_name, gen_ai_evaluation_evaluator_version) (increase(eval_agreement_pairs_total` + rateWin + `))`,
				Legend: "{{gen_ai_evaluation_name}} {{gen_ai_evaluation_evaluator_version}}",
			}}},

		{Row: rowProc, Title: "Scoring latency per trace", Kind: "timeseries", Unit: "s",
			Queries: []Query{
				{Expr: `histogram_quantile(0.5, sum by (le) (rate(otelcol_processor_eval_evaluation_duration_bucket` + rateWin + `)))`, Legend: "p50"},
				{Expr: `histogram_quantile(0.99, sum by (le) (rate(otelcol_processor_eval_evaluation_duration_bucket` + rateWin + `)))`, Legend: "p99"},
			}},
		{Row: rowProc, Title: "Held traces and release backlog", Kind: "timeseries", Unit: "short",
			Queries: []Query{
				{Expr: `sum(otelcol_processor_eval_traces_held)`, Legend: "traces held"},
				{Expr: `sum(otelcol_processor_eval_release_backlog)`, Legend: "spans in the release backlog"},
			}},
		{Row: rowProc, Title: "Back-pressure", Kind: "timeseries", Unit: "short",
			About: "Spans and log records refused with a retryable error while the release backlog is full.",
			Queries: []Query{
				{Expr: `sum(rate(otelcol_processor_eval_spans_refused` + rateWin + `))`, Legend: "spans refused/s"},
				{Expr: `sum(rate(otelcol_processor_eval_log_records_refused` + rateWin + `))`, Legend: "log records refused/s"},
			}},
		{Row: rowProc, Title: "Drops, unscored and sampled-out traces", Kind: "timeseries", Unit: "short",
			Queries: []Query{
				{Expr: `sum by (reason) (rate(otelcol_processor_eval_spans_dropped` + rateWin + `))`, Legend: "spans undelivered: {{reason}}"},
				{Expr: `sum by (reason) (rate(otelcol_processor_eval_spans_forwarded_unscored` + rateWin + `))`, Legend: "spans unscored: {{reason}}"},
				{Expr: `sum by (decision) (rate(otelcol_processor_eval_traces_sampled` + rateWin + `))`, Legend: "traces sampling: {{decision}}"},
			}},
	}
}

// Variables are the dashboard's template variables: the Prometheus data
// source, and the agents and evaluators (label_values queries, each naming
// a metric).
var Variables = []struct{ Name, Label, Query string }{
	{"agent", "Agent", "label_values(gen_ai_evaluation_results_total, gen_ai_agent_name)"},
	{"evaluator", "Evaluator", "label_values(gen_ai_evaluation_results_total, gen_ai_evaluation_name)"},
}

// Build builds the dashboard.
func Build() (dashboard.Dashboard, error) {
	ds := common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
	b := dashboard.NewDashboardBuilder("evalbridge: evaluation quality").
		Uid(UID).
		Tags([]string{"evalbridge", "opentelemetry", "gen_ai"}).
		Description("Pass rates, scores and canary versions from the evalmetrics connector; judge tokens, cost and latency; eval processor health. Generated by go run ./deploy/grafana.").
		Refresh("1m").
		Time("now-6h", "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus"))
	for _, v := range Variables {
		b = b.WithVariable(dashboard.NewQueryVariableBuilder(v.Name).
			Label(v.Label).
			Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr(v.Query)}).
			Definition(v.Query).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Sort(dashboard.VariableSortAlphabeticalAsc))
	}
	row := ""
	id := uint32(0)
	for _, p := range Panels() {
		if p.Row != row {
			row = p.Row
			id++
			b = b.WithRow(dashboard.NewRowBuilder(row).Id(id))
		}
		id++
		var targets []cog.Builder[variants.Dataquery]
		for i, q := range p.Queries {
			t := prometheus.NewDataqueryBuilder().
				Expr(q.Expr).
				LegendFormat(q.Legend).
				RefId(string(rune('A' + i))).
				Datasource(ds)
			if p.Kind == "heatmap" {
				t = t.Format(prometheus.PromQueryFormatHeatmap)
			}
			if p.Unit == "none" {
				t = t.Exemplar(true)
			}
			targets = append(targets, t)
		}
		switch p.Kind {
		case "heatmap":
			b = b.WithPanel(heatmap.NewPanelBuilder().Id(id).Title(p.Title).Description(p.About).Datasource(ds).
				Targets(targets).Height(8).Span(12))
		default:
			tp := timeseries.NewPanelBuilder().Id(id).Title(p.Title).Description(p.About).Datasource(ds).
				Targets(targets).Unit(p.Unit).Height(8).Span(12).FillOpacity(10).
				Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).ShowLegend(true))
			if p.Min != nil {
				tp = tp.Min(*p.Min)
			}
			if p.Max != nil {
				tp = tp.Max(*p.Max)
			}
			if p.Stacked {
				tp = tp.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
			}
			b = b.WithPanel(tp)
		}
	}
	return b.Build()
}

// JSON is the dashboard as Grafana imports it (indented, newline at the end).
func JSON() ([]byte, error) {
	d, err := Build()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
