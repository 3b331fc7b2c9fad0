package main

import (
	"bytes"
	"os"
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
