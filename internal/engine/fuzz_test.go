package engine

import (
	"context"
	"os"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
)

// FuzzConfigDecode decodes the `eval` config from YAML as the collector does
// (confmap: unmarshal, then Validate, which decodes every evaluator's
// options): any input gives a config or an error, never a panic, and a
// config that validates builds an engine.
func FuzzConfigDecode(f *testing.F) {
	for _, path := range []string{"../../examples/judge.yaml", "../../examples/evalctl.yaml", "../../examples/judge-ollama.yaml"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"evaluators: [{type: tool_error}]",
		"evaluators: [{type: tool_trajectory, max_tool_calls: 5, mode: any_order, expected: [{name: a, arguments: {x: .nan}}]}]\nmax_pending_judge_tasks: 3",
		"evaluators: [{type: token_usage, max: -1}, {type: latency, max: 1e300}]",
		"evaluators: [{type: tool_efficiency, arguments: {mode: fuzzy, fuzzy_threshold: .inf}}]\nworkers: -1",
		"evaluators: [{type: regex, pattern: '(a+)+$', when: ['attributes[\"x\"] == 1']}]\ntimeout: 1ns\nwait: 0s",
		"evaluators: [{type: structural_match, expected: {a: [1, {b: ~}]}}]\nmax_traces: 9223372036854775807",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ret, err := confmap.NewRetrievedFromYAML(data)
		if err != nil {
			return
		}
		conf, err := ret.AsConf()
		if err != nil {
			return
		}
		cfg := NewDefaultConfig()
		if err := conf.Unmarshal(&cfg); err != nil {
			return
		}
		if err := confmap.Validate(&cfg); err != nil {
			if err.Error() == "" {
				t.Fatal("empty validation error")
			}
			return
		}
		e, err := New(&cfg, componenttest.NewNopTelemetrySettings())
		if err != nil {
			t.Fatalf("a config that validates does not build: %v", err)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
