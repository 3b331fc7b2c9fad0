package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The cpu command: what scoring costs end to end. The built collector runs
// the same load twice per round, once with `processors: [batch]` and once
// with `[eval, batch]` (the suite's deterministic evaluators), the order
// alternating between rounds; the CPU time the collector process spent
// from the first request until every acknowledged span reached the sink,
// divided by the spans sent, is its cost per span. With -groupbytrace a
// third pipeline, `[groupbytrace, batch]`, runs too: contrib's processor
// that only holds each trace until it is complete (the same 1 s), the
// reference for what holding costs without scoring. The collector is then
// built with the groupbytrace tag (cmd/otelcol-evalbridge/bench_groupbytrace.go).
// With -floor, `[resultfloor, batch]` runs too: it forwards each request and
// adds the result span stream mode would send for each agent run, keeping
// and scoring nothing (bench/resultfloor; the floor build tag). Its cost over
// `[batch]` is what sending §26's results costs, the least any stream mode
// can add.

// cpuOptions are the cpu command's flags.
type cpuOptions struct {
	collector string
	rounds    int
	load      loadConfig
	keep      bool
	profile   string // directory for CPU profiles of the collector; "" for none
	// groupbytrace adds groupbyTracePipeline to the pipelines compared.
	groupbytrace bool
	// stream adds streamPipeline.
	stream bool
	// floor adds floorPipeline.
	floor bool
	// wait is eval's wait (and groupbytrace's wait_duration): how long
	// traces are held, so what the pipelines hold in memory.
	wait time.Duration
	// heapEvery is how often the collector's Go heap is sampled during
	// the load; 0: not at all (the peak RSS only).
	heapEvery time.Duration
	out       io.Writer
}

// cpuPipelines are the two pipelines compared; the first is the reference.
var cpuPipelines = []string{"[batch]", "[eval, batch]"}

// groupbyTracePipeline holds traces as eval does, and scores nothing.
const groupbyTracePipeline = "[groupbytrace, batch]"

// floorPipeline sends what stream mode sends (the spans, and a result
// span per agent run) and does nothing else.
const floorPipeline = "[resultfloor, batch]"

// streamPipeline is [eval, batch] with eval in stream mode
// (docs/contract.md §26): spans go on at once, results follow.
const streamPipeline = "[eval (stream), batch]"

// cpuWait is how long eval waits after a trace's last span, and
// groupbytrace after its first, in the cpu command's pipelines, unless
// -wait says otherwise.
const cpuWait = time.Second

func (o cpuOptions) pipelines() []string {
	pls := slices.Clone(cpuPipelines)
	if o.stream {
		pls = append(pls, streamPipeline)
	}
	if o.floor {
		pls = append(pls, floorPipeline)
	}
	if o.groupbytrace {
		pls = append(pls, groupbyTracePipeline)
	}
	return pls
}

// cpuScenario is the collector's scenario for pipeline, its traces held
// for wait.
func cpuScenario(name, pipeline string, wait time.Duration) scenario {
	sc := scenario{name: name, eval: fmt.Sprintf("wait: %s\n    timeout: 5s", wait), evals: normalEvaluators, processors: pipeline, scoreWait: wait}
	if pipeline == streamPipeline {
		sc.processors = "[eval, batch]"
		sc.eval += "\n    mode: stream"
	}
	return sc
}

func cpuCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cpu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := cpuOptions{out: stdout, wait: cpuWait, heapEvery: memSampleEvery, load: loadConfig{plainShare: 0.2, failShare: 0.2, parts: 3, gap: 100 * time.Millisecond,
		retryFor: 60 * time.Second, conns: 4, seed: 1, scale: 1}}
	fs.StringVar(&o.collector, "collector", "", "a prebuilt otelcol-evalbridge binary; default: go build ./cmd/otelcol-evalbridge")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs both pipelines, in alternating order")
	fs.Float64Var(&o.load.rate, "rate", 300, "traces started per second")
	fs.DurationVar(&o.load.duration, "duration", 15*time.Second, "how long new traces start")
	fs.Float64Var(&o.load.plainShare, "plain", 0.2, "share of non-GenAI traces (1: only non-GenAI, the pass-through cost)")
	fs.BoolVar(&o.keep, "keep", false, "keep the generated configs and collector logs")
	fs.StringVar(&o.profile, "profile", "", "write a CPU profile of the collector during each load into this directory (from its pprof extension), and a heap profile when the load stops")
	fs.BoolVar(&o.groupbytrace, "groupbytrace", false, "also run [groupbytrace, batch] (holding only, no scoring); builds the collector with -tags groupbytrace, or give one built so")
	fs.BoolVar(&o.stream, "stream", false, "also run "+streamPipeline+": eval in mode: stream")
	fs.BoolVar(&o.floor, "floor", false, "also run "+floorPipeline+": the spans and a result span per agent run, nothing kept or scored (what sending stream mode's results costs); builds the collector with -tags floor, or give one built so")
	fs.DurationVar(&o.wait, "wait", cpuWait, "eval's wait (and groupbytrace's wait_duration): how long traces are held, so what is held in memory")
	fs.DurationVar(&o.heapEvery, "heap-every", memSampleEvery, "how often the collector's Go heap is sampled during the load: a scrape of its own metrics, about 2 ms of its CPU, counted in cpu_s; 0: not at all (peak RSS only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || o.heapEvery < 0 || o.rounds < 1 || o.load.rate <= 0 || o.load.duration <= 0 || o.load.plainShare < 0 || o.load.plainShare > 1 || o.wait <= 0 {
		fmt.Fprintln(stderr, "usage: evalbridge-loadgen cpu [-collector BIN] [-rounds N] [-rate R] [-duration D] [-plain SHARE] [-keep] [-profile DIR] [-groupbytrace] [-stream] [-floor] [-wait D] [-heap-every D]")
		return errUsage
	}
	return runCPU(ctx, o)
}

// cpuRun is one measurement.
type cpuRun struct {
	round    int
	pipeline string
	spans    int64
	cpu      time.Duration
	// switches are the context switches of the collector's threads in the
	// same window (voluntary and not): the goroutine hand-offs that put a
	// thread to sleep and wake it cost CPU that profiles do not name.
	switches int64
	// retried are the requests the collector refused (retryable) and the
	// load generator sent again: each is received and decoded again.
	retried int64
	// delays are the spans' times from their request's send to their
	// arrival at the sink.
	delays []time.Duration
	// outBytes is the OTLP protobuf size of all the sink received: the
	// spans and, with eval, their results.
	outBytes int64
	// mem is what the collector held.
	mem cpuMem
}

// cpuHeader names the columns of a run's row.
const cpuHeader = "# round pipeline spans cpu_s µs/span switches/span retried delay_p50_ms delay_p99_ms out_B/span rss_peak_MiB heap_peak_MiB heap_mean_MiB"

func (r cpuRun) row() string {
	return fmt.Sprintf("%d %-14s %d %.2f %.1f %.3f %d %.1f %.1f %.0f %s", r.round, strconv.Quote(r.pipeline), r.spans, r.cpu.Seconds(), r.perSpan(),
		float64(r.switches)/float64(max(r.spans, 1)), r.retried, ms(percentile(r.delays, 50)), ms(percentile(r.delays, 99)),
		float64(r.outBytes)/float64(max(r.spans, 1)), r.mem.columns())
}

func (r cpuRun) perSpan() float64 {
	return float64(r.cpu.Microseconds()) / float64(max(r.spans, 1))
}

func runCPU(ctx context.Context, o cpuOptions) error {
	var tags []string
	if o.groupbytrace {
		tags = append(tags, "groupbytrace")
	}
	if o.floor {
		tags = append(tags, "floor")
	}
	dir, bin, cleanup, err := prepareRun(ctx, "evalbridge-cpu-", o.keep, o.collector, o.out, tags...)
	if err != nil {
		return err
	}
	defer cleanup()
	if o.groupbytrace {
		if err := hasProcessor(ctx, bin, "groupbytrace"); err != nil {
			return err
		}
	}
	if o.floor {
		if err := hasProcessor(ctx, bin, "resultfloor"); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.out, "# %s, %s; load average %s\n# %s; wait %s\n", time.Now().UTC().Format(time.RFC3339), machine(), loadAverage(), o.load, o.wait)
	fmt.Fprintln(o.out, cpuHeader)
	pipelines := o.pipelines()
	var runs []cpuRun
	for round := 1; round <= o.rounds; round++ {
		order := slices.Clone(pipelines)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, pl := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r, err := cpuOnce(ctx, bin, dir, fmt.Sprintf("cpu-%d-%d", round, len(runs)), pl, o)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, pl, err)
			}
			r.round = round
			fmt.Fprintln(o.out, r.row())
			runs = append(runs, r)
		}
	}
	fmt.Fprintf(o.out, "# load average after %s\n", loadAverage())
	writeCPUSummary(o.out, pipelines, runs)
	writeDelaySummary(o.out, pipelines, runs)
	writeBytesSummary(o.out, pipelines, runs)
	writeMemSummary(o.out, pipelines, runs)
	return nil
}

// writeBytesSummary prints the median OTLP bytes a span the sink received
// per pipeline, and each against the first's: what the results add to what
// a backend is sent (and an exporter marshals and compresses).
func writeBytesSummary(w io.Writer, pipelines []string, runs []cpuRun) {
	var parts []string
	var first float64
	for i, pl := range pipelines {
		var v []float64
		for _, r := range runs {
			if r.pipeline == pl {
				v = append(v, float64(r.outBytes)/float64(max(r.spans, 1)))
			}
		}
		m := median(v)
		if i == 0 {
			first = m
			parts = append(parts, fmt.Sprintf("%s %.0f", pl, m))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f (%.2fx)", pl, m, m/max(first, 1)))
	}
	fmt.Fprintf(w, "OTLP bytes a span at the sink: %s\n", strings.Join(parts, ", "))
}

// writeCPUSummary prints the median cost of each pipeline and, for each
// after the first, its ratio to the first two ways: the ratio of the
// medians, and the median of the rounds' own ratios (each round's runs are
// back to back, so a machine whose load drifts between rounds moves both
// sides of a round's ratio alike).
func writeCPUSummary(w io.Writer, pipelines []string, runs []cpuRun) {
	med := make([]float64, len(pipelines))
	var medians []string
	for i, pl := range pipelines {
		var v []float64
		for _, r := range runs {
			if r.pipeline == pl {
				v = append(v, r.perSpan())
			}
		}
		med[i] = median(v)
		medians = append(medians, fmt.Sprintf("%s %.1f", pl, med[i]))
	}
	fmt.Fprintf(w, "median CPU µs/span: %s\n", strings.Join(medians, ", "))
	for i := 1; i < len(pipelines); i++ {
		var perRound []float64
		for _, r := range runs {
			if r.pipeline != pipelines[i] {
				continue
			}
			for _, ref := range runs {
				if ref.round == r.round && ref.pipeline == pipelines[0] && ref.perSpan() > 0 {
					perRound = append(perRound, r.perSpan()/ref.perSpan())
				}
			}
		}
		fmt.Fprintf(w, "ratio %s / %s: %.3f (median of the %d rounds' ratios: %.3f)\n",
			pipelines[i], pipelines[0], med[i]/med[0], len(perRound), median(perRound))
	}
}

// cpuOnce starts a collector with pipeline, its traces held for o.wait,
// sends o's load and returns the CPU time the collector spent until every
// acknowledged span arrived, and what it held in memory meanwhile.
func cpuOnce(ctx context.Context, bin, dir, name, pipeline string, o cpuOptions) (cpuRun, error) {
	lc, profileDir := o.load, o.profile
	s, err := newSink("127.0.0.1:0")
	if err != nil {
		return cpuRun{}, err
	}
	defer s.close()
	p, err := newPorts()
	if err != nil {
		return cpuRun{}, err
	}
	sc := cpuScenario(name, pipeline, o.wait)
	col, err := startCollector(bin, dir, name, collectorConfig(sc, p, s.addr, "", ""), p)
	if err != nil {
		return cpuRun{}, err
	}
	defer func() {
		if !col.exited() {
			col.kill()
		}
	}()
	close(col.stopMonitor) // its scrapes would count as the collector's work
	pid := col.cmd.Process.Pid
	before, err := processCPU(pid)
	if err != nil {
		return cpuRun{}, err
	}
	switchesBefore := contextSwitches(pid)
	mem := startMemSampler(pid, func() float64 { return col.metric(heapMetric) }, o.heapEvery)
	profiled := make(chan error, 1)
	profileFile := ""
	if profileDir != "" {
		profileFile = filepath.Join(profileDir, name+"-"+strings.Trim(strings.NewReplacer(", ", "-", " ", "-", "(", "", ")", "").Replace(pipeline), "[]"))
		go func() { profiled <- saveProfile(col.pprof, lc.duration, profileFile+".pprof") }()
	} else {
		profiled <- nil
	}
	lc.endpoint = col.grpc
	l := newLoad(lc)
	if err := l.run(ctx); err != nil {
		return cpuRun{}, err
	}
	if err := <-profiled; err != nil {
		return cpuRun{}, err
	}
	if profileFile != "" {
		// What is held when the load stops: the traces of the last wait.
		if err := saveHeapProfile(col.pprof, profileFile+"-heap.pprof"); err != nil {
			return cpuRun{}, err
		}
	}
	// With eval, the clock runs until every run's results are in too:
	// stream mode sends them a wait after the spans themselves.
	done := l.allAckedArrived(s)
	if pipeline != "[batch]" && pipeline != groupbyTracePipeline && pipeline != floorPipeline {
		done = l.allAckedScored(s)
	}
	complete := s.quiet(ctx, 100*time.Millisecond, time.Now().Add(60*time.Second), done)
	after, err := processCPU(pid)
	if err != nil {
		return cpuRun{}, err
	}
	switches := contextSwitches(pid) - switchesBefore
	held := mem.stop()
	col.stop(20 * time.Second)
	if !complete {
		return cpuRun{}, fmt.Errorf("not every acknowledged span arrived within 60 s (log %s)", filepath.Join(dir, name+".log"))
	}
	return cpuRun{pipeline: pipeline, spans: l.stats.spansAcked.Load(), cpu: after - before, switches: switches,
		retried: l.stats.retried.Load(), delays: spanDelays(l, s), outBytes: s.bytesReceived(), mem: held}, nil
}

// hasProcessor checks, before any load, that collector binary bin was built
// with processor typ (its `components` command lists what it has).
func hasProcessor(ctx context.Context, bin, typ string) error {
	out, err := exec.CommandContext(ctx, bin, "components").Output()
	if err != nil {
		return fmt.Errorf("%s components: %w", bin, err)
	}
	if !strings.Contains(string(out), "- name: "+typ+"\n") {
		return fmt.Errorf("collector %s has no %s processor: build it with go build -tags %s ./cmd/otelcol-evalbridge", bin, typ, typ)
	}
	return nil
}

// processCPU is the user and system CPU time of process pid so far
// (/proc/PID/stat, in clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("the collector's CPU time (Linux /proc only): %w", err)
	}
	// The fields after the command name, which is in parentheses.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}

// contextSwitches is the sum of the context switches of process pid's
// threads so far (/proc/PID/task/*/status); 0 where it cannot be read.
func contextSwitches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// saveProfile writes a CPU profile of d from the pprof extension at addr.
func saveProfile(addr string, d time.Duration, file string) error {
	return fetchProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())), d+30*time.Second, "CPU profile", file)
}

// saveHeapProfile writes a heap profile from the pprof extension at addr,
// after a garbage collection (gc=1): its in-use figures are the live heap.
func saveHeapProfile(addr, file string) error {
	return fetchProfile(fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", addr), 30*time.Second, "heap profile", file)
}

func fetchProfile(url string, timeout time.Duration, what, file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	cl := http.Client{Timeout: timeout}
	resp, err := cl.Get(url)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", what, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// spanDelays is, for each span that arrived, the time from the first send
// of a request carrying it to its first arrival at the sink.
func spanDelays(l *load, s *sink) []time.Duration {
	arr, _, _, _, _ := s.snapshot()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]time.Duration, 0, len(arr))
	for seq, si := range l.gen.spans {
		if a, ok := arr[int64(seq)]; ok && si.reqSent > 0 {
			out = append(out, a.first.Sub(time.Unix(0, si.reqSent)))
		}
	}
	return out
}

// percentile is the p-th percentile of ds (the ceil(p/100 n)-th smallest);
// 0 for none. ds is sorted in place.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)*p+99)/100-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// writeDelaySummary prints each pipeline's span delay percentiles (the
// median over rounds) and, for each after the first, the median over
// rounds of its p99 minus the first's in the same round: the latency the
// processor adds.
func writeDelaySummary(w io.Writer, pipelines []string, runs []cpuRun) {
	p99Of := func(round int, pl string) (time.Duration, bool) {
		for _, r := range runs {
			if r.round == round && r.pipeline == pl && len(r.delays) > 0 {
				return percentile(r.delays, 99), true
			}
		}
		return 0, false
	}
	for i, pl := range pipelines {
		var p50, p90, p99, added []float64
		for _, r := range runs {
			if r.pipeline != pl || len(r.delays) == 0 {
				continue
			}
			p50 = append(p50, ms(percentile(r.delays, 50)))
			p90 = append(p90, ms(percentile(r.delays, 90)))
			p99 = append(p99, ms(percentile(r.delays, 99)))
			if ref, ok := p99Of(r.round, pipelines[0]); ok && i > 0 {
				added = append(added, ms(percentile(r.delays, 99)-ref))
			}
		}
		if len(p99) == 0 {
			continue
		}
		fmt.Fprintf(w, "span delay %s: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms", pl, median(p50), median(p90), median(p99))
		if len(added) > 0 {
			fmt.Fprintf(w, "; p99 added over %s: %.1f ms (median of %d rounds)", pipelines[0], median(added), len(added))
		}
		fmt.Fprintln(w)
	}
}
