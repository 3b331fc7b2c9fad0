package interop

import (
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// loadJoined adapts a fixture's spans joined with the content log records
// the same run wrote (testdata/logs/<logs>).
func loadJoined(t *testing.T, traces, logs string) []adapter.Case {
	t.Helper()
	tb, err := os.ReadFile(filepath.Join("testdata", traces))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(tb)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := os.ReadFile(filepath.Join("testdata", "logs", logs))
	if err != nil {
		t.Fatal(err)
	}
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(lb)
	if err != nil {
		t.Fatal(err)
	}
	byTrace := adapter.GroupLogsByTrace(ld)
	groups := adapter.GroupByTrace(td)
	if len(groups) != 1 {
		t.Fatalf("%d traces, want 1", len(groups))
	}
	for id, spans := range groups {
		if len(byTrace[id]) == 0 {
			t.Fatalf("no log records of trace %s", id)
		}
		if n := adapter.JoinEvents(spans, byTrace[id]); n != 0 {
			t.Errorf("%d GenAI records found no span", n)
		}
		cases, problems := adapter.Adapt(spans)
		if len(problems) > 0 {
			t.Errorf("problems: %q", problems)
		}
		return cases
	}
	return nil
}

// The JS @opentelemetry/instrumentation-openai puts every message in log
// records (event.name attribute, structured bodies, tool results with `id`):
// joined with its spans, the run scores like the libraries that put content
// on spans.
func TestOTelInstrumentationOpenAILogsJoined(t *testing.T) {
	cases := loadJoined(t, "otel-instrumentation-openai.json", "otel-instrumentation-openai.logs.json")
	var agent adapter.Case
	var llms []adapter.Case
	for _, c := range cases {
		switch c.Level {
		case adapter.LevelAgent:
			agent = c
		case adapter.LevelLLM:
			llms = append(llms, c)
		}
	}
	if len(llms) != 3 {
		t.Fatalf("%d llm cases, want 3", len(llms))
	}
	f := fixture{file: "otel-instrumentation-openai.json", content: true}
	for _, fx := range fixtures {
		if fx.file == f.file {
			f = fx
		}
	}
	f.content = true                 // from the log records
	f.assistantCallsInHistory = true // gen_ai.assistant.message records carry tool_calls
	checkAgent(t, f, agent)
	for i, c := range llms {
		if c.Input != userRequest {
			t.Errorf("llm %d: Input = %q", i, c.Input)
		}
		if c.SystemInstructions != systemPrompt {
			t.Errorf("llm %d: SystemInstructions = %q", i, c.SystemInstructions)
		}
	}
	if llms[2].Output != finalText {
		t.Errorf("last llm: Output = %q, want the final text", llms[2].Output)
	}
	// The first model call asked for search_flights with its id.
	var first []adapter.ToolCall
	for _, m := range llms[0].Messages {
		if m.Role == "assistant" {
			first = append(first, m.ToolCalls...)
		}
	}
	if len(first) != 1 || first[0].Name != "search_flights" || first[0].ID != "call_sf_001" {
		t.Errorf("first call's requested tools = %+v, want search_flights call_sf_001", first)
	}
}
