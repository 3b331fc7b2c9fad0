package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// What the cpu command's collector holds in memory under the load: its
// peak resident set (VmHWM, from /proc: reading it costs the collector
// nothing) and its Go heap, sampled during the load from the collector's
// own telemetry. The heap is what a processor that holds traces grows; the
// resident set is mostly the binary and the runtime at these loads (about
// 75 MiB of a collector that holds nothing).

// heapMetric is the collector's own gauge of its Go heap (runtime
// MemStats.HeapAlloc: live objects and garbage not yet collected).
const heapMetric = "otelcol_process_runtime_heap_alloc_bytes"

// memSampleEvery is how often the heap is sampled by default: each sample
// is a scrape of the collector's metrics, work cpu_s includes (1.8 ms a
// scrape of an idle collector, the same for every pipeline: 1–3% of
// [batch]'s CPU, which lowers the ratios to it by about 1%; -heap-every 0
// leaves it out).
const memSampleEvery = time.Second

// cpuMem is what one run's collector held.
type cpuMem struct {
	// rssPeakMiB is VmHWM at the end of the run: the process's peak
	// resident set since it started; 0 when unknown.
	rssPeakMiB float64
	// heapPeakMiB and heapMeanMiB are over the heap samples; heapSamples
	// counts them (0: the heap could not be read).
	heapPeakMiB, heapMeanMiB float64
	heapSamples              int
}

// memSampler samples a collector's Go heap until stop.
type memSampler struct {
	pid   int
	heap  func() float64 // bytes; <0 when it cannot be read
	stopc chan struct{}
	done  chan cpuMem
}

// startMemSampler samples heap every interval (and once at once) until
// stop, or never when every is 0; pid is the process whose VmHWM stop
// reads.
func startMemSampler(pid int, heap func() float64, every time.Duration) *memSampler {
	m := &memSampler{pid: pid, heap: heap, stopc: make(chan struct{}), done: make(chan cpuMem, 1)}
	if every <= 0 {
		go func() {
			<-m.stopc
			m.done <- cpuMem{rssPeakMiB: float64(vmHWM(pid)) / 1024}
		}()
		return m
	}
	go func() {
		var r cpuMem
		var sum float64
		sample := func() {
			if b := m.heap(); b >= 0 {
				mib := b / (1 << 20)
				r.heapPeakMiB = max(r.heapPeakMiB, mib)
				sum += mib
				r.heapSamples++
			}
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			sample()
			select {
			case <-m.stopc:
				sample() // the end of the run: what is held then
				if r.heapSamples > 0 {
					r.heapMeanMiB = sum / float64(r.heapSamples)
				}
				r.rssPeakMiB = float64(vmHWM(m.pid)) / 1024
				m.done <- r
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// stop ends the sampling (before the collector stops) and returns what
// was sampled.
func (m *memSampler) stop() cpuMem {
	close(m.stopc)
	return <-m.done
}

// columns are the run's memory columns of the cpu command's table.
func (m cpuMem) columns() string {
	heap := "n/a n/a"
	if m.heapSamples > 0 {
		heap = fmt.Sprintf("%.1f %.1f", m.heapPeakMiB, m.heapMeanMiB)
	}
	rss := "n/a"
	if m.rssPeakMiB > 0 {
		rss = fmt.Sprintf("%.1f", m.rssPeakMiB)
	}
	return rss + " " + heap
}

// writeMemSummary prints, per pipeline, the median over rounds of its
// peak RSS and Go heap peak and mean and, for each after the first, the
// median of the rounds' differences to the first's heap peak: what the
// pipeline holds beyond passing spans on.
func writeMemSummary(w io.Writer, pipelines []string, runs []cpuRun) {
	heapPeakOf := func(round int, pl string) (float64, bool) {
		for _, r := range runs {
			if r.round == round && r.pipeline == pl && r.mem.heapSamples > 0 {
				return r.mem.heapPeakMiB, true
			}
		}
		return 0, false
	}
	for i, pl := range pipelines {
		var rss, peak, mean, added []float64
		for _, r := range runs {
			if r.pipeline != pl {
				continue
			}
			if r.mem.rssPeakMiB > 0 {
				rss = append(rss, r.mem.rssPeakMiB)
			}
			if r.mem.heapSamples == 0 {
				continue
			}
			peak = append(peak, r.mem.heapPeakMiB)
			mean = append(mean, r.mem.heapMeanMiB)
			if ref, ok := heapPeakOf(r.round, pipelines[0]); ok && i > 0 {
				added = append(added, r.mem.heapPeakMiB-ref)
			}
		}
		var parts []string
		if len(rss) > 0 {
			parts = append(parts, fmt.Sprintf("peak RSS %.1f MiB", median(rss)))
		} else {
			parts = append(parts, "peak RSS unknown")
		}
		if len(peak) > 0 {
			parts = append(parts, fmt.Sprintf("Go heap peak %.1f MiB, mean %.1f MiB", median(peak), median(mean)))
		} else {
			parts = append(parts, "Go heap unknown (its metric "+heapMetric+" could not be read)")
		}
		line := fmt.Sprintf("memory %s: %s (median of %d rounds)", pl, strings.Join(parts, ", "), max(len(rss), len(peak)))
		if len(added) > 0 {
			line += fmt.Sprintf("; heap peak over %s: %+.1f MiB (median of %d rounds)", pipelines[0], median(added), len(added))
		}
		fmt.Fprintln(w, line)
	}
}
