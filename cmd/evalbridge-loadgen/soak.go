package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/evalbridge/evalbridge/internal/loopbackport"
)

// The soak (docs/reliability.md, "Soak"): the built collector runs the
// example pipeline (memory_limiter, eval with a judge against a local fake,
// sessions, evalmetrics into the prometheus exporter, the webhook exporter
// with a monitor) at a steady rate for a long time; every interval it
// samples what grows when something leaks: RSS, goroutines, open files and
// the sizes of the bounded maps the collector exposes. After the warm-up
// every series must be flat, else the command fails.

type soakOptions struct {
	duration, every, warmup time.Duration
	rate                    float64
	collector               string
	keep                    bool
	out                     io.Writer
}

func soakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := soakOptions{out: stdout}
	fs.DurationVar(&o.duration, "duration", 20*time.Minute, "how long the load runs")
	fs.DurationVar(&o.every, "every", time.Minute, "sampling interval")
	fs.DurationVar(&o.warmup, "warmup", 0, "samples before this are not checked for flatness (default: a quarter of -duration)")
	fs.Float64Var(&o.rate, "rate", 20, "agent runs started per second")
	fs.StringVar(&o.collector, "collector", "", "a prebuilt otelcol-evalbridge binary; default: go build ./cmd/otelcol-evalbridge")
	fs.BoolVar(&o.keep, "keep", false, "keep the generated config and the collector's log")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || o.duration <= 0 || o.every <= 0 || o.rate <= 0 {
		fmt.Fprintln(stderr, "soak: -duration, -every and -rate must be positive; no arguments")
		return errUsage
	}
	if o.warmup == 0 {
		o.warmup = o.duration / 4
	}
	if o.duration-o.warmup < 3*o.every {
		fmt.Fprintf(stderr, "soak: at least 3 samples after the warm-up are needed (-duration %s, -warmup %s, -every %s)\n", o.duration, o.warmup, o.every)
		return errUsage
	}
	return runSoak(ctx, o)
}

// soakSeries are the quantities sampled, with how much each may grow from
// the first third of the checked samples to the last third before it
// counts as growth: a fraction of the earlier mean plus an absolute slack
// (noise: GC timing for RSS, idle HTTP connections for goroutines and
// files, traces in flight for the held ones).
var soakSeries = []struct {
	name   string
	metric string // the collector's own metric (a sum over its series); "" for the process figures
	rel    float64
	abs    float64
}{
	// VmRSS includes the pages of the 90 MB binary and of files as the
	// kernel maps them in (RssFile grew 30 -> 54 MiB in a 20-minute soak
	// while the Go heap stayed flat): shown, checked loosely. A leak is in
	// the anonymous part: 2 MiB a minute over a 20-minute soak (10 minutes
	// between the thirds' middles) is 20 MiB, past this allowance below
	// about 240 MiB.
	{name: "rss_mib", rel: 0.25, abs: 48},
	{name: "rss_anon_mib", rel: 0.05, abs: 8},
	{name: "goroutines", rel: 0.1, abs: 25},
	{name: "open_files", rel: 0.1, abs: 10},
	{name: "traces_held", metric: "otelcol_processor_eval_traces_held", rel: 0.25, abs: 50},
	{name: "release_backlog", metric: "otelcol_processor_eval_release_backlog", rel: 0.25, abs: 500},
	{name: "judge_tasks_pending", metric: "otelcol_processor_eval_judge_tasks_pending", rel: 0.25, abs: 20},
	{name: "sessions_held", metric: "otelcol_processor_eval_sessions_held", rel: 0.1, abs: 10},
	{name: "monitor_groups", metric: "otelcol_exporter_webhook_monitor_groups", rel: 0.1, abs: 2},
	{name: "exporter_queue", metric: "otelcol_exporter_queue_size", rel: 0.25, abs: 50},
	{name: "evalmetrics_series", rel: 0.1, abs: 10}, // lines on the prometheus exporter's endpoint
}

type soakSample struct {
	at     time.Duration
	values []float64 // by soakSeries; -1 when it could not be read
}

func runSoak(ctx context.Context, o soakOptions) error {
	dir, bin, cleanup, err := prepareRun(ctx, "evalbridge-soak-", o.keep, o.collector, o.out)
	if err != nil {
		return err
	}
	defer cleanup()
	s, err := newSink("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer s.close()
	judge, err := newSteadyJudge(20 * time.Millisecond)
	if err != nil {
		return err
	}
	defer judge.close()
	hooks, err := newHitCounter()
	if err != nil {
		return err
	}
	defer hooks.close()
	p, err := newPorts()
	if err != nil {
		return err
	}
	promPort, err := loopbackport.Claim()
	if err != nil {
		return err
	}
	col, err := startCollector(bin, dir, "soak", soakConfig(p, promPort, s.addr, judge.addr, hooks.addr), p)
	if err != nil {
		return err
	}
	defer func() {
		if !col.exited() {
			col.kill()
		}
	}()
	fmt.Fprintf(o.out, "soak: %.0f agent runs/s for %s, a sample every %s, checked after %s; collector pid %d\n",
		o.rate, o.duration, o.every, o.warmup, col.cmd.Process.Pid)

	// 200 conversations at 20 runs/s: a turn every 10 s each, so a session
	// idles (5 s) after each turn and is scored. The store keeps a scored
	// session for its next turns until max_sessions pushes it out, with its
	// last max_turns turns: it is full after max_turns x 10 s = 100 s, well
	// within the warm-up. (The first soaks kept 100 turns, or 10 turns of
	// 2,000 conversations: the store filled for 17 minutes, anonymous RSS
	// rising with it, and levelled after.)
	l := newLoad(loadConfig{endpoint: col.grpc, rate: o.rate, duration: o.duration, plainShare: 0.2, failShare: 0.2,
		parts: 3, gap: 100 * time.Millisecond, retryFor: time.Minute, conns: 4, seed: 11, conversations: 200, scale: 1})
	loadDone := make(chan error, 1)
	go func() { loadDone <- l.run(ctx) }()

	promURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", promPort)
	var samples []soakSample
	start := time.Now()
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	row := func(first string, cells []string) {
		fmt.Fprintf(o.out, "%6s", first)
		for i, c := range cells {
			fmt.Fprintf(o.out, " %*s", len(soakSeries[i].name), c)
		}
		fmt.Fprintln(o.out)
	}
	names := make([]string, len(soakSeries))
	for i, sr := range soakSeries {
		names[i] = sr.name
	}
	row("t", names)
	for running := true; running; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-col.done:
			return fmt.Errorf("the collector exited during the soak (%v); log %s:\n%s", col.exitErr, col.logPath, tail(col.logPath, 30))
		case <-tick.C:
		}
		sm := sampleSoak(col, promURL, time.Since(start))
		samples = append(samples, sm)
		cells := make([]string, len(sm.values))
		for i, v := range sm.values {
			cells[i] = fmt.Sprintf("%.0f", v)
		}
		row(sm.at.Round(time.Second).String(), cells)
		running = time.Since(start) < o.duration
	}
	if err := <-loadDone; err != nil {
		return err
	}
	col.saveMetrics(filepath.Join(dir, "soak.metrics.txt"))
	_, received, _, _, _ := s.snapshot()
	fmt.Fprintf(o.out, "%d spans acknowledged, the backend received %d; judge calls %d, webhook posts %d\n",
		l.stats.spansAcked.Load(), received, judge.calls.Load(), hooks.hits.Load())
	if !col.stop(20 * time.Second) {
		fmt.Fprintln(o.out, "the collector did not exit within 20 s of SIGTERM: killed")
	}

	var problems []string
	if n := countLines(col.logPath, "panic"); n > 0 {
		problems = append(problems, fmt.Sprintf("%d log lines mention a panic (log %s)", n, col.logPath))
	}
	if judge.calls.Load() == 0 {
		problems = append(problems, "the judge was never called: the soak did not run the judge path")
	}
	problems = append(problems, soakGrowth(samples, o.warmup)...)
	if len(problems) > 0 {
		return fmt.Errorf("soak failed:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Fprintln(o.out, "soak: every series flat after the warm-up")
	return nil
}

// soakGrowth checks every series after warmup: the mean of the last third
// of the samples may exceed the first third's by the series' allowance,
// no more. A series that could not be read after the warm-up is a problem
// too (no false green).
func soakGrowth(samples []soakSample, warmup time.Duration) []string {
	var checked []soakSample
	for _, sm := range samples {
		if sm.at >= warmup {
			checked = append(checked, sm)
		}
	}
	if len(checked) < 3 {
		return []string{fmt.Sprintf("only %d samples after the warm-up; at least 3 are needed", len(checked))}
	}
	third := len(checked) / 3
	var problems []string
	for i, sr := range soakSeries {
		var first, last float64
		for k := 0; k < third; k++ {
			a, b := checked[k].values[i], checked[len(checked)-third+k].values[i]
			if a < 0 || b < 0 {
				problems = append(problems, fmt.Sprintf("%s could not be read", sr.name))
				first, last = 0, 0
				break
			}
			first += a
			last += b
		}
		first, last = first/float64(third), last/float64(third)
		if allowed := first*(1+sr.rel) + sr.abs; last > allowed {
			problems = append(problems, fmt.Sprintf("%s grew from %.0f to %.0f after the warm-up (allowed up to %.0f)", sr.name, first, last, allowed))
		}
	}
	return problems
}

func sampleSoak(c *collector, promURL string, at time.Duration) soakSample {
	sm := soakSample{at: at, values: make([]float64, len(soakSeries))}
	pid := c.cmd.Process.Pid
	for i, sr := range soakSeries {
		v := -1.0
		switch sr.name {
		case "rss_mib":
			if kib := procStatus(pid, "VmRSS:"); kib > 0 {
				v = float64(kib) / 1024
			}
		case "rss_anon_mib":
			if kib := procStatus(pid, "RssAnon:"); kib > 0 {
				v = float64(kib) / 1024
			}
		case "goroutines":
			if n := c.goroutines(); n > 0 {
				v = float64(n)
			}
		case "open_files":
			if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				v = float64(len(fds))
			}
		case "evalmetrics_series":
			v = seriesLines(promURL, "gen_ai_evaluation")
		default:
			if v = c.metric(sr.metric); v < 0 {
				v = 0 // not recorded yet: nothing in it
			}
		}
		sm.values[i] = v
	}
	return sm
}

// procStatus is a "Name: N kB" field of /proc/pid/status, 0 when unknown.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			var n int64
			_, _ = fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &n)
			return n
		}
	}
	return 0
}

// seriesLines counts the series (sample lines) whose name starts with
// prefix on a Prometheus endpoint; -1 when it cannot be read.
func seriesLines(url, prefix string) float64 {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			n++
		}
	}
	if sc.Err() != nil {
		return -1
	}
	return float64(n)
}

// soakConfig is the example pipeline on loopback ports.
func soakConfig(p ports, promPort int, sinkAddr, judgeAddr, hookAddr string) string {
	return fmt.Sprintf(`# generated by evalbridge-loadgen soak
extensions:
  health_check: {endpoint: 127.0.0.1:%[1]d}
  pprof: {endpoint: 127.0.0.1:%[2]d}
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 127.0.0.1:%[3]d, max_recv_msg_size_mib: 128}
processors:
  memory_limiter: {check_interval: 1s, limit_percentage: 80, spike_limit_percentage: 20}
  eval:
    wait: 1s
    timeout: 10s
    sessions: {idle: 5s, max_turns: 10}
    judges:
      default:
        endpoint: http://%[4]s/v1
        model: judge
        api_key: sk-soak-not-a-key
        budget: {tokens_per_hour: 1000000000}
    evaluators:
      - type: tool_error
      - type: tool_trajectory
        mode: in_order
      - type: task_completion
        judge: default
        sample_rate: 0.2
      - type: tool_error
        name: session_errors
        case: session
  batch: {}
connectors:
  evalmetrics: {max_series: 10000}
exporters:
  otlp_http:
    endpoint: http://%[5]s
  webhook:
    endpoint: http://%[6]s/alerts
    monitors:
      - name: tool_errors
        evaluator: tool_error
        group_by: [gen_ai.agent.name]
        window: 30s
        min_cases: 5
        pass_rate_below: 0.95
        renotify: 1m
  prometheus: {endpoint: 127.0.0.1:%[7]d}
service:
  extensions: [health_check, pprof]
  telemetry:
    logs: {level: warn}
    metrics:
      level: normal
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %[8]d}}}
  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter, eval, batch], exporters: [otlp_http, webhook]}
    logs: {receivers: [otlp], processors: [memory_limiter, eval, batch], exporters: [evalmetrics]}
    metrics: {receivers: [evalmetrics], exporters: [prometheus]}
`, p.health, p.pprof, p.grpc, judgeAddr, sinkAddr, hookAddr, promPort, p.metrics)
}

// steadyJudge is a well-behaved OpenAI-compatible judge: a task_completion
// verdict after delay.
type steadyJudge struct {
	srv   *http.Server
	addr  string
	calls atomic.Int64
}

func newSteadyJudge(delay time.Duration) (*steadyJudge, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	j := &steadyJudge{addr: ln.Addr().String()}
	j.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		j.calls.Add(1)
		time.Sleep(delay)
		writeChat(w, `{"accomplished": true, "complete": true, "grounded": true, "failed_or_errored": false, "reason": "booked"}`)
	})}
	go func() {
		if err := j.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "soak judge:", err)
		}
	}()
	return j, nil
}

func (j *steadyJudge) close() { _ = j.srv.Close() }
