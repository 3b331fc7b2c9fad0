package evaluators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

const noOutput = "the case has no output"
const noExpectedOutput = "no expected output: set the span attribute eval.expected.output or the evaluator's `expected` option"

// ---------------------------------------------------------------- exact_match

// expectedOutputOption is the evaluator's own expected output, used when
// neither the case's span nor the root span carries eval.expected.output
// (docs/contract.md §3). `expected` is the name the tool-call evaluators use;
// `expected_output` names the attribute it stands for. Either takes a string
// (a string holding JSON means that JSON value, as for the attribute) or a
// YAML value.
type expectedOutputOption struct {
	Expected       any `mapstructure:"expected"`
	ExpectedOutput any `mapstructure:"expected_output"`
}

func (o expectedOutputOption) parse() (v any, ok bool, err error) {
	v, err = expectedOrAlias(o.Expected, o.ExpectedOutput, "expected_output")
	if err != nil || v == nil {
		return nil, false, err
	}
	if s, isStr := v.(string); isStr {
		if x, err := parseJSON(s); err == nil {
			if _, isStr := x.(string); !isStr && x != nil {
				return x, true, nil
			}
		}
		return s, true, nil
	}
	return normalizeAny(v), true, nil
}

// expectedOutput is the case's expected output, else the configured one.
func expectedOutput(c *adapter.Case, cfg any, hasCfg bool) (any, bool) {
	if c.Expected.HasOutput {
		return c.Expected.Output, true
	}
	return cfg, hasCfg
}

// outputToCompare is the case's expected output (else the configured one)
// for an evaluator that compares it with the output; a skip when the case
// has no output or there is nothing to compare it with.
func outputToCompare(c *adapter.Case, cfg any, hasCfg bool) (any, *Result) {
	if c.Output == "" {
		r := Skipped(noOutput)
		return nil, &r
	}
	expected, ok := expectedOutput(c, cfg, hasCfg)
	if !ok {
		r := Skipped(noExpectedOutput)
		return nil, &r
	}
	return expected, nil
}

type exactMatchOptions struct {
	expectedOutputOption `mapstructure:",squash"`
	Trim                 bool `mapstructure:"trim"`
	CaseInsensitive      bool `mapstructure:"case_insensitive"`
}

type exactMatch struct {
	o      exactMatchOptions
	cfg    any
	hasCfg bool
}

func newExactMatch(opts *confmap.Conf, _ Deps) (Evaluator, error) {
	o, cfg, has, err := decodeWithExpected[any, exactMatchOptions](opts)
	if err != nil {
		return nil, err
	}
	return &exactMatch{o: o, cfg: cfg, hasCfg: has}, nil
}

// canonicalOptions spells the expected output as decoded (spelledOptions):
// `expected` or its alias `expected_output`, a JSON value as YAML or as a
// string holding it.
func (e *exactMatch) canonicalOptions(kept map[string]any) map[string]any {
	return respelled(kept, expectedOutputNames, map[string]any{"expected": expectedOutputSpelling(e.cfg, e.hasCfg)})
}

// expectedOutputNames are the option and its alias that expectedOutputOption
// decodes.
var expectedOutputNames = []string{"expected", "expected_output"}

// expectedOutputSpelling is the configured expected output, nil when none.
func expectedOutputSpelling(cfg any, has bool) any {
	if !has {
		return nil
	}
	return cfg
}

func (e *exactMatch) Evaluate(_ context.Context, c *adapter.Case) Result {
	expected, skip := outputToCompare(c, e.cfg, e.hasCfg)
	if skip != nil {
		return *skip
	}
	want, isString := expected.(string)
	if !isString {
		// A JSON expectation: the output must be the same JSON value.
		got, err := parseJSON(c.Output)
		if err != nil {
			return Scored(0, "the expected output is JSON but the output is not: "+truncate(c.Output, 100), nil)
		}
		m := &argMatcher{mode: argsExact, trim: e.o.Trim, caseInsensitive: e.o.CaseInsensitive}
		if m.values(normalizeAny(expected), got) {
			return Scored(1, "the output equals the expected JSON value", nil)
		}
		return Scored(0, fmt.Sprintf("the output %s differs from the expected %s", truncate(c.Output, 100), render(expected)), nil)
	}
	got := c.Output
	if e.o.Trim {
		got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	}
	eq := got == want
	if e.o.CaseInsensitive {
		eq = strings.EqualFold(got, want)
	}
	if eq {
		return Scored(1, "the output equals the expected output", nil)
	}
	return Scored(0, fmt.Sprintf("the output %q differs from the expected %q%s", truncate(got, 120), truncate(want, 120), firstDiff(got, want)), nil)
}

func firstDiff(a, b string) string {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		if ra[i] != rb[i] {
			return fmt.Sprintf(" (first difference at character %d)", i+1)
		}
	}
	return fmt.Sprintf(" (lengths %d and %d)", len(ra), len(rb))
}

// ---------------------------------------------------------------- regex

type regexOptions struct {
	Pattern         string `mapstructure:"pattern"`
	FullMatch       bool   `mapstructure:"full_match"`
	CaseInsensitive bool   `mapstructure:"case_insensitive"`
}

type regexEval struct {
	re *regexp.Regexp
	o  regexOptions
}

func newRegex(opts *confmap.Conf, _ Deps) (Evaluator, error) {
	var o regexOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if o.Pattern == "" {
		return nil, fmt.Errorf("option `pattern` is required")
	}
	p := o.Pattern
	if o.FullMatch {
		p = `^(?:` + p + `)$`
	}
	if o.CaseInsensitive {
		p = `(?i)` + p
	}
	if o.FullMatch || o.CaseInsensitive {
		if _, err := compileOptionRegex("pattern", o.Pattern); err != nil {
			return nil, err
		}
	}
	re, err := compileOptionRegex("pattern", p)
	if err != nil {
		return nil, err
	}
	return &regexEval{re: re, o: o}, nil
}

func (e *regexEval) Evaluate(_ context.Context, c *adapter.Case) Result {
	if c.Output == "" {
		return Skipped(noOutput)
	}
	how := "matches"
	if e.o.FullMatch {
		how = "fully matches"
	}
	if e.re.MatchString(c.Output) {
		return Scored(1, fmt.Sprintf("the output %s the pattern %s", how, truncate(e.o.Pattern, 100)), nil)
	}
	return Scored(0, fmt.Sprintf("the output does not %s the pattern %s: %s", strings.TrimSuffix(how, "es"), truncate(e.o.Pattern, 100), truncate(c.Output, 150)), nil)
}

// ---------------------------------------------------------------- structural_match

type structuralOptions struct {
	expectedOutputOption `mapstructure:",squash"`
	Mode                 string `mapstructure:"mode"`
	Binary               bool   `mapstructure:"binary"`
	// Strict and Lenient are the contract's spelling ("`strict` or
	// `lenient`") as switches: `strict: false` or `lenient: true` is
	// `mode: lenient`.
	Strict  *bool `mapstructure:"strict"`
	Lenient *bool `mapstructure:"lenient"`
}

// structuralMatch follows Dokimos' StructuralMatchEvaluator: the fraction of
// matching leaf paths. strict (default): exact field sets and array order,
// extra fields count in the denominator, null differs from missing.
// lenient: extra actual fields ignored, arrays compared as multisets, null
// equals missing. binary: 1 only when nothing differs.
type structuralMatch struct {
	lenient bool
	binary  bool
	cfg     any
	hasCfg  bool
}

func newStructuralMatch(opts *confmap.Conf, _ Deps) (Evaluator, error) {
	var o structuralOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if o.Mode != "" && o.Mode != "strict" && o.Mode != "lenient" {
		return nil, fmt.Errorf("option `mode`: %q is not one of strict, lenient", o.Mode)
	}
	// The switches, when given, must agree with each other and with `mode`.
	var modes []string
	if o.Mode != "" {
		modes = append(modes, o.Mode)
	}
	if o.Strict != nil {
		modes = append(modes, map[bool]string{true: "strict", false: "lenient"}[*o.Strict])
	}
	if o.Lenient != nil {
		modes = append(modes, map[bool]string{true: "lenient", false: "strict"}[*o.Lenient])
	}
	o.Mode = "strict"
	for i, m := range modes {
		if i > 0 && m != modes[0] {
			return nil, fmt.Errorf("options `mode`, `strict` and `lenient` disagree: give one of them")
		}
		o.Mode = m
	}
	cfg, has, err := o.parse()
	if err != nil {
		return nil, err
	}
	return &structuralMatch{lenient: o.Mode == "lenient", binary: o.Binary, cfg: cfg, hasCfg: has}, nil
}

// missing marks an absent field or array element (distinct from JSON null).
type missingT struct{}

var missing = missingT{}

type structDiff struct {
	matched, den int
	diffs        []string
	ndiffs       int
	// ctx is the trace's deadline: unordered arrays compare every pair of
	// elements, so the comparison checks it and stops (stopped).
	ctx     context.Context
	stopped bool
}

func (d *structDiff) add(s string) {
	d.ndiffs++
	if len(d.diffs) < 5 {
		d.diffs = append(d.diffs, s)
	}
}

// canonicalOptions spells the expected output as exact_match does, and
// `mode`, `strict` and `lenient` as `mode` (spelledOptions).
func (e *structuralMatch) canonicalOptions(kept map[string]any) map[string]any {
	kept = respelled(kept, expectedOutputNames, map[string]any{"expected": expectedOutputSpelling(e.cfg, e.hasCfg)})
	return respelled(kept, []string{"mode", "strict", "lenient"}, map[string]any{"mode": map[bool]string{true: "lenient", false: "strict"}[e.lenient]})
}

func (e *structuralMatch) Evaluate(ctx context.Context, c *adapter.Case) Result {
	expected, skip := outputToCompare(c, e.cfg, e.hasCfg)
	if skip != nil {
		return *skip
	}
	if s, ok := expected.(string); ok {
		v, err := parseJSON(s)
		if err != nil {
			return Errored("the expected output (eval.expected.output) is not JSON: %s", truncate(s, 100))
		}
		expected = v
	} else {
		expected = normalizeAny(expected)
	}
	actual, err := parseJSON(c.Output)
	if err != nil {
		return Scored(0, "the output is not valid JSON: "+truncate(c.Output, 150), map[string]float64{"matched": 0})
	}
	d := &structDiff{ctx: ctx}
	e.compare(expected, actual, "$", d)
	if d.stopped {
		return timedOut(ctx, "comparing the output with the expected structure")
	}
	score := ratio(d.matched, d.den)
	if e.binary {
		score = b2f(d.ndiffs == 0)
	}
	m := map[string]float64{"matched": float64(d.matched), "paths": float64(d.den)}
	if d.ndiffs == 0 {
		return Scored(score, fmt.Sprintf("the output matches the expected structure (%d leaf paths)", d.den), m)
	}
	reason := fmt.Sprintf("%d of %d leaf paths match; %s", d.matched, d.den, strings.Join(d.diffs, "; "))
	if d.ndiffs > len(d.diffs) {
		reason += fmt.Sprintf("; and %d more", d.ndiffs-len(d.diffs))
	}
	return Scored(score, reason, m)
}

func (e *structuralMatch) compare(exp, act any, path string, d *structDiff) {
	if eo, ok := exp.(map[string]any); ok {
		if ao, ok := act.(map[string]any); ok {
			keys := sortedKeys(eo)
			if !e.lenient {
				for _, k := range sortedKeys(ao) {
					if _, in := eo[k]; !in {
						keys = append(keys, k)
					}
				}
			}
			for _, k := range keys {
				ev, ok := eo[k]
				if !ok {
					ev = missing
				}
				av, ok := ao[k]
				if !ok {
					av = missing
				}
				e.compare(ev, av, path+"."+k, d)
			}
			return
		}
	}
	if ea, ok := exp.([]any); ok {
		if aa, ok := act.([]any); ok {
			e.compareArrays(ea, aa, path, d)
			return
		}
	}
	d.den++
	expMissing, actMissing := exp == missing, act == missing
	if expMissing && actMissing {
		d.matched++
		return
	}
	expAbsent, actAbsent := expMissing || exp == nil, actMissing || act == nil
	if expAbsent || actAbsent {
		var match bool
		if e.lenient {
			match = expAbsent && actAbsent
		} else {
			match = (exp == nil && act == nil) || (expMissing && actMissing)
		}
		if match {
			d.matched++
		} else {
			d.add(fmt.Sprintf("%s: expected %s but was %s", path, renderLeaf(exp), renderLeaf(act)))
		}
		return
	}
	if leafEquals(exp, act) {
		d.matched++
		return
	}
	d.add(fmt.Sprintf("%s: expected %s but was %s", path, renderLeaf(exp), renderLeaf(act)))
}

func (e *structuralMatch) compareArrays(exp, act []any, path string, d *structDiff) {
	if !e.lenient {
		for i := 0; i < max(len(exp), len(act)); i++ {
			var ev, av any = missing, missing
			if i < len(exp) {
				ev = exp[i]
			}
			if i < len(act) {
				av = act[i]
			}
			e.compare(ev, av, fmt.Sprintf("%s[%d]", path, i), d)
		}
		return
	}
	remaining := append([]any(nil), act...)
	for i, ev := range exp {
		if d.stopped || (i%64 == 63 && d.ctx != nil && d.ctx.Err() != nil) {
			d.stopped = true
			return
		}
		idx := -1
		for j, av := range remaining {
			probe := &structDiff{ctx: d.ctx}
			e.compare(ev, av, "$", probe)
			if probe.stopped {
				d.stopped = true
				return
			}
			if probe.ndiffs == 0 {
				idx = j
				break
			}
		}
		n := leafCount(ev)
		d.den += n
		if idx >= 0 {
			d.matched += n
			remaining = append(remaining[:idx], remaining[idx+1:]...)
		} else {
			d.add(fmt.Sprintf("%s[%d]: no element of the output matched expected %s", path, i, renderLeaf(ev)))
		}
	}
}

// leafCount counts v's leaves; an empty object or array is one leaf.
func leafCount(v any) int {
	var children iter.Seq[any]
	switch t := v.(type) {
	case map[string]any:
		children = maps.Values(t)
	case []any:
		children = slices.Values(t)
	default:
		return 1
	}
	n := 0
	for c := range children {
		n += leafCount(c)
	}
	return max(n, 1)
}

func leafEquals(e, a any) bool {
	if en, ok := toNumber(e); ok {
		an, ok := toNumber(a)
		if !ok {
			return false
		}
		if en.equal(an) {
			return true
		}
		diff := en.float() - an.float()
		return diff <= 1e-9 && diff >= -1e-9
	}
	switch ev := e.(type) {
	case string:
		av, ok := a.(string)
		return ok && ev == av
	case bool:
		av, ok := a.(bool)
		return ok && ev == av
	}
	return false // containers against scalars, or mismatched containers
}

func renderLeaf(v any) string {
	if v == missing {
		return "<missing>"
	}
	return render(v)
}

// parseJSON decodes a JSON document, numbers as json.Number; a single
// surrounding Markdown code fence (```json … ```) is ignored.
func parseJSON(s string) (any, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
			inner = inner[nl+1:]
		}
		s = strings.TrimSpace(inner)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// normalizeAny turns decoded values of any Go shape into plain JSON values.
func normalizeAny(v any) any {
	switch v.(type) {
	case nil, string, bool, float64, json.Number, map[string]any, []any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := parseJSON(string(b))
	if err != nil {
		return v
	}
	return out
}
