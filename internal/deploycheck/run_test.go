//go:build deploycheck

package deploycheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"sigs.k8s.io/yaml"

	"github.com/evalbridge/evalbridge/deploy/grafana/dashboard"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// A deployment as it runs: the configs of its collectors, the first one
// receiving the agents' OTLP (a tier 1 in front of a tier 2), the last one
// scoring and scraped.
type deployment struct {
	name    string
	configs []string
}

// renderedDeployments are the configs what ships runs: every chart
// example and the defaults (the image's config when the chart gives none),
// the Operator resources, the upstream chart's values, the image's and the
// packages' configs. A tier 2 gets the chart's tier 1 in front.
func renderedDeployments(t *testing.T, dir string) []deployment {
	t.Helper()
	image, packages := "../../deploy/image/config.yaml", "../../deploy/packaging/config.yaml"
	tier1 := filepath.Join(dir, "tier1-kafka.config.yaml")
	var out []deployment
	seen := map[[32]byte]string{}
	add := func(name string, configs ...string) {
		raw, err := os.ReadFile(configs[len(configs)-1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if first, ok := seen[sum]; ok {
			t.Logf("%s runs the same config as %s", name, first)
			return
		}
		seen[sum] = name
		out = append(out, deployment{name: name, configs: configs})
	}
	rendered, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range rendered {
		if strings.HasSuffix(f, ".config.yaml") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		cfg := filepath.Join(dir, name+".config.yaml")
		switch _, err := os.Stat(cfg); {
		case err != nil:
			add("chart "+name+" (the image's config)", image)
		case strings.Contains(name, "tier2"):
			add("chart "+name, tier1, cfg)
		default:
			add("chart "+name, cfg)
		}
	}
	ops, _ := filepath.Glob(filepath.Join(dir, "operator-*.config.yaml"))
	for _, f := range ops {
		name := strings.TrimSuffix(filepath.Base(f), ".config.yaml")
		if strings.Contains(name, "tier2") {
			add(name, tier1, f)
		} else {
			add(name, f)
		}
	}
	add("upstream chart", filepath.Join(dir, "upstream-chart.config.yaml"))
	add("image", image)
	add("packages", packages)
	return out
}

// TestRenderedDeploymentsAnswerTheDashboard runs the distribution's binary
// ($EVALBRIDGE_BINARY) on every rendered deployment's config, with a fake
// OTLP backend, a fake judge and an in-process Kafka, sends the example
// agent's five runs and a human label for each, scrapes both endpoints
// every second into a Prometheus TSDB, and evaluates every dashboard query
// on what was scraped. It prints each query's series count per deployment;
// every query must be answered by some deployment, and every deployment
// that runs eval must answer the evaluation-quality and processor rows.
func TestRenderedDeploymentsAnswerTheDashboard(t *testing.T) {
	dir := renderedDir(t)
	bin := os.Getenv("EVALBRIDGE_BINARY")
	if bin == "" {
		t.Skip("EVALBRIDGE_BINARY is not set (.ci/deploy-check.sh builds the distribution and sets it)")
	}
	agent := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", agent, "../../examples/agent").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/agent: %v\n%s", err, out)
	}
	judge := judgetest.New(t, judgetest.Counting(`{"score": 0.8, "reason": "fine", "accomplished": true, "complete": true, "grounded": true, "failed_or_errored": false, "claims": []}`))
	backend := testkit.NewSink(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(hook.Close)

	qs, err := dashboard.ParsedQueries()
	if err != nil {
		t.Fatal(err)
	}
	deps := renderedDeployments(t, dir)
	counts := map[string][]int{} // deployment -> series per query
	var names []string
	for _, d := range deps {
		t.Run(d.name, func(t *testing.T) {
			kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "evalbridge_spans", "evalbridge_logs"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(kafka.Close) // after the collectors stop (cleanups run last first)
			env := append(os.Environ(), "OPENAI_API_KEY=unused", "EVALBRIDGE_JUDGE_ENDPOINT="+judge.Endpoint(),
				"EVALBRIDGE_COLLECTOR_ID=evalbridge-0", "POD_NAME=evalbridge-0", "MY_POD_IP=127.0.0.1")
			var front, scored *collector
			for i, cfg := range d.configs {
				c := startCollector(t, bin, cfg, env, overrides{backend: backend.URL, webhook: hook.URL, kafka: kafka.ListenAddrs()})
				if i == 0 {
					front = c
				}
				scored = c
			}
			if scored.moved.Telemetry == "" {
				t.Fatalf("%s: no telemetry reader (service::telemetry::metrics::readers)", scored.path)
			}
			if scored.moved.Addr("exporters::prometheus::endpoint") == "" {
				// No eval (tier 1): its own telemetry is all it exposes.
				e := testkit.Scrape(t, "http://"+scored.moved.Telemetry+"/metrics")
				t.Logf("%s runs no eval: its telemetry answers with %d samples", d.name, len(e.Samples))
				if len(e.Samples) == 0 {
					t.Errorf("%s: the telemetry endpoint answers no sample", d.name)
				}
				return
			}

			db := teststorage.New(t)
			defer db.Close()
			scrapes := &scraper{db: db, targets: map[string]string{
				"evaluations": scored.moved.Addr("exporters::prometheus::endpoint"), "telemetry": scored.moved.Telemetry}}
			scrapes.once(t)

			// Waves, as traffic goes on: a collector's own histograms and
			// counters appear at their first observation, so only later
			// waves show in a rate over the window; four waves of five runs
			// also give gateway-judge's 20 %-sampled judge calls (all 20
			// runs sampled out: 0.8^20, about 1 %).
			// A sampled judge may be called in fewer than two of those
			// waves (about one run in ten): its counters' first
			// observation gives no rate. Waves go on, up to 12, until the
			// judge, if the deployment has one, answered in two of them.
			raw, err := os.ReadFile(scored.path)
			if err != nil {
				t.Fatal(err)
			}
			judged := bytes.Contains(raw, []byte("judges:"))
			runs, judgedWaves := 0, 0
			for wave := 0; wave < 4 || (judged && judgedWaves < 2 && wave < 12); wave++ {
				calls := len(judge.Requests())
				ids := sendAgentRuns(t, agent, front.moved.Addr("receivers::otlp::protocols::grpc::endpoint"))
				sendHumanLabels(t, front.moved.Addr("receivers::otlp::protocols::http::endpoint"), ids)
				runs += len(ids)
				deadline := time.Now().Add(90 * time.Second)
				for !scrapes.once(t).done(runs) && time.Now().Before(deadline) {
					time.Sleep(time.Second)
				}
				if len(judge.Requests()) > calls {
					judgedWaves++
				}
			}
			for range 3 {
				time.Sleep(time.Second)
				scrapes.once(t)
			}

			engine := promqltest.NewTestEngine(t, false, 0, 50_000_000)
			window := fmt.Sprintf("%ds", int(time.Since(scrapes.first).Seconds())+30)
			vars := strings.NewReplacer("$__rate_interval", window, "$__interval", "15s", "$__range", window, "$agent", ".*", "$evaluator", ".*")
			var row []int
			for _, q := range qs {
				n := seriesWithData(t, engine, db, vars.Replace(q.Query.Expr), scrapes.last)
				row = append(row, n)
			}
			counts[d.name] = row
			names = append(names, d.name)
			for i, q := range qs {
				if row[i] == 0 && (q.Panel.Row == "Evaluation quality" || q.Panel.Title == "Held traces and release backlog" || q.Panel.Title == "Scoring latency per trace") {
					t.Errorf("%s: panel %q answers nothing: %s", d.name, q.Panel.Title, q.Query.Expr)
				}
			}
		})
	}

	// The report: every query with its series count per deployment.
	var b strings.Builder
	fmt.Fprintf(&b, "dashboard queries answered, series per deployment (%s):\n", strings.Join(names, " | "))
	for i, q := range qs {
		var cells []string
		best := 0
		for _, n := range names {
			cells = append(cells, fmt.Sprint(counts[n][i]))
			best = max(best, counts[n][i])
		}
		fmt.Fprintf(&b, "  [%s] %s / %s\n      %s\n", strings.Join(cells, " "), q.Panel.Row, q.Panel.Title, oneLine(q.Query.Expr))
		if best == 0 && !t.Failed() {
			if reason, ok := quietInAHealthyRun(q.Query.Expr); ok {
				fmt.Fprintf(&b, "      no data in a healthy run: %s\n", reason)
				continue
			}
			t.Errorf("no rendered deployment answers panel %q: %s", q.Panel.Title, q.Query.Expr)
		}
	}
	t.Log(b.String())
}

// quietInAHealthyRun names the counters that only move when something goes
// wrong (refusals, drops): a healthy run has no data point for them.
func quietInAHealthyRun(expr string) (string, bool) {
	for _, m := range []string{"otelcol_processor_eval_spans_refused", "otelcol_processor_eval_log_records_refused",
		"otelcol_processor_eval_spans_dropped", "otelcol_processor_eval_spans_forwarded_unscored", "otelcol_processor_eval_traces_sampled"} {
		if strings.Contains(expr, m+"[") || strings.Contains(expr, m+"{") {
			return m + " counts refusals, drops, unscored or sampled traces: none here", true
		}
	}
	return "", false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// seriesWithData evaluates expr at ts and counts its series with a finite
// value.
func seriesWithData(t *testing.T, engine *promql.Engine, db storage.Queryable, expr string, ts time.Time) int {
	t.Helper()
	q, err := engine.NewInstantQuery(context.Background(), db, nil, expr, ts)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s: %v", expr, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	n := 0
	for _, s := range vec {
		if !math.IsNaN(s.F) && !math.IsInf(s.F, 0) {
			n++
		}
	}
	return n
}

// scraper scrapes the scored collector's endpoints into db, as a
// Prometheus server would (job and instance labels added).
type scraper struct {
	db          *teststorage.TestStorage
	targets     map[string]string // job -> host:port
	first, last time.Time
	results     float64 // gen_ai_evaluation_results_total, last scrape
	heldZero    bool
}

func (s *scraper) once(t *testing.T) *scraper {
	t.Helper()
	now := time.Now()
	app := s.db.Appender(context.Background())
	for job, addr := range s.targets {
		e := testkit.Scrape(t, "http://"+addr+"/metrics")
		for _, smp := range e.Samples {
			m := map[string]string{"__name__": smp.Name, "job": job, "instance": addr}
			for k, v := range smp.Labels {
				m[k] = v
			}
			if _, err := app.Append(0, labels.FromMap(m), now.UnixMilli(), smp.Value); err != nil {
				t.Fatalf("append %s: %v", smp.Line, err)
			}
		}
		if job == "evaluations" {
			s.results = e.Total("gen_ai_evaluation_results_total", map[string]string{"gen_ai_evaluation_name": "tool_error"})
		} else {
			s.heldZero = e.Total("otelcol_processor_eval_traces_held", nil) == 0
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if s.first.IsZero() {
		s.first = now
	}
	s.last = now
	return s
}

// done: every run scored by tool_error (which each config runs) and
// nothing held any more.
func (s *scraper) done(runs int) bool { return s.results >= float64(runs) && s.heldZero }

// collector is one otelcol-evalbridge process on a rendered config.
type collector struct {
	path  string
	moved testkit.Listeners
}

type overrides struct {
	backend, webhook string
	kafka            []string
}

// startCollector starts bin on the config at path (unchanged), with
// --config=yaml: overrides that move its listeners to free loopback ports,
// its exporters to the fake backend, Kafka to the in-process cluster and
// file_storage to a temporary directory, and flush the evaluation metrics
// every second; it waits for the telemetry endpoint to answer.
func startCollector(t *testing.T, bin, path string, env []string, o overrides) *collector {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := yaml.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	c := &collector{path: path, moved: testkit.MoveListeners(t, conf)}
	args := []string{"--config=" + path}
	for _, ov := range c.moved.Overrides {
		args = append(args, "--config=yaml:"+ov)
	}
	brokers := fmt.Sprintf("[%q]", strings.Join(o.kafka, `","`))
	for _, kind := range []string{"receivers", "exporters", "extensions", "connectors"} {
		comps, _ := conf[kind].(map[string]any)
		for _, id := range mapsKeys(comps) {
			comp, _ := comps[id].(map[string]any)
			typ, _, _ := strings.Cut(id, "/")
			switch {
			case typ == "kafka":
				args = append(args, fmt.Sprintf("--config=yaml:%s::%s::brokers: %s", kind, id, brokers))
			case typ == "file_storage":
				args = append(args, fmt.Sprintf("--config=yaml:%s::%s::directory: %s", kind, id, t.TempDir()))
			case typ == "evalmetrics":
				args = append(args, fmt.Sprintf("--config=yaml:%s::%s::flush_interval: 1s", kind, id))
			case kind == "exporters" && typ == "webhook":
				args = append(args, fmt.Sprintf("--config=yaml:%s::%s::endpoint: %s", kind, id, o.webhook))
			case kind == "exporters" && strings.Contains(fmt.Sprint(comp["endpoint"]), "://"):
				args = append(args, fmt.Sprintf("--config=yaml:%s::%s::endpoint: %s", kind, id, o.backend))
			}
		}
	}
	args = append(args, "--config=yaml:service::telemetry::logs::level: warn")

	var logs testkit.LockedBuffer
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within 30 s of SIGTERM", path)
		}
		if t.Failed() {
			t.Logf("%s %q:\n%s", bin, args, logs.String())
		}
	})
	if c.moved.Telemetry == "" {
		return c
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + c.moved.Telemetry + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited: %v\n%s", path, err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the telemetry endpoint %s never answered\n%s", path, c.moved.Telemetry, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mapsKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var runLine = regexp.MustCompile(`(?m)^\s+(\w+)\s+trace_id=([0-9a-f]{32})`)

// sendAgentRuns runs the example agent against addr and returns its runs'
// trace ids.
func sendAgentRuns(t *testing.T, agent, addr string) []string {
	t.Helper()
	cmd := exec.Command(agent, "-endpoint", addr)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("examples/agent: %v\n%s", err, out)
	}
	var ids []string
	for _, m := range runLine.FindAllStringSubmatch(string(out), -1) {
		ids = append(ids, m[2])
	}
	if len(ids) != 5 {
		t.Fatalf("examples/agent printed %d runs:\n%s", len(ids), out)
	}
	return ids
}

// sendHumanLabels posts a human label (contract §25) of tool_error for each
// trace's agent case, as an annotation tool would: pass for the first
// runs, fail for the last, over OTLP/HTTP.
func sendHumanLabels(t *testing.T, addr string, ids []string) {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "review-tool")
	sl := rl.ScopeLogs().AppendEmpty()
	for i, id := range ids {
		var tid pcommon.TraceID
		if b, err := hex.DecodeString(id); err != nil || len(b) != len(tid) {
			t.Fatalf("trace id %q: %v", id, err)
		} else {
			copy(tid[:], b)
		}
		lr := sl.LogRecords().AppendEmpty()
		lr.SetEventName("gen_ai.evaluation.result")
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		lr.SetTraceID(tid)
		a := lr.Attributes()
		a.PutStr("event.name", "gen_ai.evaluation.result")
		a.PutStr("gen_ai.evaluation.name", "tool_error")
		a.PutStr("gen_ai.evaluation.evaluator.type", "human")
		a.PutStr("gen_ai.evaluation.score.label", map[bool]string{true: "pass", false: "fail"}[i < len(ids)-1])
	}
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/logs", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/logs: %s", resp.Status)
	}
}
