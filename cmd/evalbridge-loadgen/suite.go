package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/evalbridge/evalbridge/internal/textutil"
)

// Evaluator blocks of the suite's collector configs. Every run of kind
// "pass" passes all of them; "fail" runs fail tool_trajectory.
const normalEvaluators = `
      - type: tool_trajectory
        mode: in_order
      - type: tool_error
      - type: tool_efficiency
      - type: tool_call_validity`

// The hostile scenario adds the two evaluators the findings stalled or
// fooled: any_order matching over many calls, and token_usage.
const hostileEvaluators = normalEvaluators + `
      - type: tool_trajectory
        name: trajectory_any
        mode: any_order
      - type: token_usage
        max_total: 100000`

// backendLatency is how long the capture sink takes to answer each export
// request in the suite: a tracing backend across a network, not a loopback
// that answers at once (which would hide a filling sending queue).
const backendLatency = 100 * time.Millisecond

// scenario is one collector config and one load against it.
type scenario struct {
	name  string
	about string
	eval  string // the eval processor's options, without evaluators
	evals string // the evaluators block
	batch bool   // a batch processor after eval
	// processors, when set, is the pipeline's processors list as written
	// (the cpu command's "[batch]" and "[eval, batch]"); batch is then unused.
	processors string
	load       loadConfig
	outage     [2]time.Duration // backend down from [0] to [1] after the start
	sigterm    time.Duration    // >0: SIGTERM the collector this long after the start
	judge      bool             // a faulty judge and an llm_judge evaluator
	// credentials (with judge): the key is also the endpoint's userinfo
	// password, its ?code= query and an X-Api-Key header, and the judge
	// redirects every tenth request to another port, which must get nothing.
	credentials bool
	// flood: GenAI content log records flooding a few traces' LLM spans
	// beside the load (suite_logflood.go); floodBound bounds how long the
	// flooded traces may wait.
	flood      *logFlood
	floodBound time.Duration
	drain      time.Duration // how long to wait for the spans after the load
	allAcked   bool          // every request must be acknowledged in the end (back-pressure, not refusal)
	scoreWait  time.Duration // the processor's wait, to know when the sink can go quiet
	// topology: "" (one pipeline), "two_pipelines" (a second traces
	// pipeline through the same eval, from a receiver that gets nothing,
	// to a second sink that must get nothing), "alert_down" (the webhook
	// exporter beside the backend, its endpoint down).
	topology string
	// maxHostile bounds the longest forwarding delay of a hostile span
	// (0: no bound), a broken promise beyond it.
	maxHostile time.Duration
	extra      *topology // side services, config changes and checks (suite_topologies.go)
}

// suiteOptions are the suite's flags.
type suiteOptions struct {
	short     bool
	strict    bool
	only      string
	collector string // prebuilt binary; "" builds one
	keep      bool   // keep the temporary directory (configs and logs)
	out       io.Writer
}

func scenarios(short bool) []scenario {
	base := loadConfig{rate: 50, duration: 3 * time.Second, plainShare: 0.2, failShare: 0.2, parts: 3,
		gap: 100 * time.Millisecond, retryFor: 60 * time.Second, conns: 4, seed: 1, scale: 1}
	scale := 1.0
	if short {
		scale = 0.2
	}
	with := func(f func(*loadConfig)) loadConfig {
		c := base
		f(&c)
		return c
	}
	const holdEval = "wait: 1s\n    timeout: 5s"
	all := []scenario{
		{
			name: "baseline", about: "50 traces/s, the normal mix, no batch: the reference for the others",
			eval: holdEval, evals: normalEvaluators, load: base, drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "overload", about: "10x the baseline rate (500 traces/s), max_traces 100, no batch processor",
			eval: holdEval + "\n    max_traces: 100", evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.rate = 500; c.seed = 2 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "outage", about: "the backend is down for 10 s from t=1s, 300 traces/s for 5 s",
			eval: holdEval, evals: normalEvaluators,
			load:   with(func(c *loadConfig) { c.rate = 300; c.duration = 5 * time.Second; c.seed = 3 }),
			outage: [2]time.Duration{time.Second, 11 * time.Second},
			drain:  60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "retries", about: "clients resend 30% of acknowledged requests (a lost response), passing runs only",
			eval: holdEval, evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.resend = 0.3; c.failShare = 0; c.seed = 4 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "hostile", about: "every hostile kind once at t=0.5s, under 20 normal traces/s for 4 s",
			eval: holdEval, evals: hostileEvaluators,
			load: with(func(c *loadConfig) {
				c.rate = 20
				c.duration = 4 * time.Second
				c.hostileAt = 500 * time.Millisecond
				c.hostileKinds = hostileKinds
				c.scale = scale
				c.seed = 5
			}),
			drain: 60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "shutdown", about: "SIGTERM at t=3s while 50 traces/s are sent, runs are held (wait 2s) and a 50k-call run is being scored",
			eval: "wait: 2s\n    timeout: 5s", evals: normalEvaluators,
			load: with(func(c *loadConfig) {
				c.duration = 5 * time.Second
				c.retryFor = time.Second
				c.hostileAt = 300 * time.Millisecond
				c.hostileKinds = []string{"many_calls_50k"}
				c.scale = scale
				c.seed = 6
			}),
			sigterm: 3 * time.Second, drain: 30 * time.Second, scoreWait: 2 * time.Second,
		},
		{
			name: "two_pipelines", about: "one eval in two traces pipelines (otlp/a -> eval -> backend a, otlp/b -> eval -> backend b); all load through a: nothing may reach b",
			eval: holdEval, evals: normalEvaluators, topology: "two_pipelines",
			load: with(func(c *loadConfig) { c.seed = 8 }), drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "alert_down", about: "eval -> [backend, webhook]: the alert endpoint never answers and the webhook's queue holds 2; the backend must get every span, once, on time",
			eval: holdEval, evals: normalEvaluators, topology: "alert_down",
			load: with(func(c *loadConfig) { c.failShare = 0.5; c.seed = 9 }), drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "endless_trace", about: "a trace that gets a request every 250 ms for 10 s (wait 1s, max_hold 3s), under 20 normal traces/s",
			eval: holdEval + "\n    max_hold: 3s", evals: normalEvaluators,
			load: with(func(c *loadConfig) {
				c.rate = 20
				c.duration = 4 * time.Second
				c.hostileAt = 200 * time.Millisecond
				c.hostileKinds = []string{"endless_trace"}
				c.seed = 10
			}),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			// its first spans wait at most max_hold (+ a tick and the
			// backend's answer): 3 s, not the 11 s the last request sets
			maxHostile: 5 * time.Second,
		},
		{
			name: "judge", about: "a judge that hangs, 500s and echoes the key (max_concurrency 2), 100 traces/s for 3 s",
			eval: "wait: 500ms\n    timeout: 3s", judge: true,
			load:  with(func(c *loadConfig) { c.rate = 100; c.failShare = 0; c.seed = 7 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: 3 * time.Second,
		},
		{
			name: "log_flood", about: "3 traces whose LLM span gets 16,000 GenAI content log records each (a logs pipeline through the same eval), timeout 200ms, under the baseline load",
			eval: "wait: 1s\n    timeout: 200ms", evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.seed = 14 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			flood: &logFlood{traces: 3, records: 16000}, floodBound: 4 * time.Second,
		},
		{
			name: "credentials", about: "the judge's key also in its endpoint's userinfo and ?code= and an X-Api-Key header; the judge echoes them and redirects to another port (which must get nothing), 50 traces/s for 3 s",
			eval: "wait: 500ms\n    timeout: 3s", judge: true, credentials: true,
			load:  with(func(c *loadConfig) { c.failShare = 0; c.seed = 12 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: 3 * time.Second,
		},
	}
	all = append(all, topologyScenarios()...)
	if short {
		// CI: a broken promise shows within these bounds as well.
		for i := range all {
			all[i].drain = min(all[i].drain, 20*time.Second)
			all[i].load.retryFor = min(all[i].load.retryFor, 20*time.Second)
		}
	}
	return all
}

// topologyParts are the extra receivers, exporters and pipelines of a
// scenario's topology, and the main pipeline's exporters.
func topologyParts(sc scenario, otherSink string, otherPort int) (receivers, exporters, pipelines, mainExporters string) {
	mainExporters = "[otlp_http]"
	switch sc.topology {
	case "two_pipelines":
		receivers = fmt.Sprintf(`
  otlp/b:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d`, otherPort)
		exporters = fmt.Sprintf(`
  otlp_http/b:
    endpoint: http://%s`, otherSink)
		pipelines = `
    traces/b:
      receivers: [otlp/b]
      processors: [eval]
      exporters: [otlp_http/b]`
	case "alert_down":
		exporters = fmt.Sprintf(`
  webhook:
    endpoint: http://127.0.0.1:%d/alerts
    timeout: 5s
    max_alerts_per_minute: 0
    sending_queue:
      queue_size: 2
      num_consumers: 1
    retry_on_failure:
      enabled: false`, otherPort)
		mainExporters = "[otlp_http, webhook]"
	}
	return receivers, exporters, pipelines, mainExporters
}

func collectorConfig(sc scenario, p ports, sinkAddr, judgeAddr, key string) string {
	return collectorConfigWith(sc, p, sinkAddr, judgeAddr, key, "", 0)
}

func collectorConfigWith(sc scenario, p ports, sinkAddr, judgeAddr, key, otherSink string, otherPort int) string {
	cfg := collectorConfigBase(sc, p, sinkAddr, judgeAddr, key, otherSink, otherPort)
	if sc.flood != nil {
		cfg = logFloodConfig(cfg)
	}
	return cfg
}

func collectorConfigBase(sc scenario, p ports, sinkAddr, judgeAddr, key, otherSink string, otherPort int) string {
	extraRecv, extraExp, extraPipes, mainExp := topologyParts(sc, otherSink, otherPort)
	evals := sc.evals
	judges := ""
	if sc.judge {
		endpoint, headers := "http://"+judgeAddr+"/v1", ""
		if sc.credentials {
			endpoint = fmt.Sprintf("http://evaluser:%s@%s/v1?code=%s", key, judgeAddr, key)
			headers = "\n        headers: {X-Api-Key: " + key + "}"
		}
		judges = fmt.Sprintf(`
    judges:
      default:
        endpoint: %s
        model: judge
        api_key: %s%s
        timeout: 1s
        max_concurrency: 2
        cache_size: 0
        retry: {max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms}`, endpoint, key, headers)
		evals = `
      - type: llm_judge
        name: helpful
        judge: default
        criteria: The answer says what was booked.
        inputs: [input, output]`
	}
	processors := "[eval]"
	batch := ""
	if sc.batch {
		processors = "[eval, batch]"
		batch = "\n  batch: {}"
	}
	if sc.processors != "" {
		processors = sc.processors
		batch = "\n  batch: {}"
	}
	return sc.extra.config(fmt.Sprintf(`# generated by evalbridge-loadgen suite: scenario %[1]s
extensions:
  health_check:
    endpoint: 127.0.0.1:%[2]d
  pprof:
    endpoint: 127.0.0.1:%[3]d
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[4]d
        max_recv_msg_size_mib: 128%[12]s
processors:
  eval:
    %[5]s%[6]s
    evaluators:%[7]s%[8]s
exporters:
  otlp_http:
    endpoint: http://%[9]s
    retry_on_failure:
      enabled: true
      initial_interval: 500ms
      max_interval: 2s
      max_elapsed_time: 5m%[13]s
service:
  extensions: [health_check, pprof]
  telemetry:
    logs:
      level: warn
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[10]d
  pipelines:
    traces:
      receivers: [otlp]
      processors: %[11]s
      exporters: %[15]s%[14]s
`, sc.name, p.health, p.pprof, p.grpc, sc.eval, judges, evals, batch, sinkAddr, p.metrics, processors,
		extraRecv, extraExp, extraPipes, mainExp))
}

// prepareRun makes the run's directory (kept with keep, else removed by
// cleanup) and finds the collector binary: collector, or one built into
// the directory.
func prepareRun(ctx context.Context, prefix string, keep bool, collector string, out io.Writer) (dir, bin string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if keep {
		fmt.Fprintf(out, "configs and logs in %s\n", dir)
		cleanup = func() {}
	}
	bin = collector
	if bin == "" {
		fmt.Fprintln(out, "building ./cmd/otelcol-evalbridge …")
		if bin, err = buildCollector(ctx, dir); err != nil {
			cleanup()
			return "", "", nil, err
		}
	}
	return dir, bin, cleanup, nil
}

// runSuite runs the scenarios and prints a report per scenario and a table.
// It returns an error when a scenario could not run, or, with strict, when a
// promise was broken.
func runSuite(ctx context.Context, o suiteOptions) error {
	dir, bin, cleanup, err := prepareRun(ctx, "evalbridge-suite-", o.keep, o.collector, o.out)
	if err != nil {
		return err
	}
	defer cleanup()
	var reports []report
	var broken []string
	for _, sc := range scenarios(o.short) {
		if o.only != "" && !strings.Contains(","+o.only+",", ","+sc.name+",") {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(o.out, "-- %s: %s\n", sc.name, sc.about)
		start := time.Now()
		r, err := runScenario(ctx, bin, dir, sc)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("scenario took %s", time.Since(start).Round(100*time.Millisecond)))
		r.print(o.out)
		reports = append(reports, r)
		for _, f := range r.failures() {
			broken = append(broken, sc.name+": "+f)
		}
		if sc.allAcked && r.Refused > 0 {
			broken = append(broken, fmt.Sprintf("%s: %d requests refused until the client gave up", sc.name, r.Refused))
		}
	}
	fmt.Fprintf(o.out, "\nReliability suite, %s, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), machine())
	table(o.out, reports)
	if len(broken) > 0 {
		fmt.Fprintf(o.out, "\nbroken promises:\n  %s\n", strings.Join(broken, "\n  "))
		if o.strict {
			return fmt.Errorf("%d broken promises (strict)", len(broken))
		}
		fmt.Fprintln(o.out, "(not strict: exit 0; run with -strict to fail on them)")
	}
	return nil
}

// runScenario starts a sink, (a judge,) a collector, runs the load, waits
// for the spans, stops the collector and accounts.
func runScenario(ctx context.Context, bin, dir string, sc scenario) (report, error) {
	s, err := newSink("127.0.0.1:0")
	if err != nil {
		return report{}, err
	}
	defer s.close()
	s.mu.Lock()
	s.delay = backendLatency
	s.mu.Unlock()
	var key, judgeAddr string
	var redirectTarget *hitCounter // credentials: the other port the judge redirects to
	var judge *faultyJudge
	if sc.judge {
		j, err := newFaultyJudge(30 * time.Second)
		if err != nil {
			return report{}, err
		}
		defer j.close()
		judge = j
		if sc.credentials {
			if redirectTarget, err = newHitCounter(); err != nil {
				return report{}, err
			}
			defer redirectTarget.close()
			j.redirectTo = "http://" + redirectTarget.addr
		}
		judgeAddr = j.addr
		key = newKey()
		s.mu.Lock()
		s.secret = strings.TrimPrefix(key, keyPrefix)
		s.mu.Unlock()
	}
	// Side services listen before the collector's ports are picked.
	if err := sc.extra.start(); err != nil {
		return report{}, err
	}
	defer sc.extra.close()
	p, err := newPorts()
	if err != nil {
		return report{}, err
	}
	// The second backend of two_pipelines (it must get nothing), or the
	// down alert endpoint of alert_down (a free port nobody listens on).
	var other *sink
	otherPort := 0
	switch sc.topology {
	case "two_pipelines":
		if other, err = newSink("127.0.0.1:0"); err != nil {
			return report{}, err
		}
		defer other.close()
		if otherPort, err = freePort(); err != nil {
			return report{}, err
		}
	case "alert_down":
		// The alert endpoint hangs: the kernel completes the connection,
		// nobody ever answers, so the webhook's queue fills.
		hang, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return report{}, err
		}
		defer hang.Close()
		otherPort = hang.Addr().(*net.TCPAddr).Port
	}
	otherAddr := ""
	if other != nil {
		otherAddr = other.addr
	}
	col, err := startCollector(bin, dir, sc.name, collectorConfigWith(sc, p, s.addr, judgeAddr, key, otherAddr, otherPort), p)
	if err != nil {
		return report{}, err
	}
	defer func() {
		if !col.exited() {
			col.kill()
		}
	}()

	cfg := sc.load
	cfg.endpoint = col.grpc
	floodDone := make(chan struct{})
	if sc.flood != nil {
		go func() { defer close(floodDone); sc.flood.flood(ctx, col.grpc, s) }()
	} else {
		close(floodDone)
	}
	var notes []string
	var hookMu sync.Mutex
	down, up, termed := false, false, false
	var termOK chan bool
	var termTook time.Duration
	cfg.onTick = func(elapsed time.Duration) {
		hookMu.Lock()
		defer hookMu.Unlock()
		if sc.outage[1] > 0 && !down && elapsed >= sc.outage[0] {
			down = true
			s.stop()
		}
		if sc.outage[1] > 0 && down && !up && elapsed >= sc.outage[1] {
			up = true
			if err := s.start(); err != nil {
				notes = append(notes, "sink did not come back: "+err.Error())
			}
		}
		if sc.sigterm > 0 && !termed && elapsed >= sc.sigterm {
			termed = true
			termOK = make(chan bool, 1)
			go func() {
				t0 := time.Now()
				ok := col.stop(20 * time.Second)
				termTook = time.Since(t0) // read after termOK
				termOK <- ok
			}()
		}
	}
	l := newLoad(cfg)
	if err := l.run(ctx); err != nil {
		return report{}, err
	}
	if ctx.Err() != nil { // interrupted: no figures from half a scenario
		return report{}, ctx.Err()
	}
	// The outage may outlast the load.
	for sc.outage[1] > 0 && !up && ctx.Err() == nil {
		cfg.onTick(time.Since(l.start))
		time.Sleep(50 * time.Millisecond)
	}

	var metricsNote string
	if sc.sigterm > 0 {
		if ok := <-termOK; !ok {
			notes = append(notes, "collector did not exit within 20 s of SIGTERM: killed")
		} else {
			notes = append(notes, fmt.Sprintf("collector exited %s after SIGTERM", round(termTook)))
		}
		s.quiet(ctx, time.Second, time.Now().Add(5*time.Second), func() bool { return true })
	} else {
		// Wait until every acknowledged span arrived, or the sink has been
		// quiet for longer than the processor holds a trace, or the drain
		// deadline.
		deadline := time.Now().Add(sc.drain)
		idle := sc.scoreWait + 3*time.Second
		complete := s.quiet(ctx, idle, deadline, l.allAckedArrived(s))
		if !complete {
			notes = append(notes, fmt.Sprintf("not every acknowledged span arrived within the %s drain", sc.drain))
		}
		metricsNote = collectorMetrics(col)
		sc.extra.scrape(col)
		col.saveMetrics(filepath.Join(dir, sc.name+".metrics.txt"))
		if !col.stop(20 * time.Second) {
			notes = append(notes, "collector did not exit within 20 s of SIGTERM: killed")
		}
		// Spans released at shutdown.
		s.quiet(ctx, time.Second, time.Now().Add(5*time.Second), func() bool { return true })
	}
	r := account(sc.name, l, s)
	if other != nil {
		_, received, _, _, _ := other.snapshot()
		r.CrossDelivered = received
		notes = append(notes, fmt.Sprintf("the other pipeline's backend received %d spans (must be 0)", received))
	}
	if redirectTarget != nil {
		r.RedirectHits = int(redirectTarget.hits.Load())
		n := judge.redirects.Load()
		notes = append(notes, fmt.Sprintf("the judge redirected %d requests to another port; that port received %d (must be 0)", n, r.RedirectHits))
		if n == 0 {
			notes = append(notes, "the judge redirected nothing: the redirect check proved nothing")
			r.RedirectHits = -1 // a broken promise: the scenario did not test what it says
		}
	}
	if sc.flood != nil {
		<-floodDone
		r.FloodBound = sc.floodBound
		notes = append(notes, floodNote(sc.flood, s, &r))
	}
	r.MaxHostileBound = sc.maxHostile
	r.NoDuplicates = sc.topology == "alert_down"
	r.Extra = sc.extra.finish(s, r)
	r.PeakRSSMiB, r.PeakGoroutines = col.peaks()
	col.mu.Lock()
	notes = append(notes, fmt.Sprintf("exporter sending queue peak %.0f of 1000 requests", col.peakQueue))
	col.mu.Unlock()
	if key != "" {
		n, frag := col.logLeaks(strings.TrimPrefix(key, keyPrefix))
		r.KeyLeaks += n
		if n > 0 {
			r.LeakExamples = append(r.LeakExamples, fmt.Sprintf("%d collector log lines: …%s…", n, frag))
		}
	}
	if n := countLines(col.logPath, "panic"); n > 0 {
		notes = append(notes, fmt.Sprintf("%d log lines mention a panic (log: %s)", n, col.logPath))
	}
	if metricsNote != "" {
		notes = append(notes, metricsNote)
	}
	if e := l.lastErr(); e != "" {
		notes = append(notes, "last client error: "+clip(e, 200))
	}
	r.Notes = append(append(notes, r.Notes...), r.Extra.Notes...)
	return r, nil
}

// collectorMetrics summarises the collector's own counters that explain a
// loss: next-consumer refusals, the exporter's queue, refused spans.
func collectorMetrics(c *collector) string {
	var parts []string
	for _, m := range []string{
		"otelcol_processor_eval_next_consumer_errors",
		"otelcol_processor_eval_spans_forwarded_unscored",
		"otelcol_processor_eval_spans_late",
		"otelcol_processor_eval_bad_input_problems",
		"otelcol_exporter_enqueue_failed_spans",
		"otelcol_exporter_send_failed_spans",
		"otelcol_receiver_refused_spans",
	} {
		if v := c.metric(m); v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", strings.TrimPrefix(m, "otelcol_"), v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "collector metrics: " + strings.Join(parts, " ")
}

func clip(s string, n int) string { return textutil.Ellipsis(s, n) }

// keyPrefix starts every judge key the suite makes; the leak checks look
// for 8-byte windows of the random rest, which cannot appear by chance.
const keyPrefix = "sk-loadgen-"

// newKey is a random judge key.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return keyPrefix + hex.EncodeToString(b)
}

// machine describes where the figures were measured.
func machine() string {
	cpus := 0
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "processor") {
				cpus++
			}
			if v, ok := strings.CutPrefix(line, "model name"); ok && model == "" {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			}
		}
	}
	return fmt.Sprintf("%d CPUs %s", cpus, model)
}
