package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/evalbridge/evalbridge/deploy/grafana/dashboard"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// distribution is the distribution running on its embedded default
// config, with only its listening ports moved to free ones (and its logs
// quiet) so tests may run side by side.
type distribution struct {
	grpc, prom, telemetry string
}

func startDefaultDistribution(t *testing.T, extra ...string) distribution {
	t.Helper()
	d := distribution{grpc: freeAddr(t), prom: freeAddr(t), telemetry: freeAddr(t)}
	host, port, _ := net.SplitHostPort(d.telemetry)
	uris := append([]string{defaultConfigURI(),
		"yaml:receivers::otlp::protocols::grpc::endpoint: " + d.grpc,
		"yaml:receivers::otlp::protocols::http::endpoint: " + freeAddr(t),
		"yaml:exporters::prometheus::endpoint: " + d.prom,
		// The result metrics are flushed every 15s by default; the test
		// does not wait that long.
		"yaml:connectors::evalmetrics::flush_interval: 100ms",
		"yaml:service::telemetry::logs::level: warn",
		fmt.Sprintf("yaml:service::telemetry::metrics::readers: [{pull: {exporter: {prometheus: {host: %q, port: %s}}}}]", host, port),
	}, extra...)
	set := settings()
	set.ConfigProviderSettings.ResolverSettings.URIs = uris
	testkit.RunCollector(t, set)
	return d
}

// runQuickstartAgent sends the quickstart's five runs (go run
// ./examples/agent) to addr and returns their trace ids by run name.
func runQuickstartAgent(t *testing.T, addr string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "run", "./examples/agent", "-endpoint", addr)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/agent: %v\n%s", err, out)
	}
	ids := map[string]string{}
	for _, m := range runLine.FindAllStringSubmatch(string(out), -1) {
		ids[m[1]] = m[2]
	}
	if len(ids) != 5 {
		t.Fatalf("examples/agent printed %d runs:\n%s", len(ids), out)
	}
	return ids
}

var runLine = regexp.MustCompile(`(?m)^\s+(\w+)\s+trace_id=([0-9a-f]{32})`)

// retryFor calls done until it returns true or d is up; the caller then
// reports what the last call saw.
func retryFor(d time.Duration, done func() bool) {
	for deadline := time.Now().Add(d); !done() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}

// waitScrape scrapes url until ok says the samples are complete.
func waitScrape(t *testing.T, url string, ok func(testkit.Exposition) bool) testkit.Exposition {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		e := testkit.Scrape(t, url)
		if ok(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had the expected samples; last scrape:\n%s", url, e)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The quickstart as a user runs it: the distribution on its embedded
// default config, the five example runs, then `curl localhost:8889/metrics`
// shows each evaluator's passes and failures per agent and model, and the
// score histogram.
func TestQuickstartMetricsScrape(t *testing.T) {
	d := startDefaultDistribution(t)
	runs := runQuickstartAgent(t, d.grpc)

	url := "http://" + d.prom + "/metrics"
	ss := waitScrape(t, url, func(ss testkit.Exposition) bool {
		return ss.Total("gen_ai_evaluation_results_total", nil) >= 20 &&
			ss.Total("gen_ai_evaluation_score_count", nil) >= 20
	})
	var lines []string
	for _, s := range ss.Samples {
		if strings.HasPrefix(s.Name, "gen_ai_evaluation_") {
			lines = append(lines, s.Line)
		}
	}
	sort.Strings(lines)
	t.Logf("scraped from %s:\n%s", url, strings.Join(lines, "\n"))

	base := map[string]string{
		"service_name": "travel-agent-demo", "service_version": "1.0.0",
		"gen_ai_agent_name": "travel_agent", "gen_ai_request_model": "gpt-4o",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// The quickstart's table: one run fails each of tool_error,
	// tool_efficiency and tool_call_validity; two fail tool_trajectory.
	for _, c := range []struct {
		name       string
		pass, fail float64
	}{
		{"tool_trajectory", 3, 2},
		{"tool_error", 4, 1},
		{"tool_efficiency", 4, 1},
		{"tool_call_validity", 4, 1},
	} {
		if got := ss.Total("gen_ai_evaluation_results_total", with("gen_ai_evaluation_name", c.name, "gen_ai_evaluation_score_label", "pass")); got != c.pass {
			t.Errorf("%s passes = %v, want %v", c.name, got, c.pass)
		}
		if got := ss.Total("gen_ai_evaluation_results_total", with("gen_ai_evaluation_name", c.name, "gen_ai_evaluation_score_label", "fail")); got != c.fail {
			t.Errorf("%s failures = %v, want %v", c.name, got, c.fail)
		}
		if got := ss.Total("gen_ai_evaluation_score_count", with("gen_ai_evaluation_name", c.name)); got != 5 {
			t.Errorf("%s score count = %v, want 5", c.name, got)
		}
		if got := ss.Total("gen_ai_evaluation_score_bucket", with("gen_ai_evaluation_name", c.name, "le", "+Inf")); got != 5 {
			t.Errorf("%s +Inf bucket = %v, want 5", c.name, got)
		}
	}
	// loop: tool_efficiency 0.6, the other four runs 1.
	if got := ss.Total("gen_ai_evaluation_score_sum", with("gen_ai_evaluation_name", "tool_efficiency")); got < 4.59 || got > 4.61 {
		t.Errorf("tool_efficiency score sum = %v, want 4.6", got)
	}
	if got := ss.Total("gen_ai_evaluation_score_bucket", with("gen_ai_evaluation_name", "tool_efficiency", "le", "0.6")); got != 1 {
		t.Errorf("tool_efficiency le=0.6 bucket = %v, want 1", got)
	}

	// Scraped as OpenMetrics (what a Prometheus server asks for), the
	// bucket holding the loop run's 0.6 carries that run's trace id.
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var exemplar string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "gen_ai_evaluation_score_bucket{") && strings.Contains(line, `gen_ai_evaluation_name="tool_efficiency"`) &&
			strings.Contains(line, `le="0.6"}`) {
			exemplar = line
		}
	}
	t.Logf("OpenMetrics: %s", exemplar)
	if !strings.Contains(exemplar, `trace_id="`+runs["loop"]+`"`) {
		t.Errorf("the tool_efficiency le=0.6 bucket has no exemplar of the loop run (%s): %q", runs["loop"], exemplar)
	}
}

// Every metric the Grafana dashboard reads is one the distribution emits:
// the distribution runs on its default config with an LLM judge added, the
// quickstart's five runs go through it, and both its endpoints are scraped
// (the evalmetrics connector's on the prometheus exporter, its own
// telemetry). A metric that has no data point in this run (a counter of
// failures that did not happen) must be declared by one of the
// distribution's components (metadata.yaml), under the name the scrape
// shows for its declared neighbours.
func TestDashboardMetricsAreEmitted(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: `{"score": 0.4, "reason": "not very helpful"}`}
	})
	// A second judge is down, so that the error results (error_type) and
	// the judge's error outcome are in the scrape for the label check.
	d := startDefaultDistribution(t,
		"yaml:processors::eval::judges: {default: {endpoint: "+srv.Endpoint()+", model: judge-model}, "+
			"down: {endpoint: "+testkit.DownURL(t)+"/v1, model: judge-model, retry: {max_attempts: 1}}}",
		"yaml:processors::eval::evaluators: [{type: tool_error}, {type: tool_trajectory}, {type: llm_judge, name: helpful, judge: default, criteria: 'Is the answer helpful?'}, "+
			"{type: llm_judge, name: helpful_down, judge: down, criteria: 'Is the answer helpful?'}]",
	)
	runs := runQuickstartAgent(t, d.grpc)
	waitScrape(t, "http://"+d.prom+"/metrics", func(ss testkit.Exposition) bool {
		return ss.Total("gen_ai_evaluation_results_total", map[string]string{"gen_ai_evaluation_name": "helpful"}) >= 5 &&
			ss.Total("gen_ai_evaluation_results_total", map[string]string{"gen_ai_evaluation_name": "helpful_down"}) >= 5
	})
	// Human labels of tool_trajectory (§25), so the judge-versus-human row
	// reads pairs the connector joined: a reviewer agrees on the clean and
	// the wrong_order runs and disagrees on the loop run.
	sendHumanLabels(t, d.grpc, map[string]string{runs["clean"]: "pass", runs["wrong_order"]: "fail", runs["loop"]: "pass"})
	waitScrape(t, "http://"+d.prom+"/metrics", func(ss testkit.Exposition) bool {
		return ss.Total("eval_agreement_pairs_total", map[string]string{"gen_ai_evaluation_name": "tool_trajectory"}) >= 3
	})
	// Declared metrics, with their declared label names.
	declared := map[string]bool{}
	declaredLabels := map[string]map[string]bool{}
	for _, dir := range []string{"processor/evalprocessor", "connector/evalmetricsconnector", "exporter/webhookexporter"} {
		md, err := telemetrydoc.Load(filepath.Join("..", "..", dir, "metadata.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for key, m := range md.Telemetry.Metrics {
			name := "otelcol_" + key
			if m.Histogram != nil {
				// The scrape names a histogram's buckets so: check it on
				// one that has data.
				name += "_bucket"
			}
			declared[name] = true
			declaredLabels[name] = map[string]bool{}
			for _, a := range m.Attributes {
				declaredLabels[name][md.Attributes[a].Name(a)] = true
			}
		}
	}
	metrics, err := dashboard.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(metrics))

	// A series appears once its component first records it (the
	// exporters' after the released spans reach them, which can be after
	// the connector's results): the endpoints are scraped until every
	// metric the dashboard reads is there or declared, for up to 30 s.
	var scraped map[string]bool
	var labelNames map[string]map[string]bool
	var histograms []testkit.Histogram
	retryFor(30*time.Second, func() bool {
		scraped = map[string]bool{}
		labelNames = map[string]map[string]bool{}
		histograms = nil
		for _, u := range []string{d.prom, d.telemetry} {
			e := testkit.Scrape(t, "http://"+u+"/metrics")
			for _, s := range e.Samples {
				scraped[s.Name] = true
			}
			maps.Copy(labelNames, e.LabelNames())
			histograms = append(histograms, e.Histograms()...)
		}
		for _, n := range names {
			if !scraped[n] && !declared[n] {
				return false
			}
		}
		return true
	})
	if !scraped["otelcol_processor_eval_traces_held"] || !scraped["otelcol_processor_eval_evaluation_duration_bucket"] {
		t.Fatal("the scrape does not name the processor's metrics as their metadata.yaml keys: the fallback below would be wrong")
	}
	for _, n := range names {
		switch {
		case scraped[n]:
			t.Logf("%-55s scraped   (%s)", n, strings.Join(metrics[n], "; "))
		case declared[n]:
			t.Logf("%-55s declared, no data point in this run (%s)", n, strings.Join(metrics[n], "; "))
		default:
			t.Errorf("the dashboard reads %s (%s), which the distribution does not emit", n, strings.Join(metrics[n], "; "))
		}
	}

	// Every label a query matches on or groups by is a label of the
	// metric it reads, in the scrape (or, for a metric with no data point
	// in this run, in its declaration).
	uses, err := dashboard.LabelUses()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range uses {
		for _, l := range u.Labels {
			found := false
			for _, m := range u.Metrics {
				found = found || labelNames[m][l] || (!scraped[m] && declaredLabels[m][l])
			}
			if !found {
				t.Errorf("panel %q reads label %q of %v, which has no such label (scraped: %v)\n  %s",
					u.Panel, l, u.Metrics, slices.Sorted(maps.Keys(labelNames[u.Metrics[0]])), u.Expr)
			}
		}
	}
	// Every histogram's buckets resolve what it observed (contract §18).
	for _, h := range histograms {
		p90 := h.Quantile(0.9)
		if problem := h.BucketProblem(); problem != "" {
			t.Errorf("%s%v: %s (count %v, sum %v, buckets %v)", h.Name, h.Labels, problem, h.Count, h.Sum, h.Bounds)
		} else if h.Count > 0 {
			t.Logf("%s{%s}: %v observations, mean %.3g, p90 from the buckets %.3g", h.Name, histogramKey(h), h.Count, h.Sum/h.Count, p90)
		}
	}
}

// histogramKey names a histogram series by the labels that tell it apart
// in this test (judge, evaluator, gen_ai_evaluation_name).
func histogramKey(h testkit.Histogram) string {
	var kv []string
	for _, l := range []string{"judge", "evaluator", "gen_ai_evaluation_name"} {
		if v, ok := h.Labels[l]; ok {
			kv = append(kv, l+"="+v)
		}
	}
	return strings.Join(kv, ",")
}

// examples/metrics-otlp.yaml over examples/collector.yaml sends the
// evaluation metrics, cumulative, to an OTLP/HTTP metrics endpoint.
func TestExampleMetricsOTLP(t *testing.T) {
	backend := testkit.NewSink(t)
	grpc := freeAddr(t)
	for k, v := range map[string]string{
		"BACKEND_ENDPOINT":      backend.URL,
		"METRICS_ENDPOINT":      backend.URL + "/api/v1/otlp/v1/metrics",
		"OTLP_GRPC_ENDPOINT":    grpc,
		"OTLP_HTTP_ENDPOINT":    freeAddr(t),
		"HEALTH_CHECK_ENDPOINT": freeAddr(t),
		"PROMETHEUS_ENDPOINT":   freeAddr(t),
	} {
		t.Setenv(k, v)
	}
	set := settings()
	set.ConfigProviderSettings.ResolverSettings.URIs = []string{
		"file:" + filepath.Join("..", "..", "examples", "collector.yaml"),
		"file:" + filepath.Join("..", "..", "examples", "metrics-otlp.yaml"),
		"yaml:connectors::evalmetrics::flush_interval: 100ms",
		"yaml:processors::eval::wait: 500ms",
		"yaml:service::telemetry::logs::level: warn",
		"yaml:service::telemetry::metrics::level: none",
	}
	testkit.RunCollector(t, set)
	runQuickstartAgent(t, grpc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, ok := backend.LastMetric("gen_ai.evaluation.results")
		var n int64
		if ok {
			for i := 0; i < m.Sum().DataPoints().Len(); i++ {
				n += m.Sum().DataPoints().At(i).IntValue()
			}
		}
		h, hok := backend.LastMetric("gen_ai.evaluation.score")
		// collector.yaml's booking_flow runs only on travel_agent runs
		// that match its `when`: 4 evaluators x 5 runs.
		if n >= 20 && hok {
			if m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative || h.Unit() != "1" || m.Unit() != "{result}" {
				t.Errorf("results: %v %s; score unit %s", m.Sum().AggregationTemporality(), m.Unit(), h.Unit())
			}
			t.Logf("OTLP backend got gen_ai.evaluation.results = %d over %d series, gen_ai.evaluation.score with %d series", n, m.Sum().DataPoints().Len(), h.Histogram().DataPoints().Len())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OTLP metrics backend got %d results", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sendHumanLabels sends one human gen_ai.evaluation.result record of
// tool_trajectory per trace (no span id: the trace's agent case, §25) over
// OTLP gRPC, as an annotation tool would.
func sendHumanLabels(t *testing.T, addr string, labels map[string]string) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for traceHex, label := range labels {
		var tid pcommon.TraceID
		if _, err := hex.Decode(tid[:], []byte(traceHex)); err != nil {
			t.Fatalf("trace id %q: %v", traceHex, err)
		}
		r := sl.LogRecords().AppendEmpty()
		r.SetEventName("gen_ai.evaluation.result")
		r.SetTraceID(tid)
		r.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		r.Attributes().PutStr("gen_ai.evaluation.name", "tool_trajectory")
		r.Attributes().PutStr("gen_ai.evaluation.evaluator.type", "human")
		r.Attributes().PutStr("gen_ai.evaluation.score.label", label)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld)); err != nil {
		t.Fatalf("sending human labels: %v", err)
	}
}
