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

	"github.com/evalbridge/evalbridge/internal/loopbackport"
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

// suiteOptions are the suite's flags.
type suiteOptions struct {
	short     bool
	strict    bool
	only      string
	collector string // prebuilt binary; "" builds one
	keep      bool   // keep the temporary directory (configs and logs)
	out       io.Writer
}

// prepareRun makes the run's directory (kept with keep, else removed by
// cleanup) and finds the collector binary: collector, or one built into
// the directory.
func prepareRun(ctx context.Context, prefix string, keep bool, collector string, out io.Writer, tags ...string) (dir, bin string, cleanup func(), err error) {
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
		if bin, err = buildCollector(ctx, dir, tags...); err != nil {
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
		if otherPort, err = loopbackport.Claim(); err != nil {
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
	r.AllScored = sc.allScored
	if r.ResultSpans > 0 {
		notes = append(notes, fmt.Sprintf("%d result spans (stream mode) arrived", r.ResultSpans))
	}
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
