package interop

import (
	"path/filepath"
	"testing"
)

// The JS @opentelemetry/instrumentation-openai puts every message in log
// records — per-message events named in the event.name attribute for Chat
// Completions, gen_ai.client.inference.operation.details records named in
// the EventName field for the Responses API. Its spans alone carry no
// content; joined with the records (as TestRealLibraries does), each model
// call has its input, system prompt, output and requested calls with ids.
func TestContentFromLogRecords(t *testing.T) {
	n := 0
	for _, f := range fixtures {
		if f.logs == "" {
			continue
		}
		n++
		t.Run(f.file, func(t *testing.T) {
			_, bare := split(t, f.script, adapt(t, decode(t, filepath.Join("testdata", f.file))))
			for i, c := range bare {
				if c.Input != "" || c.Output != "" || len(c.ToolCalls) != 0 {
					t.Errorf("llm %d without the log records: input %q output %q calls %d: the spans carry content", i, c.Input, c.Output, len(c.ToolCalls))
				}
			}
			_, llms := split(t, f.script, load(t, f))
			for i, c := range llms {
				if c.Input != userRequest || c.SystemInstructions != systemPrompt {
					t.Errorf("llm %d: Input = %q, SystemInstructions = %q", i, c.Input, c.SystemInstructions)
				}
			}
			last := len(llms) - 1
			if llms[last].Output != finalText {
				t.Errorf("last llm: Output = %q, want the final text", llms[last].Output)
			}
			// Each model call's requested tools come with their call ids.
			for k, turn := range f.script.turns {
				got := llms[k].ToolCalls
				if len(got) != len(turn.calls) {
					t.Errorf("llm %d: %d calls, want %d", k, len(got), len(turn.calls))
					continue
				}
				for j, w := range turn.calls {
					if got[j].Name != w.name || got[j].ID != w.id || !sameJSON(t, got[j].Arguments, w.args) {
						t.Errorf("llm %d call %d = %+v, want %s(%s) id %s", k, j, got[j], w.name, w.args, w.id)
					}
				}
			}
		})
	}
	if n < 3 {
		t.Fatalf("%d fixtures with log records, want the chat (both scripts) and the Responses runs", n)
	}
}
