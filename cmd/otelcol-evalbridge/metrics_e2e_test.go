package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/evalbridge/evalbridge/deploy/grafana/dashboard"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/otlphttpbody"
	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
	line   string
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([^ ]+)`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads url's text exposition.
func scrape(t *testing.T, url string) []sample {
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
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
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
		s := sample{name: m[1], labels: map[string]string{}, value: v, line: line}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out
}

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
	col, err := otelcol.NewCollector(set)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- col.Run(context.Background()) }()
	t.Cleanup(func() {
		col.Shutdown()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("collector run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("collector did not shut down")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for col.GetState() != otelcol.StateRunning {
		select {
		case err := <-done:
			t.Fatalf("collector stopped while starting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not running after 30s (state %v)", col.GetState())
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// waitScrape scrapes url until ok says the samples are complete.
func waitScrape(t *testing.T, url string, ok func([]sample) bool) []sample {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := scrape(t, url)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			var lines []string
			for _, x := range s {
				lines = append(lines, x.line)
			}
			t.Fatalf("%s never had the expected samples; last scrape:\n%s", url, strings.Join(lines, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func total(ss []sample, name string, match map[string]string) float64 {
	v := 0.0
	for _, s := range ss {
		if s.name != name {
			continue
		}
		ok := true
		for k, want := range match {
			if s.labels[k] != want {
				ok = false
			}
		}
		if ok {
			v += s.value
		}
	}
	return v
}

// The quickstart as a user runs it: the distribution on its embedded
// default config, the five example runs, then `curl localhost:8889/metrics`
// shows each evaluator's passes and failures per agent and model, and the
// score histogram.
func TestQuickstartMetricsScrape(t *testing.T) {
	d := startDefaultDistribution(t)
	runs := runQuickstartAgent(t, d.grpc)

	url := "http://" + d.prom + "/metrics"
	ss := waitScrape(t, url, func(ss []sample) bool {
		return total(ss, "gen_ai_evaluation_results_total", nil) >= 20 &&
			total(ss, "gen_ai_evaluation_score_count", nil) >= 20
	})
	var lines []string
	for _, s := range ss {
		if strings.HasPrefix(s.name, "gen_ai_evaluation_") {
			lines = append(lines, s.line)
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
		if got := total(ss, "gen_ai_evaluation_results_total", with("gen_ai_evaluation_name", c.name, "gen_ai_evaluation_score_label", "pass")); got != c.pass {
			t.Errorf("%s passes = %v, want %v", c.name, got, c.pass)
		}
		if got := total(ss, "gen_ai_evaluation_results_total", with("gen_ai_evaluation_name", c.name, "gen_ai_evaluation_score_label", "fail")); got != c.fail {
			t.Errorf("%s failures = %v, want %v", c.name, got, c.fail)
		}
		if got := total(ss, "gen_ai_evaluation_score_count", with("gen_ai_evaluation_name", c.name)); got != 5 {
			t.Errorf("%s score count = %v, want 5", c.name, got)
		}
		if got := total(ss, "gen_ai_evaluation_score_bucket", with("gen_ai_evaluation_name", c.name, "le", "+Inf")); got != 5 {
			t.Errorf("%s +Inf bucket = %v, want 5", c.name, got)
		}
	}
	// loop: tool_efficiency 0.6, the other four runs 1.
	if got := total(ss, "gen_ai_evaluation_score_sum", with("gen_ai_evaluation_name", "tool_efficiency")); got < 4.59 || got > 4.61 {
		t.Errorf("tool_efficiency score sum = %v, want 4.6", got)
	}
	if got := total(ss, "gen_ai_evaluation_score_bucket", with("gen_ai_evaluation_name", "tool_efficiency", "le", "0.6")); got != 1 {
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
	d := startDefaultDistribution(t,
		"yaml:processors::eval::judges: {default: {endpoint: "+srv.Endpoint()+", model: judge-model}}",
		"yaml:processors::eval::evaluators: [{type: tool_error}, {type: tool_trajectory}, {type: llm_judge, name: helpful, judge: default, criteria: 'Is the answer helpful?'}]",
	)
	runQuickstartAgent(t, d.grpc)
	waitScrape(t, "http://"+d.prom+"/metrics", func(ss []sample) bool {
		return total(ss, "gen_ai_evaluation_results_total", map[string]string{"gen_ai_evaluation_name": "helpful"}) >= 5
	})
	scraped := map[string]bool{}
	for _, u := range []string{d.prom, d.telemetry} {
		for _, s := range scrape(t, "http://"+u+"/metrics") {
			scraped[s.name] = true
		}
	}
	declared := map[string]bool{}
	for _, dir := range []string{"processor/evalprocessor", "connector/evalmetricsconnector", "exporter/webhookexporter"} {
		md, err := telemetrydoc.Load(filepath.Join("..", "..", dir, "metadata.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for key, m := range md.Telemetry.Metrics {
			name := "otelcol_" + key
			if m.Histogram != nil {
				declared[name+"_bucket"] = true
				// The scrape names a histogram's buckets so: check it on
				// one that has data.
				continue
			}
			declared[name] = true
		}
	}
	if !scraped["otelcol_processor_eval_traces_held"] || !scraped["otelcol_processor_eval_evaluation_duration_bucket"] {
		t.Fatal("the scrape does not name the processor's metrics as their metadata.yaml keys: the fallback below would be wrong")
	}

	metrics, err := dashboard.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range metrics {
		names = append(names, n)
	}
	sort.Strings(names)
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
}

// otlpMetricsBackend keeps the latest of each OTLP metric it receives, by
// name.
type otlpMetricsBackend struct {
	mu   sync.Mutex
	last map[string]pmetric.Metric
}

func (b *otlpMetricsBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := otlphttpbody.Read(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path != "/api/v1/otlp/v1/metrics" {
		w.WriteHeader(http.StatusOK) // traces and logs: accepted, not kept
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	rms := req.Metrics().ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := pmetric.NewMetric()
				ms.At(k).CopyTo(m)
				b.last[m.Name()] = m
			}
		}
	}
	b.mu.Unlock()
	resp, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// examples/metrics-otlp.yaml over examples/collector.yaml sends the
// evaluation metrics, cumulative, to an OTLP/HTTP metrics endpoint.
func TestExampleMetricsOTLP(t *testing.T) {
	backend := &otlpMetricsBackend{last: map[string]pmetric.Metric{}}
	srv := httptest.NewServer(backend)
	defer srv.Close()
	grpc := freeAddr(t)
	for k, v := range map[string]string{
		"BACKEND_ENDPOINT":      srv.URL,
		"METRICS_ENDPOINT":      srv.URL + "/api/v1/otlp/v1/metrics",
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
	col, err := otelcol.NewCollector(set)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- col.Run(context.Background()) }()
	defer func() {
		col.Shutdown()
		if err := <-done; err != nil {
			t.Errorf("collector run: %v", err)
		}
	}()
	for col.GetState() != otelcol.StateRunning {
		select {
		case err := <-done:
			t.Fatalf("collector stopped while starting: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	runQuickstartAgent(t, grpc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		backend.mu.Lock()
		m, ok := backend.last["gen_ai.evaluation.results"]
		var n int64
		if ok {
			for i := 0; i < m.Sum().DataPoints().Len(); i++ {
				n += m.Sum().DataPoints().At(i).IntValue()
			}
		}
		h, hok := backend.last["gen_ai.evaluation.score"]
		backend.mu.Unlock()
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
