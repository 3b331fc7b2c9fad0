package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// processCPU reads a process's CPU time: this one's grows as it works.
func TestProcessCPU(t *testing.T) {
	before, err := processCPU(os.Getpid())
	require.NoError(t, err)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := processCPU(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, after, before)
	_, err = processCPU(-1)
	assert.Error(t, err)
}

// The two pipelines differ only in the eval processor.
func TestCPUConfigs(t *testing.T) {
	p := ports{grpc: 1, health: 2, pprof: 3, metrics: 4}
	var cfgs []string
	for _, pl := range cpuPipelines {
		cfg := collectorConfig(scenario{name: "cpu", eval: "wait: 1s", evals: normalEvaluators, processors: pl}, p, "127.0.0.1:5", "", "")
		assert.Contains(t, cfg, "      processors: "+pl+"\n")
		assert.Contains(t, cfg, "\n  batch: {}")
		cfgs = append(cfgs, cfg)
	}
	assert.Equal(t, strings.Replace(cfgs[0], "[batch]", "[eval, batch]", 1), cfgs[1])
	assert.NotContains(t, cfgs[0]+cfgs[1], "groupbytrace")

	// -groupbytrace adds a third pipeline, and its processor's config: it
	// holds each trace as long as eval waits.
	pls := cpuOptions{groupbytrace: true}.pipelines()
	require.Equal(t, append(slices.Clone(cpuPipelines), "[groupbytrace, batch]"), pls)
	assert.Equal(t, cpuPipelines, cpuOptions{}.pipelines())
	gbt := collectorConfig(scenario{name: "cpu", eval: "wait: 1s", evals: normalEvaluators, processors: pls[2]}, p, "127.0.0.1:5", "", "")
	assert.Contains(t, gbt, "      processors: [groupbytrace, batch]\n")
	assert.Contains(t, gbt, "\n  groupbytrace: {wait_duration: 1s}")
	assert.Equal(t, strings.Replace(cfgs[0], "[batch]", "[groupbytrace, batch]", 1),
		strings.Replace(gbt, "\n  groupbytrace: {wait_duration: 1s}", "", 1))

	// -floor adds [resultfloor, batch], otherwise the same config.
	pls = cpuOptions{floor: true, stream: true}.pipelines()
	require.Equal(t, append(slices.Clone(cpuPipelines), streamPipeline, floorPipeline), pls)
	floor := collectorConfig(scenario{name: "cpu", eval: "wait: 1s", evals: normalEvaluators, processors: floorPipeline}, p, "127.0.0.1:5", "", "")
	assert.Equal(t, strings.Replace(cfgs[0], "[batch]", floorPipeline, 1),
		strings.Replace(floor, "\n  resultfloor: {}", "", 1))
}

func TestCPUUsageAndMedian(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, realMain([]string{"cpu", "-rounds", "0"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: evalbridge-loadgen cpu")
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"cpu", "-plain", "1.5"}, &out, &errb), "a share above 1 is refused")
	assert.Contains(t, errb.String(), "usage: evalbridge-loadgen cpu")
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	assert.Equal(t, 0.0, median(nil))
}

// The summary's ratios: of the medians, and the median of each round's own
// ratio, which a load drifting between rounds moves less.
func TestCPUSummary(t *testing.T) {
	run := func(round int, pl string, cpuMs int64) cpuRun {
		return cpuRun{round: round, pipeline: pl, spans: 1000, cpu: time.Duration(cpuMs) * time.Millisecond}
	}
	pls := []string{"[batch]", "[eval, batch]", "[groupbytrace, batch]"}
	runs := []cpuRun{
		run(1, pls[0], 40), run(1, pls[1], 52), run(1, pls[2], 80),
		run(2, pls[2], 60), run(2, pls[1], 36), run(2, pls[0], 30), // a quieter round
		run(3, pls[0], 50), run(3, pls[1], 60), run(3, pls[2], 90),
	}
	var out bytes.Buffer
	writeCPUSummary(&out, pls, runs)
	assert.Equal(t, "median CPU µs/span: [batch] 40.0, [eval, batch] 52.0, [groupbytrace, batch] 80.0\n"+
		"ratio [eval, batch] / [batch]: 1.300 (median of the 3 rounds' ratios: 1.200)\n"+
		"ratio [groupbytrace, batch] / [batch]: 2.000 (median of the 3 rounds' ratios: 2.000)\n", out.String())
}

// -groupbytrace with a collector built without it stops before any load,
// saying how to build one.
func TestCPUGroupbytraceNeedsTheTaggedBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "otelcol")
	plain := "#!/bin/sh\nprintf 'processors:\\n    - name: batch\\n    - name: eval\\n'\n"
	require.NoError(t, os.WriteFile(bin, []byte(plain), 0o755))
	var out, errb bytes.Buffer
	assert.Equal(t, 1, realMain([]string{"cpu", "-collector", bin, "-groupbytrace"}, &out, &errb))
	assert.Contains(t, errb.String(), "has no groupbytrace processor: build it with go build -tags groupbytrace")
	assert.NotContains(t, out.String(), "# round", "no load ran")

	tagged := "#!/bin/sh\nprintf 'processors:\\n    - name: batch\\n    - name: groupbytrace\\n'\n"
	require.NoError(t, os.WriteFile(bin, []byte(tagged), 0o755))
	assert.NoError(t, hasProcessor(t.Context(), bin, "groupbytrace"))
}

// -stream adds [eval, batch] with eval in stream mode: the same config as
// [eval, batch] but for mode: stream.
func TestCPUStreamPipeline(t *testing.T) {
	pls := cpuOptions{stream: true}.pipelines()
	require.Equal(t, append(slices.Clone(cpuPipelines), streamPipeline), pls)
	p := ports{grpc: 1, health: 2, pprof: 3, metrics: 4}
	hold := collectorConfig(cpuScenario("cpu", "[eval, batch]", cpuWait), p, "127.0.0.1:5", "", "")
	stream := collectorConfig(cpuScenario("cpu", streamPipeline, cpuWait), p, "127.0.0.1:5", "", "")
	assert.Contains(t, stream, "      processors: [eval, batch]\n")
	assert.Equal(t, hold, strings.Replace(stream, "\n    mode: stream", "", 1))
	assert.NotEqual(t, hold, stream)
}

// The delay summary: percentiles per pipeline, and the p99 each adds over
// the first pipeline in the same round.
func TestCPUDelaySummary(t *testing.T) {
	ds := func(base time.Duration) []time.Duration {
		var out []time.Duration
		for i := 1; i <= 100; i++ {
			out = append(out, base+time.Duration(i)*time.Millisecond)
		}
		return out
	}
	runs := []cpuRun{
		{round: 1, pipeline: "[batch]", delays: ds(0)},
		{round: 1, pipeline: streamPipeline, delays: ds(time.Millisecond)},
	}
	var out bytes.Buffer
	writeDelaySummary(&out, []string{"[batch]", streamPipeline}, runs)
	assert.Equal(t, "span delay [batch]: p50 50.0 ms, p90 90.0 ms, p99 99.0 ms\n"+
		"span delay [eval (stream), batch]: p50 51.0 ms, p90 91.0 ms, p99 100.0 ms; p99 added over [batch]: 1.0 ms (median of 1 rounds)\n", out.String())
}
