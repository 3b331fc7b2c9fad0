package evaluators

import (
	"context"
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

func TestConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want []string // substrings of the error
	}{
		{"unknown type", Config{Type: "tool_magic"}, []string{`"tool_magic"`, "unknown type"}},
		{"unknown option", Config{Type: "tool_trajectory", Name: "booking_flow", Options: obj("modes", "strict")}, []string{`"booking_flow"`, "`modes`", "known options"}},
		// A misspelt common key lands in the type's options: the message lists the common keys too.
		{"misspelt threshold", Config{Type: "tool_trajectory", Options: obj("treshold", 0.8)}, []string{"`treshold`", "known options:", "also takes: case, examples, judge", ", threshold"}},
		{"bad mode", Config{Type: "tool_trajectory", Options: obj("mode", "sideways")}, []string{`"tool_trajectory"`, "`mode`", "sideways"}},
		{"bad correctness mode", Config{Type: "tool_correctness", Options: obj("mode", "names")}, []string{"`mode`"}},
		{"bad argument mode", Config{Type: "tool_trajectory", Options: obj("arguments", obj("mode", "loose"))}, []string{"`arguments.mode`"}},
		{"unknown argument option", Config{Type: "tool_trajectory", Options: obj("arguments", obj("trim", true))}, []string{"arguments", "trim"}},
		{"fuzzy threshold 0", Config{Type: "tool_trajectory", Options: obj("arguments", obj("mode", "fuzzy", "fuzzy_threshold", 0))}, []string{"`arguments.fuzzy_threshold`"}},
		{"fuzzy threshold > 1", Config{Type: "tool_correctness", Options: obj("arguments", obj("fuzzy_threshold", 1.5))}, []string{"`arguments.fuzzy_threshold`"}},
		{"tool_arguments bad", Config{Type: "tool_trajectory", Options: obj("tool_arguments", obj("book_hotel", obj("mode", "x")))}, []string{"`tool_arguments.book_hotel.mode`"}},
		{"bad expected", Config{Type: "tool_trajectory", Options: obj("expected", 5)}, []string{"`expected`"}},
		{"expected without name", Config{Type: "tool_call_accuracy", Options: obj("expected", []any{map[string]any{"arguments": map[string]any{}}})}, []string{"`expected`", "name"}},
		{"threshold out of range", Config{Type: "tool_error", Threshold: f64(1.5)}, []string{"threshold"}},
		{"invalid error_pattern", Config{Type: "tool_error", Options: obj("error_pattern", "(")}, []string{"`error_pattern`"}},
		{"invalid regex", Config{Type: "regex", Options: obj("pattern", "[a-")}, []string{"`pattern`"}},
		{"regex needs pattern", Config{Type: "regex"}, []string{"`pattern`"}},
		{"structural mode", Config{Type: "structural_match", Options: obj("mode", "loose")}, []string{"`mode`"}},
		{"retrieval match", Config{Type: "retrieval_recall", Options: obj("match", "fuzzy")}, []string{"`match`"}},
		{"retrieval field", Config{Type: "retrieval_precision", Options: obj("field", "title")}, []string{"`field`"}},
		{"latency needs max", Config{Type: "latency"}, []string{"`max`"}},
		{"latency negative", Config{Type: "latency", Options: obj("max", "-1s")}, []string{"`max`"}},
		{"latency bad duration", Config{Type: "latency", Options: obj("max", "soon")}, []string{"max"}},
		{"token needs a limit", Config{Type: "token_usage"}, []string{"max_input", "max_total"}},
		{"token zero", Config{Type: "token_usage", Options: obj("max_total", 0)}, []string{"`max_total`"}},
		{"max_input_args negative", Config{Type: "tool_description_reliability", Options: obj("max_input_args", -1)}, []string{"`max_input_args`"}},
		{"validity tool without name", Config{Type: "tool_call_validity", Options: obj("tools", []any{map[string]any{"description": "x"}})}, []string{"`tools[0].name`"}},
		{"validity bad schema", Config{Type: "tool_call_validity", Options: obj("tools", []any{map[string]any{"name": "a", "parameters": map[string]any{"type": 5}}})}, []string{"`tools[0].parameters`"}},
		{"name reliability takes no options", Config{Type: "tool_name_reliability", Options: obj("max_segments", 3)}, []string{"`max_segments`"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEveryTypeBuildsWithDefaults(t *testing.T) {
	need := map[string]map[string]any{
		"regex":       obj("pattern", "x"),
		"latency":     obj("max", "1s"),
		"token_usage": obj("max_total", 10),
		"cel":         obj("expression", "true"),
		"remote":      obj("endpoint", "http://localhost:1/eval"),
	}
	want := []string{"cel", "exact_match", "latency", "regex", "remote", "retrieval_precision", "retrieval_recall", "structural_match", "token_usage",
		"tool_call_accuracy", "tool_call_validity", "tool_correctness", "tool_description_reliability", "tool_efficiency",
		"tool_error", "tool_name_reliability", "tool_trajectory"}
	// Judge types are covered by the judge tests; here, the deterministic ones.
	var deterministic []string
	for _, typ := range Types() {
		if f, _ := lookup(typ); !f.NeedsJudge {
			deterministic = append(deterministic, typ)
		}
	}
	if got := strings.Join(deterministic, ","); got != strings.Join(want, ",") {
		t.Fatalf("types = %s", got)
	}
	var cfgs []Config
	for _, typ := range deterministic {
		cfgs = append(cfgs, Config{Type: typ, Options: need[typ]})
	}
	if err := ValidateAll(cfgs); err != nil {
		t.Fatal(err)
	}
	insts, err := Build(cfgs, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		if in.Level != "agent" || in.Threshold <= 0 {
			t.Errorf("%s: level %s threshold %v", in.Name, in.Level, in.Threshold)
		}
	}
}

func TestThresholdDecidesStatus(t *testing.T) {
	c := caseWith(threeExpected, calls("fetch", "transform"))
	if r := runEval(t, "tool_trajectory", obj("mode", "recall"), f64(0.6), c); r.Status != StatusPassed {
		t.Fatalf("want passed at 0.6: %+v", r)
	}
	if r := runEval(t, "tool_trajectory", obj("mode", "recall"), nil, c); r.Status != StatusFailed || r.Threshold != 1 {
		t.Fatalf("want failed at default 1.0: %+v", r)
	}
}

// A type that says it is ConversationFree must score the same when the
// adapter skips decoding the conversation: the engine relies on it.
func TestConversationFreeTypesIgnoreTheConversation(t *testing.T) {
	need := map[string]map[string]any{"latency": obj("max", "2s"), "token_usage": obj("max_total", 2000)}
	full := benchCase()
	full.Input, full.Output, full.SystemInstructions = "Book a flight to Lisbon", `{"booked": true}`, "You are a travel agent."
	full.Messages = []adapter.Message{{Role: "user", Content: full.Input}, {Role: "assistant", Content: full.Output}}
	bare := *full
	bare.Input, bare.Output, bare.SystemInstructions, bare.Messages = "", "", "", nil
	checked := 0
	for _, typ := range Types() {
		f, _ := lookup(typ)
		if !f.ConversationFree {
			continue
		}
		insts, err := Build([]Config{{Type: typ, Options: need[typ]}}, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		a := insts[0].Evaluate(context.Background(), full)
		b := insts[0].Evaluate(context.Background(), &bare)
		if a.Status != b.Status || a.Score != b.Score || a.Reason != b.Reason {
			t.Errorf("%s reads the conversation: %+v vs %+v", typ, a, b)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d ConversationFree types", checked)
	}
	for _, typ := range []string{"exact_match", "regex", "structural_match", "llm_judge"} {
		if f, _ := lookup(typ); f.ConversationFree {
			t.Errorf("%s reads the output: it must not be ConversationFree", typ)
		}
	}
}
