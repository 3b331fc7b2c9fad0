package engine

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
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

// versionSpellingJudge is the judge the spelling tables' judge types ask.
const versionSpellingJudge = `
judges:
  default: {endpoint: http://judge.local/v1, model: gpt-judge}
evaluators:
`

// versionOfEntry is the version of one `evaluators:` entry, given as a YAML
// flow map (name v).
func versionOfEntry(t *testing.T, entry string) string {
	t.Helper()
	return versionsOf(t, versionSpellingJudge+"  - "+entry+"\n")["v"]
}

// TestVersionSameForEquivalentSpellings: the version hashes what the
// evaluator was built from after decoding, not how the config spells it
// (docs/contract.md §24): a duration, a number, the expected tool calls, an
// option and its alias, written any way that means the same, give one
// version.
func TestVersionSameForEquivalentSpellings(t *testing.T) {
	for _, tc := range []struct {
		what      string
		spellings []string
	}{
		{"latency max as a duration, in milliseconds, as seconds", []string{
			`{type: latency, name: v, max: 2s}`,
			`{type: latency, name: v, max: 2000ms}`,
			`{type: latency, name: v, max: 2}`,
			`{type: latency, name: v, max: 2.0}`,
			`{type: latency, name: v, max: "2"}`,
			`{type: latency, name: v, max: " 2s "}`,
		}},
		{"latency max below a second", []string{
			`{type: latency, name: v, max: 1500ms}`,
			`{type: latency, name: v, max: 1.5s}`,
			`{type: latency, name: v, max: 1.5}`,
		}},
		{"expected calls as names, objects, JSON", []string{
			`{type: tool_trajectory, name: v, expected: [search_flights, book_hotel]}`,
			`{type: tool_trajectory, name: v, expected: [{name: search_flights}, {name: book_hotel}]}`,
			`{type: tool_trajectory, name: v, expected: [{name: search_flights, arguments: null}, book_hotel]}`,
			`{type: tool_trajectory, name: v, expected: '["search_flights", "book_hotel"]'}`,
			`{type: tool_trajectory, name: v, expected: '[{"name": "search_flights"}, {"name": "book_hotel"}]'}`,
		}},
		{"expected calls with arguments as a map, a JSON object, in any key order", []string{
			`{type: tool_correctness, name: v, expected: [{name: book_hotel, arguments: {city: Lisbon, nights: 5}}]}`,
			`{type: tool_correctness, name: v, expected: [{name: book_hotel, arguments: {nights: 5.0, city: Lisbon}}]}`,
			`{type: tool_correctness, name: v, expected: [{name: book_hotel, arguments: '{"nights": 5, "city": "Lisbon"}'}]}`,
			`{type: tool_correctness, name: v, expected: '[{"arguments": {"city": "Lisbon", "nights": 5}, "name": "book_hotel"}]'}`,
		}},
		{"tool_call_accuracy expected", []string{
			`{type: tool_call_accuracy, name: v, expected: [search_flights]}`,
			`{type: tool_call_accuracy, name: v, expected: [{name: search_flights}]}`,
		}},
		{"argument matching with its defaults written out", []string{
			`{type: tool_trajectory, name: v, arguments: {mode: subset}}`,
			`{type: tool_trajectory, name: v, arguments: {mode: subset, trim_strings: false, case_insensitive: false, fuzzy_threshold: 0.8}}`,
		}},
		{"argument matching of one tool with the inherited settings written out", []string{
			`{type: tool_trajectory, name: v, arguments: {mode: subset}, tool_arguments: {book_hotel: {case_insensitive: true}}}`,
			`{type: tool_trajectory, name: v, arguments: {mode: subset}, tool_arguments: {book_hotel: {mode: subset, case_insensitive: true}}}`,
		}},
		{"token_usage max and its alias max_total", []string{
			`{type: token_usage, name: v, max_total: 4000}`,
			`{type: token_usage, name: v, max: 4000}`,
			`{type: token_usage, name: v, max: 4000, max_total: 4000}`,
		}},
		{"exact_match expected and its alias expected_output", []string{
			`{type: exact_match, name: v, expected: Paris}`,
			`{type: exact_match, name: v, expected_output: Paris}`,
		}},
		{"exact_match expected JSON as YAML or as a string", []string{
			`{type: exact_match, name: v, expected: {city: Paris, n: 2}}`,
			`{type: exact_match, name: v, expected: '{"n": 2, "city": "Paris"}'}`,
			`{type: exact_match, name: v, expected_output: '{"city":"Paris","n":2.0}'}`,
		}},
		{"structural_match lenient, three ways", []string{
			`{type: structural_match, name: v, mode: lenient}`,
			`{type: structural_match, name: v, lenient: true}`,
			`{type: structural_match, name: v, strict: false}`,
		}},
		{"retrieval expected documents and its alias, as a list or JSON", []string{
			`{type: retrieval_recall, name: v, expected: [d1, d2]}`,
			`{type: retrieval_recall, name: v, expected_documents: [d1, d2]}`,
			`{type: retrieval_recall, name: v, expected: '["d1", "d2"]'}`,
		}},
		{"retrieval matching by id, three ways", []string{
			`{type: retrieval_precision, name: v, field: id}`,
			`{type: retrieval_precision, name: v, match: {field: id}}`,
			`{type: retrieval_precision, name: v, match: "field: id"}`,
		}},
		{"tool definitions as a list, as JSON, wrapped as functions", []string{
			`{type: tool_call_validity, name: v, tools: [{name: book, parameters: {type: object, required: [city]}}]}`,
			`{type: tool_call_validity, name: v, tools: '[{"name": "book", "parameters": {"required": ["city"], "type": "object"}}]'}`,
			`{type: tool_call_validity, name: v, tools: [{type: function, function: {name: book, parameters: {type: object, required: [city]}}}]}`,
			`{type: tool_call_validity, name: v, tools: [{name: book, input_schema: '{"type": "object", "required": ["city"]}'}]}`,
		}},
		{"a list as a list or as a comma-separated string", []string{
			`{type: task_completion, name: v, judge: default, tasks: [find a flight, book it]}`,
			`{type: task_completion, name: v, judge: default, tasks: "find a flight,book it"}`,
		}},
		{"llm_judge inputs as a list or as one string", []string{
			`{type: llm_judge, name: v, judge: default, criteria: "The answer is polite.", inputs: [output]}`,
			`{type: llm_judge, name: v, judge: default, criteria: "The answer is polite.", inputs: output}`,
		}},
		{"threshold as an integer or a float", []string{
			`{type: task_completion, name: v, judge: default, threshold: 1}`,
			`{type: task_completion, name: v, judge: default, threshold: 1.0}`,
		}},
	} {
		want := versionOfEntry(t, tc.spellings[0])
		for _, s := range tc.spellings[1:] {
			assert.Equal(t, want, versionOfEntry(t, s), "%s: %s and %s give different versions", tc.what, tc.spellings[0], s)
		}
	}
}

// TestVersionDiffersForDifferentBehaviour: what looks alike but decides
// verdicts differently keeps different versions.
func TestVersionDiffersForDifferentBehaviour(t *testing.T) {
	for _, tc := range []struct{ what, a, b string }{
		{"latency max", `{type: latency, name: v, max: 2s}`, `{type: latency, name: v, max: 3s}`},
		{"latency max in seconds", `{type: latency, name: v, max: 2}`, `{type: latency, name: v, max: 2.5}`},
		{"latency max in milliseconds", `{type: latency, name: v, max: 2000ms}`, `{type: latency, name: v, max: 2001ms}`},
		{"expected calls order", `{type: tool_trajectory, name: v, expected: [a, b]}`, `{type: tool_trajectory, name: v, expected: [b, a]}`},
		{"expected call without arguments and with none", `{type: tool_trajectory, name: v, expected: [{name: a}]}`,
			`{type: tool_trajectory, name: v, expected: [{name: a, arguments: {}}]}`},
		{"expected call arguments", `{type: tool_trajectory, name: v, expected: [{name: a, arguments: {n: 5}}]}`,
			`{type: tool_trajectory, name: v, expected: [{name: a, arguments: {n: "5"}}]}`},
		{"expected calls given or not", `{type: tool_trajectory, name: v}`, `{type: tool_trajectory, name: v, expected: []}`},
		{"argument mode", `{type: tool_trajectory, name: v, arguments: {mode: subset}}`, `{type: tool_trajectory, name: v, arguments: {mode: superset}}`},
		{"argument matching of one tool", `{type: tool_trajectory, name: v, arguments: {mode: subset}}`,
			`{type: tool_trajectory, name: v, arguments: {mode: subset}, tool_arguments: {book: {mode: exact}}}`},
		{"trajectory mode", `{type: tool_trajectory, name: v, mode: strict}`, `{type: tool_trajectory, name: v, mode: any_order}`},
		{"token limit on what", `{type: token_usage, name: v, max_total: 4000}`, `{type: token_usage, name: v, max_input: 4000}`},
		{"token limit", `{type: token_usage, name: v, max: 4000}`, `{type: token_usage, name: v, max: 4001}`},
		{"exact_match expected", `{type: exact_match, name: v, expected: Paris}`, `{type: exact_match, name: v, expected: paris}`},
		{"exact_match JSON or text", `{type: exact_match, name: v, expected: '{"a": 1}'}`, `{type: exact_match, name: v, expected: '{"a": 2}'}`},
		{"structural_match mode", `{type: structural_match, name: v, lenient: true}`, `{type: structural_match, name: v, lenient: false}`},
		{"retrieval expected", `{type: retrieval_recall, name: v, expected: [d1, d2]}`, `{type: retrieval_recall, name: v, expected: [d2, d3]}`},
		{"retrieval field", `{type: retrieval_precision, name: v, field: id}`, `{type: retrieval_precision, name: v, field: content}`},
		{"retrieval match", `{type: retrieval_precision, name: v, match: containment}`, `{type: retrieval_precision, name: v, match: case_insensitive}`},
		{"tool definitions", `{type: tool_call_validity, name: v, tools: [{name: book, parameters: {type: object, required: [city]}}]}`,
			`{type: tool_call_validity, name: v, tools: [{name: book, parameters: {type: object, required: [day]}}]}`},
		{"judge threshold", `{type: task_completion, name: v, judge: default, threshold: 0.7001}`, `{type: task_completion, name: v, judge: default}`},
		{"judge tasks", `{type: task_completion, name: v, judge: default, tasks: [a]}`, `{type: task_completion, name: v, judge: default, tasks: [b]}`},
		{"judge tasks, one or two", `{type: task_completion, name: v, judge: default, tasks: "a,b"}`, `{type: task_completion, name: v, judge: default, tasks: ["a,b"]}`},
		{"criteria", `{type: llm_judge, name: v, judge: default, criteria: "a,b"}`, `{type: llm_judge, name: v, judge: default, criteria: "a;b"}`},
		{"exact_match expected with a comma", `{type: exact_match, name: v, expected: "a,b"}`, `{type: exact_match, name: v, expected: [a, b]}`},
	} {
		assert.NotEqual(t, versionOfEntry(t, tc.a), versionOfEntry(t, tc.b), "%s: %s and %s give one version", tc.what, tc.a, tc.b)
	}
}
