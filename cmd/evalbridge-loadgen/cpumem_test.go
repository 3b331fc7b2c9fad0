package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vmHWM reads a real process's peak resident set: this one's grows by what
// it touches, and an unknown process has none.
func TestVmHWMOfARealProcess(t *testing.T) {
	before := vmHWM(os.Getpid())
	require.Positive(t, before)
	const size = 64 << 20
	b := make([]byte, size)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1 // resident only once touched
	}
	after := vmHWM(os.Getpid())
	assert.GreaterOrEqual(t, after-before, int64(size/2/1024), "VmHWM grew by %d KiB after touching %d KiB", after-before, size/1024)
	assert.Equal(t, byte(1), b[4096])
	assert.Zero(t, vmHWM(-1))
}

// The sampler keeps the heap's peak and mean over its samples and reads
// the process's VmHWM when it stops; a heap that cannot be read is said
// so, not shown as 0.
func TestMemSampler(t *testing.T) {
	heaps := []float64{10 << 20, 30 << 20, 20 << 20}
	var calls atomic.Int64
	m := startMemSampler(os.Getpid(), func() float64 {
		n := calls.Add(1)
		return heaps[min(int(n), len(heaps))-1]
	}, time.Millisecond)
	for calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	r := m.stop()
	assert.Equal(t, 30.0, r.heapPeakMiB)
	assert.GreaterOrEqual(t, r.heapSamples, 4, "the samples while it ran and one when it stopped")
	assert.Greater(t, r.heapMeanMiB, 10.0)
	assert.Less(t, r.heapMeanMiB, 30.0)
	assert.Positive(t, r.rssPeakMiB)
	assert.Regexp(t, `^\d+\.\d \d+\.\d \d+\.\d$`, r.columns())

	unread := startMemSampler(-1, func() float64 { return -1 }, time.Millisecond).stop()
	assert.Zero(t, unread.heapSamples)
	assert.Equal(t, "n/a n/a n/a", unread.columns())

	// -heap-every 0: no scrape at all, the peak RSS still.
	calls.Store(0)
	off := startMemSampler(os.Getpid(), func() float64 { calls.Add(1); return 1 }, 0)
	time.Sleep(5 * time.Millisecond)
	r = off.stop()
	assert.Zero(t, calls.Load())
	assert.Zero(t, r.heapSamples)
	assert.Positive(t, r.rssPeakMiB)
	assert.Regexp(t, `^\d+\.\d n/a n/a$`, r.columns())
}

// The heap comes from the collector's own metrics endpoint, in bytes.
func TestCollectorHeapMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# HELP %[1]s Bytes of allocated heap objects\n# TYPE %[1]s gauge\n%[1]s 1.048576e+07\n"+
			"otelcol_process_runtime_total_alloc_bytes 9e+09\n", heapMetric)
	}))
	defer srv.Close()
	c := &collector{metrics: strings.TrimPrefix(srv.URL, "http://")}
	assert.Equal(t, float64(10<<20), c.metric(heapMetric))
}

// A run's row keeps the columns before memory where they were and adds
// the memory columns at the end, as the header names them.
func TestCPURowColumns(t *testing.T) {
	r := cpuRun{round: 2, pipeline: streamPipeline, spans: 1000, cpu: 50 * time.Millisecond, switches: 1000, retried: 3,
		delays: []time.Duration{100 * time.Millisecond}, outBytes: 800_000,
		mem: cpuMem{rssPeakMiB: 110.25, heapPeakMiB: 33.44, heapMeanMiB: 21.06, heapSamples: 16}}
	row := r.row()
	assert.Equal(t, `2 "[eval (stream), batch]" 1000 0.05 50.0 1.000 3 100.0 100.0 800 110.2 33.4 21.1`, row)
	header := strings.Fields(strings.TrimPrefix(cpuHeader, "# "))
	require.Len(t, strings.Fields(strings.Replace(row, `"[eval (stream), batch]"`, "pipeline", 1)), len(header))
	assert.Equal(t, []string{"round", "pipeline", "spans", "cpu_s", "µs/span", "switches/span", "retried", "delay_p50_ms", "delay_p99_ms", "out_B/span"}, header[:10])
	assert.Equal(t, []string{"rss_peak_MiB", "heap_peak_MiB", "heap_mean_MiB"}, header[10:])
}

// One memory line per pipeline: the medians over rounds and, after the
// first pipeline, the median of the rounds' heap peak differences to it.
func TestCPUMemSummary(t *testing.T) {
	run := func(round int, pl string, rss, peak, mean float64) cpuRun {
		return cpuRun{round: round, pipeline: pl, mem: cpuMem{rssPeakMiB: rss, heapPeakMiB: peak, heapMeanMiB: mean, heapSamples: 20}}
	}
	pls := []string{"[batch]", "[eval, batch]", streamPipeline}
	runs := []cpuRun{
		run(1, pls[0], 85, 18, 13), run(1, pls[1], 136, 56, 31), run(1, pls[2], 100, 24, 16),
		run(2, pls[2], 104, 26, 17), run(2, pls[1], 140, 60, 33), run(2, pls[0], 87, 20, 14),
		{round: 3, pipeline: pls[2]}, // its heap could not be read
	}
	var out bytes.Buffer
	writeMemSummary(&out, pls, runs)
	assert.Equal(t, "memory [batch]: peak RSS 86.0 MiB, Go heap peak 19.0 MiB, mean 13.5 MiB (median of 2 rounds)\n"+
		"memory [eval, batch]: peak RSS 138.0 MiB, Go heap peak 58.0 MiB, mean 32.0 MiB (median of 2 rounds); heap peak over [batch]: +39.0 MiB (median of 2 rounds)\n"+
		"memory [eval (stream), batch]: peak RSS 102.0 MiB, Go heap peak 25.0 MiB, mean 16.5 MiB (median of 2 rounds); heap peak over [batch]: +6.0 MiB (median of 2 rounds)\n",
		out.String())

	out.Reset()
	writeMemSummary(&out, pls[:1], []cpuRun{{round: 1, pipeline: pls[0]}})
	assert.Equal(t, "memory [batch]: peak RSS unknown, Go heap unknown (its metric "+heapMetric+" could not be read) (median of 0 rounds)\n", out.String())
}

// -wait sets eval's wait and groupbytrace's, and is checked.
func TestCPUWait(t *testing.T) {
	p := ports{grpc: 1, health: 2, pprof: 3, metrics: 4}
	for _, pl := range []string{"[eval, batch]", streamPipeline} {
		cfg := collectorConfig(cpuScenario("cpu", pl, 10*time.Second), p, "127.0.0.1:5", "", "")
		assert.Contains(t, cfg, "    wait: 10s\n")
	}
	gbt := collectorConfig(cpuScenario("cpu", groupbyTracePipeline, 10*time.Second), p, "127.0.0.1:5", "", "")
	assert.Contains(t, gbt, "\n  groupbytrace: {wait_duration: 10s}")
	assert.Contains(t, collectorConfig(cpuScenario("cpu", groupbyTracePipeline, cpuWait), p, "127.0.0.1:5", "", ""),
		"\n  groupbytrace: {wait_duration: 1s}")

	var out, errb bytes.Buffer
	assert.Equal(t, 2, realMain([]string{"cpu", "-wait", "0s"}, &out, &errb))
	assert.Contains(t, errb.String(), "[-wait D]")
	errb.Reset()
	realMain([]string{"cpu", "-h"}, &out, &errb)
	assert.Contains(t, errb.String(), "default 1s", "-wait defaults to cpuWait")
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"cpu", "-heap-every", "-1s"}, &out, &errb))
	assert.Contains(t, errb.String(), "[-heap-every D]")
}
