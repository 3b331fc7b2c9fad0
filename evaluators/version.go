package evaluators

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// Evaluator provenance (docs/contract.md §24): every result carries its
// instance's version and type. Without `version:`, the version is
// "sha256:" and 12 hex digits of a canonical encoding (JSON, keys sorted,
// numbers as JSON numbers) of what decides its verdicts:
//   - type, threshold and case level after defaults, `when`, `run_if`,
//     max_tool_calls after its default;
//   - the options, each after defaults: an option is left out when the
//     evaluator built without it is the same as with it (sameBehaviour), so
//     writing a default out changes nothing; and as decoded, not as spelt
//     (spelledOptions: 2s, 2000ms and 2 are one limit, expected calls as
//     names, objects or JSON one expectation, an alias its option);
//   - with a judge: the judge's Behaviour (model, temperature, max_tokens,
//     json_response, max_field_bytes) and the prompts the instance asks on
//     fixed probe cases (probeCases), which hold the prompt templates, the
//     options that go into them and the few-shot examples.
// Endpoints, keys, headers, timeouts, concurrency, rates, budgets, prices,
// cache, retries and sample_rate are not part of it, nor is the judge's name.
// Nothing in it depends on the process (no pointers, no map order), so the
// same config has the same version on every collector, after a restart and
// in evalctl.

// The evaluator types of §24.
const (
	EvaluatorTypeDeterministic = "deterministic"
	EvaluatorTypeJudge         = "llm_judge"
	EvaluatorTypeCEL           = "cel"
	EvaluatorTypeRemote        = "remote"
	// EvaluatorTypeHuman is the type of human labels (§25), which no
	// instance has; readers of results compare against it.
	EvaluatorTypeHuman = "human"
)

// versionPrefix starts every computed version.
const versionPrefix = "sha256:"

// maxVersionBytes bounds an explicit `version`: it is written on every
// result and is a metric attribute.
const maxVersionBytes = 128

func validateVersion(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > maxVersionBytes {
		return fmt.Errorf("version: %d bytes, more than %d", len(v), maxVersionBytes)
	}
	if strings.TrimSpace(v) != v || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("version: %q must be printable, without leading or trailing spaces", v)
	}
	if strings.HasPrefix(v, versionPrefix) {
		return fmt.Errorf("version: %q starts with %q, which marks computed versions; name yours otherwise", v, versionPrefix)
	}
	return nil
}

// evaluatorType is the §24 type of an instance: every judge type, and a
// deterministic type with judge checks, is llm_judge.
func evaluatorType(f factory, c *Config) string {
	switch {
	case f.NeedsJudge || c.Judge != "":
		return EvaluatorTypeJudge
	case f.Type == "cel":
		return EvaluatorTypeCEL
	case f.Type == "remote":
		return EvaluatorTypeRemote
	}
	return EvaluatorTypeDeterministic
}

// versionedOptions is implemented by an evaluator whose options mostly say
// where and how to call, not what (remote): it gives the ones that count,
// after defaults, instead of effectiveOptions' comparison.
type versionedOptions interface {
	versionOptions() map[string]any
}

// behaviour is what the version hashes.
type behaviour struct {
	Type         string           `json:"type"`
	Threshold    float64          `json:"threshold"`
	Case         adapter.Level    `json:"case"`
	When         []string         `json:"when,omitempty"`
	RunIf        string           `json:"run_if,omitempty"`
	MaxToolCalls int              `json:"max_tool_calls,omitempty"`
	Options      map[string]any   `json:"options,omitempty"`
	Judge        *judge.Behaviour `json:"judge,omitempty"`
	Prompts      []string         `json:"prompts,omitempty"`
}

// behaviourVersion is the computed version of an instance built from c
// with deps (the deps Build gave its type's New).
func behaviourVersion(f factory, c *Config, in *Instance, deps Deps) string {
	b := behaviour{Type: c.Type, Threshold: in.Threshold, Case: in.Level, When: c.When,
		RunIf: strings.TrimSpace(c.RunIf), MaxToolCalls: in.MaxToolCalls}
	probe := deps
	var rec *promptRecorder
	if c.Judge != "" {
		jb := judge.Config{}.Behaviour()
		if jc, ok := deps.JudgeConfigs[c.Judge]; ok {
			jb = jc.Behaviour()
		}
		b.Judge = &jb
		rec = &promptRecorder{maxFieldBytes: jb.MaxFieldBytes}
		probe.Judges = map[string]Judge{c.Judge: rec}
	}
	b.Options = effectiveOptions(f, c, probe)
	if rec != nil {
		if ev, err := f.New(c.optionsConf(), probe); err == nil {
			for _, pc := range probeCases() {
				ev.Evaluate(context.Background(), pc.c)
			}
		}
		b.Prompts = rec.prompts
	}
	return versionOf(b)
}

// versionOf hashes the canonical JSON of b.
func versionOf(b behaviour) string {
	data, err := json.Marshal(b)
	if err != nil {
		// Options are YAML values (strings, numbers, lists, maps): only a
		// NaN or an infinity cannot be encoded. Say so in the version
		// rather than give two behaviours one.
		data = fmt.Appendf(nil, "%#v", b)
	}
	sum := sha256.Sum256(data)
	return versionPrefix + hex.EncodeToString(sum[:])[:12]
}

// effectiveOptions is c's options as canonical JSON values, without those
// that leave the built evaluator as it is without them (written at their
// default); or what the evaluator says counts (versionedOptions).
func effectiveOptions(f factory, c *Config, deps Deps) map[string]any {
	full, err := f.New(c.optionsConf(), deps)
	if v, ok := full.(versionedOptions); err == nil && ok {
		return canonicalValue(v.versionOptions()).(map[string]any)
	}
	if len(c.Options) == 0 {
		return nil
	}
	kept := maps.Clone(c.Options)
	if err == nil {
		// One at a time, in key order, each against what is still kept:
		// an option and its alias written together (max: 5, max_total: 5)
		// lose one, not both.
		for _, k := range slices.Sorted(maps.Keys(c.Options)) {
			without := maps.Clone(kept)
			delete(without, k)
			ev, err := f.New(confmap.NewFromStringMap(without), deps)
			if err == nil && sameBehaviour(reflect.ValueOf(full), reflect.ValueOf(ev), map[[2]uintptr]bool{}) {
				kept = without
			}
		}
		kept = listsAsLists(f, kept, full, deps)
		if s, ok := full.(spelledOptions); ok && len(kept) > 0 {
			kept = s.canonicalOptions(kept)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := make(map[string]any, len(kept))
	for k, v := range kept {
		out[k] = canonicalValue(v)
	}
	return out
}

// listsAsLists spells as a list every option of kept written as a string
// that the evaluator decodes as the list of its comma-separated parts
// (the collector's config reads `tasks: "a,b"` as `tasks: [a, b]`): the
// evaluator built with the list instead is the same as full.
func listsAsLists(f factory, kept map[string]any, full Evaluator, deps Deps) map[string]any {
	for _, k := range slices.Sorted(maps.Keys(kept)) {
		s, ok := kept[k].(string)
		if !ok {
			continue
		}
		list := []any{}
		if s != "" {
			for part := range strings.SplitSeq(s, ",") {
				list = append(list, part)
			}
		}
		with := maps.Clone(kept)
		with[k] = list
		ev, err := f.New(confmap.NewFromStringMap(with), deps)
		if err == nil && sameBehaviour(reflect.ValueOf(full), reflect.ValueOf(ev), map[[2]uintptr]bool{}) {
			kept = with
		}
	}
	return kept
}

// spelledOptions is implemented by an evaluator whose options can be
// written several ways that mean the same: a duration as 2s, 2000ms or 2;
// expected calls as names, objects or a JSON string; an option or its
// alias. Given the options the version keeps, as written, it returns them
// in one spelling of what it decoded, so that the version hashes what the
// evaluator was built from, not how the config said it.
type spelledOptions interface {
	canonicalOptions(kept map[string]any) map[string]any
}

// respelled replaces, in kept, the options names (an option and its
// aliases) by spelling, the one way of writing what they decoded to, when
// kept has any of them. A nil value in spelling is left out.
func respelled(kept map[string]any, names []string, spelling map[string]any) map[string]any {
	if !slices.ContainsFunc(names, func(n string) bool { _, ok := kept[n]; return ok }) {
		return kept
	}
	for _, n := range names {
		delete(kept, n)
	}
	for k, v := range spelling {
		if v != nil {
			kept[k] = v
		}
	}
	return kept
}

// canonicalValue is v as encoding/json reads it back: every number a
// float64 (20 and 20.0 agree), maps with string keys.
func canonicalValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return string(data)
	}
	return out
}

// sameBehaviour compares two evaluators built from different options,
// field by field, unexported fields included: functions by code, pointers
// and interfaces by what they point to. It errs towards "different" (a map
// keyed by pointers, a random seed): then the option is kept in the
// version, which is only ever more specific.
func sameBehaviour(a, b reflect.Value, seen map[[2]uintptr]bool) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return x == y || (math.IsNaN(x) && math.IsNaN(y))
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.Pointer() == b.Pointer()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		key := [2]uintptr{a.Pointer(), b.Pointer()}
		if key[0] == key[1] || seen[key] {
			return true
		}
		seen[key] = true
		return sameBehaviour(a.Elem(), b.Elem(), seen)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameBehaviour(a.Elem(), b.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !sameBehaviour(a.Field(i), b.Field(i), seen) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 || a.Pointer() == b.Pointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if !sameBehaviour(a.Index(i), b.Index(i), seen) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.Pointer() == b.Pointer() {
			return true
		}
		iter := a.MapRange()
		for iter.Next() {
			k := iter.Key()
			if !isComparableKey(k) {
				return false
			}
			bv := b.MapIndex(k)
			if !bv.IsValid() || !sameBehaviour(iter.Value(), bv, seen) {
				return false
			}
		}
		return true
	}
	return false
}

// isComparableKey says a map key means the same in another map: a value,
// not a pointer (two builds never share one).
func isComparableKey(k reflect.Value) bool {
	switch k.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Chan, reflect.UnsafePointer, reflect.Func:
		return false
	case reflect.Struct, reflect.Array:
		return k.Type().Comparable() && !strings.Contains(k.Type().String(), "*")
	}
	return true
}

// promptRecorder is the judge a version's probes ask: it keeps each
// question and answers none, so an evaluator stops after its first.
type promptRecorder struct {
	maxFieldBytes int
	prompts       []string
}

func (r *promptRecorder) Complete(_ context.Context, msgs []judge.Message) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	r.prompts = append(r.prompts, b.String())
	return "", errProbe
}

func (r *promptRecorder) MaxFieldBytes() int { return r.maxFieldBytes }

var errProbe = fmt.Errorf("version probe: not asked")

// probeCase is a fixed case the prompts are recorded on.
type probeCase struct {
	name string
	c    *adapter.Case
}

// probeCases are fixed cases every judge type asks about: one with every
// expectation set and a conversation, one with none, one with tasks only,
// since the prompts differ by what the span carries. TestPromptGolden pins
// the prompts asked on them, word for word.
func probeCases() []probeCase {
	calls := []adapter.ToolCall{
		{Name: "search_flights", Arguments: map[string]any{"from": "LHR", "to": "CDG", "date": "2026-05-01"},
			HasResult: true, Result: `{"flights":[{"id":"AF1081","price":120}]}`},
		{Name: "book_flight", Arguments: map[string]any{"flight_id": "AF1081", "passenger": "Ada"},
			HasResult: true, Result: `{"error":"card declined"}`, Errored: true, ErrorMessage: "card declined"},
		{Name: "book_flight", Arguments: map[string]any{"flight_id": "AF1081", "passenger": "Ada", "card": "backup"},
			HasResult: true, Result: `{"booking":"B42"}`},
	}
	defs := []adapter.ToolDefinition{
		{Name: "search_flights", Description: "Search flights between two airports on a date.",
			Parameters: map[string]any{"type": "object", "required": []any{"from", "to"}, "properties": map[string]any{
				"from": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"}, "date": map[string]any{"type": "string"}}}},
		{Name: "book_flight", Description: "Book a flight.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"flight_id": map[string]any{"type": "string", "description": "the flight"}, "passenger": map[string]any{}}}},
	}
	msgs := []adapter.Message{
		{Role: "system", Content: "You are a travel agent."},
		{Role: "user", Content: "My name is Ada and I am vegetarian."},
		{Role: "assistant", Content: "Noted, Ada. Where would you like to go?"},
		{Role: "user", Content: "Book me a flight from London to Paris on 1 May."},
		{Role: "assistant", Content: "I will search flights first, then book the cheapest."},
		{Role: "assistant", Content: "Booked AF1081 (booking B42) with a vegetarian meal."},
	}
	full := &adapter.Case{
		Level: adapter.LevelAgent, Input: "Book me a flight from London to Paris on 1 May.",
		Output:   "Booked AF1081 (booking B42) with a vegetarian meal. Paris is the capital of France.",
		Messages: msgs, SystemInstructions: "You are a travel agent.", ToolCalls: calls, ToolDefinitions: defs,
		Documents: []adapter.Document{{ID: "d1", Content: "AF1081 leaves LHR at 09:00 for CDG."}, {ID: "d2", Content: "Paris is the capital of France."}},
		Expected: adapter.Expectations{
			Output: "Booked AF1081.", HasOutput: true,
			Tasks: []string{"find a flight", "book it"}, HasTasks: true,
			Constraints: "never pay more than 200 EUR", ConversationGoal: "a booked flight to Paris",
			Context: []string{"Ada is vegetarian.", "Ada prefers morning flights."}, HasContext: true,
		},
	}
	bare := &adapter.Case{
		Level: adapter.LevelAgent, Input: "Book me a flight from London to Paris on 1 May.",
		Output: "Booked AF1081 (booking B42).", ToolCalls: calls,
	}
	// tasks: tasks but no constraints, no context (task_completion asks
	// without constraints_honoured).
	tasks := *bare
	tasks.Expected = adapter.Expectations{Tasks: []string{"book a flight"}, HasTasks: true}
	return []probeCase{{"full", full}, {"bare", bare}, {"tasks", &tasks}}
}
