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
// records — per-message events named in the event.name attribute for Chat
// Completions, gen_ai.client.inference.operation.details records named in
// the EventName field for the Responses API. Joined with their spans, the
// runs score like the libraries that put content on spans.
func TestContentFromLogRecords(t *testing.T) {
	n := 0
	for _, f := range fixtures {
		if f.logs == "" {
			continue
		}
		n++
		t.Run(f.file, func(t *testing.T) {
			agent, llms := split(t, loadJoined(t, f.file, f.logs))
			f.content = true                 // from the log records
			f.assistantCallsInHistory = true // the input records keep the assistant's tool calls
			t.Run("agent", func(t *testing.T) { checkAgent(t, f, agent) })
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
			// Each model call's requested tool comes with its call id.
			for k, w := range calls {
				got := llms[k].ToolCalls
				if len(got) != 1 || got[0].Name != w.name || got[0].ID != w.id || !sameJSON(t, got[0].Arguments, w.args) {
					t.Errorf("llm %d: ToolCalls = %+v, want %s(%s) id %s", k, got, w.name, w.args, w.id)
				}
			}
		})
	}
	if n < 2 {
		t.Fatalf("%d fixtures with log records, want the chat and the responses runs", n)
	}
}
