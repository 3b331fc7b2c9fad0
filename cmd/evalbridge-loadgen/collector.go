package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/evalbridge/evalbridge/internal/loopbackport"
)

// children are the collector processes this program started; killAll ends
// them whatever way the program exits (a signal, a panic in a scenario, a
// failed assertion), so no collector outlives the suite.
var children struct {
	sync.Mutex
	procs map[int]*os.Process
}

func track(p *os.Process) {
	children.Lock()
	defer children.Unlock()
	if children.procs == nil {
		children.procs = map[int]*os.Process{}
	}
	children.procs[p.Pid] = p
}

func untrack(p *os.Process) {
	children.Lock()
	defer children.Unlock()
	delete(children.procs, p.Pid)
}

func killAll() {
	children.Lock()
	defer children.Unlock()
	for pid, p := range children.procs {
		_ = p.Kill()
		delete(children.procs, pid)
	}
}

// collector is one otelcol-evalbridge child process.
type collector struct {
	cmd     *exec.Cmd
	logPath string
	grpc    string // OTLP/gRPC receiver address
	health  string // health_check address
	pprof   string // pprof extension address
	metrics string // Prometheus address of the collector's own metrics

	done    chan struct{}
	exitErr error

	mu          sync.Mutex
	peakRSSKiB  int64
	peakGorouts int
	peakQueue   float64 // the exporter's sending queue, in requests
	stopMonitor chan struct{}
}

// ports for one collector's config.
type ports struct{ grpc, health, pprof, metrics int }

// newPorts claims them through internal/loopbackport: nothing else takes
// them before the collector binds them, nor between a SIGKILL and its
// restart on the same ports.
func newPorts() (ports, error) {
	var p ports
	var err error
	for _, dst := range []*int{&p.grpc, &p.health, &p.pprof, &p.metrics} {
		if *dst, err = loopbackport.Claim(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// startCollector runs binary with config (written to dir) and waits until
// its health check answers.
func startCollector(bin, dir, name, config string, p ports) (*collector, error) {
	cfgPath := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", "file:"+cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: the kernel kills the collector if this program dies
	// without running its cleanup (SIGKILL, a crash).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	track(cmd.Process)
	c := &collector{
		cmd: cmd, logPath: logPath,
		grpc:        fmt.Sprintf("127.0.0.1:%d", p.grpc),
		health:      fmt.Sprintf("127.0.0.1:%d", p.health),
		pprof:       fmt.Sprintf("127.0.0.1:%d", p.pprof),
		metrics:     fmt.Sprintf("127.0.0.1:%d", p.metrics),
		done:        make(chan struct{}),
		stopMonitor: make(chan struct{}),
	}
	go func() {
		c.exitErr = cmd.Wait()
		logf.Close()
		untrack(cmd.Process)
		close(c.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + c.health + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("collector exited while starting (%v); log %s:\n%s", c.exitErr, logPath, tail(logPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return nil, fmt.Errorf("collector not healthy after 60s; log %s:\n%s", logPath, tail(logPath, 20))
		}
	}
	go c.monitor()
	return c, nil
}

// monitor samples the peak RSS (VmHWM) and the goroutine count.
func (c *collector) monitor() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		c.sample()
		select {
		case <-c.stopMonitor:
			return
		case <-c.done:
			return
		case <-t.C:
		}
	}
}

func (c *collector) sample() {
	if kib := vmHWM(c.cmd.Process.Pid); kib > 0 {
		c.mu.Lock()
		c.peakRSSKiB = max(c.peakRSSKiB, kib)
		c.mu.Unlock()
	}
	if n := c.goroutines(); n > 0 {
		c.mu.Lock()
		c.peakGorouts = max(c.peakGorouts, n)
		c.mu.Unlock()
	}
	if q := c.metric("otelcol_exporter_queue_size"); q > 0 {
		c.mu.Lock()
		c.peakQueue = max(c.peakQueue, q)
		c.mu.Unlock()
	}
}

// vmHWM is the process's peak resident set in KiB, 0 when unknown.
func vmHWM(pid int) int64 { return procStatus(pid, "VmHWM:") }

// goroutines reads the count from the pprof extension's goroutine profile.
func (c *collector) goroutines() int {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + c.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	// "goroutine profile: total 42"
	if _, v, ok := strings.Cut(line, "total "); ok {
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		return n
	}
	return 0
}

// saveMetrics writes the collector's own metrics to path (kept with -keep).
func (c *collector) saveMetrics(path string) {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + c.metrics + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(path, b, 0o600)
}

// metric sums the samples of one metric (any labels) from the collector's
// own Prometheus endpoint; -1 when it cannot be read or is absent.
func (c *collector) metric(name string) float64 {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + c.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return -1
	}
	return sum
}

// stop sends SIGTERM and waits up to grace for the collector to exit; then
// it kills it. It reports whether the collector exited on its own.
func (c *collector) stop(grace time.Duration) bool {
	c.sample()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return true
	case <-time.After(grace):
		c.kill()
		return false
	}
}

func (c *collector) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

func (c *collector) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *collector) peaks() (float64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return float64(c.peakRSSKiB) / 1024, c.peakGorouts
}

// logLeaks counts the log lines holding a fragment of secret.
func (c *collector) logLeaks(secret string) (int, string) {
	f, err := os.Open(c.logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	n, example := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if frag := secretFragment(sc.Text(), secret); frag != "" {
			n++
			if example == "" {
				example = frag
			}
		}
	}
	return n, example
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// countLines counts the log lines containing s.
func countLines(path, s string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
		}
	}
	return n
}

// buildCollector builds ./cmd/otelcol-evalbridge into dir.
func buildCollector(ctx context.Context, dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "otelcol-evalbridge")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/otelcol-evalbridge")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/otelcol-evalbridge (run the suite from the repository root): %w", err)
	}
	return bin, nil
}
