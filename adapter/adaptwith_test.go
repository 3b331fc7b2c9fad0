package adapter

import (
	"reflect"
	"testing"
)

// fixtures are every convention's travel trace plus the traces of the
// adapter tests that exercise case building.
func fixtures(t testing.TB) map[string][]SpanRef {
	return map[string][]SpanRef{
		"otel-structured": buildOTel(t, false).refs(),
		"otel-json":       buildOTel(t, true).refs(),
		"otel-events":     buildOTelEvents(t).refs(),
		"openinference":   buildOpenInference(t).refs(),
		"openllmetry":     buildOpenLLMetry(t).refs(),
		"vercel":          buildVercel(t).refs(),
		"bench":           benchTrace(t).refs(),
	}
}

func levelCases(cases []Case, l Level) []Case {
	var out []Case
	for _, c := range cases {
		if c.Level == l {
			out = append(out, c)
		}
	}
	return out
}

// withoutProblems clears Problems: a single level reads less and so may
// report fewer problems.
func withoutProblems(cases []Case) []Case {
	out := make([]Case, len(cases))
	for i, c := range cases {
		c.Problems = nil
		out[i] = c
	}
	return out
}

func TestAdaptWithSameCasesAsAdapt(t *testing.T) {
	for name, refs := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			all, _ := Adapt(refs)
			agents, _ := AdaptWith(refs, Options{AgentCases: true})
			if want := levelCases(all, LevelAgent); len(want) == 0 || !reflect.DeepEqual(agents, want) {
				t.Errorf("agent cases differ:\n got %+v\nwant %+v", agents, want)
			}
			llms, _ := AdaptWith(refs, Options{LLMCases: true})
			if want := levelCases(all, LevelLLM); len(want) == 0 || !reflect.DeepEqual(llms, want) {
				t.Errorf("llm cases differ:\n got %+v\nwant %+v", llms, want)
			}
			both, _ := AdaptWith(refs, Options{LLMCases: true, AgentCases: true})
			if !reflect.DeepEqual(both, all) {
				t.Errorf("AdaptWith(both) differs from Adapt")
			}
			if none, problems := AdaptWith(refs, Options{}); none != nil || problems != nil {
				t.Errorf("no level: %v %v", none, problems)
			}
		})
	}
}

// checkLevels checks, for fuzzed input, that each level alone builds the
// cases Adapt builds of that level (problems aside).
func checkLevels(t *testing.T, spans []SpanRef, all []Case) {
	t.Helper()
	for _, l := range []Level{LevelAgent, LevelLLM} {
		cases, _ := AdaptWith(spans, Options{AgentCases: l == LevelAgent, LLMCases: l == LevelLLM})
		got, want := withoutProblems(cases), withoutProblems(levelCases(all, l))
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s cases differ:\n got %+v\nwant %+v", l, got, want)
		}
	}
}
