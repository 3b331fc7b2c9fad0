package main

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/otelcol"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The distribution's config provider warns, naming the pipeline, about a
// batch processor (or a sampler) before eval; a good shape says nothing.
// The warnings go to the collector's log (the collector hands converters
// its logger).
func TestPipelineShapeWarnings(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	set := settings().ConfigProviderSettings
	set.ResolverSettings.URIs = []string{"file:testdata/pipeline-shapes.yaml"}
	set.ResolverSettings.ConverterSettings = confmap.ConverterSettings{Logger: zap.New(core)}
	p, err := otelcol.NewConfigProvider(set)
	if err != nil {
		t.Fatal(err)
	}
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(context.Background(), factories); err != nil {
		t.Fatal(err)
	}
	got := logs.All()
	if len(got) != 2 {
		t.Fatalf("%d warnings, want 2: %v", len(got), got)
	}
	want := []string{
		`pipeline "logs/x": processor "batch/other" comes before "eval/a": it acknowledges spans before eval has them`,
		`pipeline "traces/batched": processor "batch" comes before "eval/a": it acknowledges spans before eval has them`,
	}
	for i, w := range want {
		if m := got[i].Message; len(m) < len(w) || m[:len(w)] != w {
			t.Errorf("warning %d = %q, want it to start with %q", i, m, w)
		}
	}
}

func TestPipelineWarningsSamplers(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{"service": map[string]any{"pipelines": map[string]any{
		"traces":    map[string]any{"processors": []any{"tail_sampling", "probabilistic_sampler/x", "eval"}},
		"traces/ok": map[string]any{"processors": []any{"memory_limiter", "eval", "tail_sampling"}},
	}}})
	w := pipelineWarnings(conf)
	if len(w) != 2 {
		t.Fatalf("warnings %q", w)
	}
}
