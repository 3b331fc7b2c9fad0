package engine

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
)

// versionsOf builds an engine from a YAML config, as the collector and
// evalctl decode it, and returns each instance's version by name.
func versionsOf(t *testing.T, yaml string) map[string]string {
	t.Helper()
	ret, err := confmap.NewRetrievedFromYAML([]byte(yaml))
	require.NoError(t, err)
	raw, err := ret.AsConf()
	require.NoError(t, err)
	cfg := NewDefaultConfig()
	require.NoError(t, raw.Unmarshal(&cfg))
	require.NoError(t, confmap.Validate(&cfg))
	e, err := New(&cfg, componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	out := map[string]string{}
	for _, in := range e.Instances() {
		out[in.Name] = in.Version
	}
	return out
}

const versionJudge = `
judges:
  default:
    endpoint: http://judge.local/v1
    model: gpt-judge
`

const versionEvaluators = `
evaluators:
  - {type: tool_trajectory, name: flow}
  - {type: cel, name: rule, expression: "size(case.tool_calls) > 0"}
  - {type: task_completion, name: done, judge: default}
  - {type: llm_judge, name: polite, judge: default, criteria: "The answer is polite."}
  - {type: tool_argument_accuracy, name: args, judge: default}
  - {type: remote, name: ext, endpoint: "http://scorer.local/score"}
`

// TestVersionDefaultsWrittenOutChangeNothing: every option, common key and
// judge setting written at its default gives the version of the config
// that leaves it out (docs/contract.md §24).
func TestVersionDefaultsWrittenOutChangeNothing(t *testing.T) {
	omitted := versionsOf(t, versionJudge+versionEvaluators)
	written := versionsOf(t, `
judges:
  default:
    endpoint: http://judge.local/v1
    model: gpt-judge
    temperature: 0
    max_tokens: 1024
    json_response: false
    max_field_bytes: 8192
evaluators:
  - {type: tool_trajectory, name: flow, mode: in_order, threshold: 1.0, case: agent, max_tool_calls: 1000}
  - {type: cel, name: rule, expression: "size(case.tool_calls) > 0", cost_limit: 1000000, threshold: 1}
  - {type: task_completion, name: done, judge: default, threshold: 0.7, case: agent}
  - {type: llm_judge, name: polite, judge: default, criteria: "The answer is polite.", score_range: [0, 1]}
  - {type: tool_argument_accuracy, name: args, judge: default, max_calls: 8}
  - {type: remote, name: ext, endpoint: "http://scorer.local/score", max_field_bytes: 8192}
`)
	hashed := regexp.MustCompile(`^sha256:[0-9a-f]{12}$`)
	for name, v := range omitted {
		require.Regexp(t, hashed, v, name)
		require.Equal(t, v, written[name], "%s: defaults written out changed the version", name)
	}
	require.Len(t, omitted, 6)
}

// TestVersionIgnoresWhereAndHowOften: endpoints, keys, headers, timeouts,
// concurrency, rates, budgets, prices, cache, retries, sample_rate and the
// judge's name do not change what a verdict means.
func TestVersionIgnoresWhereAndHowOften(t *testing.T) {
	base := versionsOf(t, versionJudge+versionEvaluators)
	moved := versionsOf(t, `
judges:
  other:
    endpoint: https://elsewhere.example/v1
    model: gpt-judge
    api_key: sk-secret
    headers: {X-Team: evals}
    timeout: 3s
    max_concurrency: 9
    requests_per_minute: 60
    tokens_per_minute: 9000
    budget: {tokens_per_hour: 100000, cost_per_day: 5}
    price: {input_per_million_tokens: 1, output_per_million_tokens: 2, currency: USD}
    cache_size: 0
    retry: {max_attempts: 7}
evaluators:
  - {type: tool_trajectory, name: flow, sample_rate: 0.5}
  - {type: cel, name: rule, expression: "size(case.tool_calls) > 0", sample_rate: 0.1}
  - {type: task_completion, name: done, judge: other, sample_rate: 0.2}
  - {type: llm_judge, name: polite, judge: other, criteria: "The answer is polite."}
  - {type: tool_argument_accuracy, name: args, judge: other}
  - {type: remote, name: ext, endpoint: "https://other.example/v2", api_key: k, timeout: 2s, max_concurrency: 3, retry: {max_attempts: 5}}
`)
	require.Equal(t, base, moved)
}

// TestVersionChangesWithBehaviour: what decides a verdict changes the version.
func TestVersionChangesWithBehaviour(t *testing.T) {
	base := versionsOf(t, versionJudge+versionEvaluators)
	for _, tc := range []struct {
		what, yaml string
		changed    []string
	}{
		{"prompt criteria", versionJudge + `
evaluators:
  - {type: llm_judge, name: polite, judge: default, criteria: "The answer is polite and short."}
`, []string{"polite"}},
		{"judge model", `
judges:
  default: {endpoint: http://judge.local/v1, model: gpt-judge-2}
evaluators:
  - {type: task_completion, name: done, judge: default}
  - {type: llm_judge, name: polite, judge: default, criteria: "The answer is polite."}
`, []string{"done", "polite"}},
		{"judge temperature", `
judges:
  default: {endpoint: http://judge.local/v1, model: gpt-judge, temperature: 0.7}
evaluators:
  - {type: task_completion, name: done, judge: default}
`, []string{"done"}},
		{"judge max_field_bytes", `
judges:
  default: {endpoint: http://judge.local/v1, model: gpt-judge, max_field_bytes: 100}
evaluators:
  - {type: task_completion, name: done, judge: default}
`, []string{"done"}},
		{"threshold, mode, when, expression, case", versionJudge + `
evaluators:
  - {type: tool_trajectory, name: flow, mode: strict}
  - {type: cel, name: rule, expression: "size(case.tool_calls) > 1"}
  - {type: task_completion, name: done, judge: default, threshold: 0.8}
  - {type: tool_argument_accuracy, name: args, judge: default, max_calls: 9}
  - {type: remote, name: ext, endpoint: "http://scorer.local/score", when: ['name == "x"']}
`, []string{"flow", "rule", "done", "args", "ext"}},
	} {
		got := versionsOf(t, tc.yaml)
		for _, name := range tc.changed {
			require.NotEqual(t, base[name], got[name], "%s: %s kept its version", tc.what, name)
		}
	}
}

// TestVersionExamplesArePartOfIt: few-shot examples change the version by
// their content, not their file's name.
func TestVersionExamplesArePartOfIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	one := write("a.jsonl", `{"input":"Book LHR-CDG","output":"Booked.","label":"pass","critique":"did it"}`+"\n")
	same := write("b.jsonl", `{"input":"Book LHR-CDG","output":"Booked.","label":"pass","critique":"did it"}`+"\n")
	other := write("c.jsonl", `{"input":"Book LHR-CDG","output":"Booked.","label":"fail","critique":"wrong day"}`+"\n")
	with := func(path string) string {
		return versionsOf(t, versionJudge+"evaluators:\n  - {type: task_completion, name: done, judge: default, examples: "+path+"}\n")["done"]
	}
	base := versionsOf(t, versionJudge+versionEvaluators)["done"]
	require.NotEqual(t, base, with(one))
	require.Equal(t, with(one), with(same))
	require.NotEqual(t, with(one), with(other))
}

// TestVersionPinned pins two computed versions: they must not move between
// processes, restarts or releases unless what they hash changes (then this
// test says so, like the prompt golden files).
func TestVersionPinned(t *testing.T) {
	got := versionsOf(t, versionJudge+versionEvaluators)
	require.Equal(t, map[string]string{"flow": pinnedFlow, "done": pinnedDone},
		map[string]string{"flow": got["flow"], "done": got["done"]})
}

const (
	pinnedFlow = "sha256:bef6f0c5acff"
	pinnedDone = "sha256:b346fe2d2ee3"
)

// TestResultsCarryProvenance: the events written on the span and the
// results reported carry each instance's version and type; `version:`
// names it.
func TestResultsCarryProvenance(t *testing.T) {
	e := newEngine(t, map[string]any{"evaluators": []any{
		map[string]any{"type": "tool_trajectory", "name": "booking_flow", "mode": "strict", "version": "v3"},
		map[string]any{"type": "tool_error"},
		map[string]any{"type": "cel", "name": "rule", "expression": "size(case.tool_calls) > 0"},
	}})
	spans := loadTrace(t, "../../examples/traces/travel-agent-wrong-order.json")
	got := results(e.ScoreTrace(context.Background(), spans))
	want := map[string][2]string{
		"booking_flow": {"v3", evaluators.EvaluatorTypeDeterministic},
		"tool_error":   {e.Instances()[1].Version, evaluators.EvaluatorTypeDeterministic},
		"rule":         {e.Instances()[2].Version, evaluators.EvaluatorTypeCEL},
	}
	require.Regexp(t, `^sha256:`, want["tool_error"][0])
	for name, w := range want {
		require.Equal(t, w, [2]string{got[name].Version, got[name].EvaluatorType}, name)
	}
	agent := findSpan(spans, "invoke_agent travel_agent")
	seen := map[string][2]string{}
	evs := agent.Events()
	for i := 0; i < evs.Len(); i++ {
		a := evs.At(i).Attributes()
		name, _ := a.Get("gen_ai.evaluation.name")
		v, _ := a.Get(annotator.AttrEvaluatorVersion)
		ty, _ := a.Get(annotator.AttrEvaluatorType)
		seen[name.Str()] = [2]string{v.Str(), ty.Str()}
	}
	require.Equal(t, want, seen)
}
