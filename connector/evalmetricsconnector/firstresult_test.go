package evalmetricsconnector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// A new series is emitted at 0 by its first flush, then with its count; a
// pass series brings its fail sibling at 0 (and the reverse); errors have
// no sibling; the histogram starts empty too.
func TestNewSeriesStartAtZero(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil)
	ctx := context.Background()
	require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1",
		result{name: "a", label: "pass", score: f(1), trace: 1},
		result{name: "a", label: "pass", score: f(0.9), trace: 2},
		result{name: "b", label: "fail", score: f(0), trace: 3},
		result{name: "c", errType: "timeout", trace: 4})))
	h.flush(t)
	first := map[string]int64{
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=a,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1": 0,
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=a,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1": 0,
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=b,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1": 0,
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=b,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1": 0,
		"error.type=timeout,gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=c,service.name=travel,service.version=1":                 0,
	}
	require.Equal(t, first, counts(t, h.last(t, metricResults)))
	hd := h.last(t, metricScore).Histogram().DataPoints()
	require.Equal(t, 2, hd.Len())
	for i := 0; i < hd.Len(); i++ {
		require.Zero(t, hd.At(i).Count())
		require.Zero(t, hd.At(i).Sum())
		require.Equal(t, make([]uint64, len(DefaultScoreBuckets)+1), hd.At(i).BucketCounts().AsRaw())
	}

	// A failure of a now. Its series was shown at 0: it counts at once.
	require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1", result{name: "a", label: "fail", score: f(0.1), trace: 5})))
	h.flush(t)
	second := counts(t, h.last(t, metricResults))
	require.Equal(t, int64(2), second["gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=a,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1"])
	require.Equal(t, int64(1), second["gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=a,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1"])
	require.Equal(t, int64(1), second["error.type=timeout,gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=c,service.name=travel,service.version=1"])
	require.Len(t, second, 5)
}

// §24: the evaluator's version and type, when the result carries them,
// cut both metrics; a new version is a new series.
func TestProvenanceAttributes(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil)
	require.NoError(t, h.c.ConsumeLogs(context.Background(), resultLogs("1",
		result{name: "task_done", label: "pass", score: f(1), version: "v3", evType: "llm_judge", trace: 1},
		result{name: "task_done", label: "pass", score: f(1), version: "sha256:0123456789ab", evType: "llm_judge", trace: 2},
		result{name: "task_done", label: "thumbs_up", evType: "human", trace: 3},
		result{name: "task_done", label: "pass", score: f(0.5), trace: 4})))
	require.NoError(t, h.c.Shutdown(context.Background()))
	got := counts(t, h.last(t, metricResults))
	const base = "gen_ai.agent.name=resource_agent,gen_ai.evaluation."
	require.Equal(t, map[string]int64{
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=v3,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1":                  1,
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=v3,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1":                  0,
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=sha256:0123456789ab,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1": 1,
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=sha256:0123456789ab,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1": 0,
		base + "evaluator.type=human,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=thumbs_up,service.name=travel,service.version=1":                                                        1,
		base + "name=task_done,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1":                                                                                                    1,
		base + "name=task_done,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1":                                                                                                    0,
	}, got)
	hd := h.last(t, metricScore).Histogram().DataPoints()
	var hist []string
	for i := 0; i < hd.Len(); i++ {
		hist = append(hist, key(hd.At(i).Attributes()))
	}
	sort.Strings(hist)
	require.Equal(t, []string{
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=sha256:0123456789ab,gen_ai.evaluation.name=task_done,service.name=travel,service.version=1",
		base + "evaluator.type=llm_judge,gen_ai.evaluation.evaluator.version=v3,gen_ai.evaluation.name=task_done,service.name=travel,service.version=1",
		base + "name=task_done,service.name=travel,service.version=1",
	}, hist)
}

// The connector into contrib's prometheus exporter, scraped once per
// flush as Prometheus would (scrape interval = flush_interval = 15 s),
// the scrapes loaded into Prometheus' own engine: increase() over a window
// holding a series' first results counts them, and the pass rate has its
// fail side (at 0) before the first failure. Without the zero first flush
// the pass series' first sample would be 2 and increase() 0; without the
// sibling the pass rate would have no series before the first failure.
func TestIncreaseCountsFirstResults(t *testing.T) {
	ctx := context.Background()
	addr := testkit.FreeAddr(t)
	pf := prometheusexporter.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*prometheusexporter.Config)
	pcfg.ServerConfig.NetAddr.Endpoint = addr
	exp, err := pf.CreateMetrics(ctx, exportertest.NewNopSettings(pf.Type()), pcfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(ctx)) }()

	flushed := make(chan struct{})
	next, err := consumer.NewMetrics(func(ctx context.Context, md pmetric.Metrics) error {
		defer func() { flushed <- struct{}{} }()
		return exp.ConsumeMetrics(ctx, md)
	})
	require.NoError(t, err)
	tick := make(chan time.Time)
	c, err := newConnector(connectortest.NewNopSettings(Type), createDefaultConfig(), next,
		func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} })
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))

	// scrape i is at i*15s; a series missing from a scrape is "_".
	const name = "gen_ai_evaluation_results_total"
	series := map[string][]string{}
	scrapes := 0
	scrape := func() {
		for _, s := range testkit.Scrape(t, "http://"+addr+"/metrics").Samples {
			if s.Name != name || s.Labels["gen_ai_evaluation_evaluator_type"] == evaluatorTypeHuman {
				continue // the human label's own series is not the canary's
			}
			k := fmt.Sprintf("%s{gen_ai_evaluation_name=%q,gen_ai_evaluation_score_label=%q}", name,
				s.Labels["gen_ai_evaluation_name"], s.Labels["gen_ai_evaluation_score_label"])
			for len(series[k]) < scrapes {
				series[k] = append(series[k], "_")
			}
			series[k] = append(series[k], fmt.Sprint(s.Value))
		}
		scrapes++
	}
	flushThenScrape := func() {
		tick <- time.Now()
		<-flushed
		scrape()
	}
	scrape() // 0s: nothing yet
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1",
		result{name: "canary", label: "pass", score: f(1), trace: 1},
		result{name: "canary", label: "pass", score: f(1), trace: 2})))
	flushThenScrape() // 15s
	flushThenScrape() // 30s
	flushThenScrape() // 45s
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1", result{name: "canary", label: "fail", score: f(0), trace: 3},
		result{name: "canary", label: "thumbs_down", evType: evaluatorTypeHuman, trace: 1})))
	flushThenScrape() // 60s
	flushThenScrape() // 75s
	// The agreement pair, under the Prometheus name §25 gives it.
	pairs := testkit.Scrape(t, "http://"+addr+"/metrics").Total("eval_agreement_pairs_total", map[string]string{
		"gen_ai_evaluation_name": "canary", "eval_machine_label": "pass", "eval_human_label": "fail"})
	require.Equal(t, 1.0, pairs, "eval_agreement_pairs_total{machine pass, human fail}")
	go func() { <-flushed }() // Shutdown's last flush
	require.NoError(t, c.Shutdown(ctx))

	var load strings.Builder
	load.WriteString("load 15s\n")
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&load, "  %s %s\n", k, strings.Join(series[k], " "))
	}
	t.Logf("scrapes:\n%s", load.String())
	promqltest.RunTest(t, load.String()+`
# The first two passes, counted by increase() over the first minute.
eval instant at 45s sum by (gen_ai_evaluation_score_label) (increase(`+name+`[1m]))
  {gen_ai_evaluation_score_label="pass"} 2
  {gen_ai_evaluation_score_label="fail"} 0

# The pass rate before the first failure: both sides exist.
eval instant at 45s sum(`+name+`{gen_ai_evaluation_score_label="pass"}) / sum(`+name+`)
  {} 1

# The first failure, counted by increase() over the scrapes around it.
eval instant at 75s sum by (gen_ai_evaluation_score_label) (increase(`+name+`[45s]))
  {gen_ai_evaluation_score_label="pass"} 0
  {gen_ai_evaluation_score_label="fail"} 1
`, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}
