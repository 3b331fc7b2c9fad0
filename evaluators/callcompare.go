package evaluators

// The comparison of the calls an agent made with the calls expected, shared
// by tool_trajectory, tool_correctness and tool_call_accuracy (toolcalls.go).

import (
	"fmt"
	"strings"

	"github.com/evalbridge/evalbridge/adapter"
)

// callCompareOptions are the options shared by the evaluators that compare
// the calls made with an expectation.
type callCompareOptions struct {
	expectedOption `mapstructure:",squash"`
	Arguments      *argumentOptions            `mapstructure:"arguments"`
	ToolArguments  map[string]*argumentOptions `mapstructure:"tool_arguments"`
}

// callComparer decides whether an actual call satisfies an expected one.
type callComparer struct {
	cfg     []adapter.ExpectedCall
	hasCfg  bool
	def     *argMatcher
	perTool map[string]*argMatcher
}

func newCallComparer(o callCompareOptions) (*callComparer, error) {
	cc := &callComparer{}
	var err error
	if cc.cfg, cc.hasCfg, err = o.parse(); err != nil {
		return nil, err
	}
	if cc.def, err = newArgMatcher(o.Arguments, nil, "arguments"); err != nil {
		return nil, err
	}
	if len(o.ToolArguments) > 0 {
		cc.perTool = make(map[string]*argMatcher, len(o.ToolArguments))
		for tool, to := range o.ToolArguments {
			if to == nil {
				to = &argumentOptions{}
			}
			m, err := newArgMatcher(to, cc.def, "tool_arguments."+tool)
			if err != nil {
				return nil, err
			}
			cc.perTool[tool] = m
		}
	}
	return cc, nil
}

// canonicalOptions spells `expected`, `arguments` and `tool_arguments` as
// decoded (spelledOptions): a tool's entry by what it changes over
// `arguments`, and without the entries that change nothing.
func (cc *callComparer) canonicalOptions(kept map[string]any) map[string]any {
	kept = respelled(kept, []string{"expected"}, map[string]any{"expected": expectedCallsSpelling(cc.cfg, cc.hasCfg)})
	var def any
	if s := cc.def.spelling(defaultMatcher); s != nil {
		def = s
	}
	kept = respelled(kept, []string{"arguments"}, map[string]any{"arguments": def})
	perTool := map[string]any{}
	for tool, m := range cc.perTool {
		if s := m.spelling(cc.def); s != nil {
			perTool[tool] = s
		}
	}
	var tools any
	if len(perTool) > 0 {
		tools = perTool
	}
	return respelled(kept, []string{"tool_arguments"}, map[string]any{"tool_arguments": tools})
}

func (cc *callComparer) matcher(tool string) *argMatcher {
	if m, ok := cc.perTool[tool]; ok {
		return m
	}
	return cc.def
}

// match: same name, and the arguments match under the tool's matcher. An
// expected call without `arguments` matches any arguments.
func (cc *callComparer) match(e adapter.ExpectedCall, a adapter.ToolCall) bool {
	if e.Name != a.Name {
		return false
	}
	if !e.HasArguments {
		return true
	}
	return cc.matcher(e.Name).matches(e.Arguments, a.Arguments)
}

// comparison is how expected and actual calls are compared: by integer
// classes when every matcher involved can key its arguments (exact mode,
// the default), else pair by pair through the matchers.
func (cc *callComparer) comparison(exp []adapter.ExpectedCall, act []adapter.ToolCall) (eqFunc, *callClasses) {
	// Small cases compare pair by pair as they always did: hashing would
	// only add allocations there.
	if len(exp)*len(act) > smallCells/4 && hashCalls {
		if cl, ok := cc.classes(exp, act); ok {
			return cl.eq, cl
		}
	}
	return func(i, j int) bool { return cc.match(exp[i], act[j]) }, nil
}

// classes numbers the calls (see callClasses); ok is false when some
// matcher cannot key arguments.
func (cc *callComparer) classes(exp []adapter.ExpectedCall, act []adapter.ToolCall) (*callClasses, bool) {
	names, full := interner{}, interner{}
	cl := &callClasses{
		expName: make([]int32, len(exp)), expFull: make([]int32, len(exp)), expArgs: make([]bool, len(exp)),
		actName: make([]int32, len(act)), actFull: make([]int32, len(act)),
	}
	var buf []byte
	fullID := func(name string, args map[string]any) (int32, bool) {
		buf = append(buf[:0], name...)
		buf = append(buf, 0)
		var ok bool
		if buf, ok = cc.matcher(name).key(buf, args); !ok {
			return 0, false
		}
		return full.id(string(buf)), true
	}
	for i, e := range exp {
		cl.expName[i] = names.id(e.Name)
		// An empty expected object expects no arguments, which is what the
		// key of an empty or absent actual object says too — except under
		// ignore, where it matches anything (key "" for every call).
		if cl.expArgs[i] = e.HasArguments; e.HasArguments {
			id, ok := fullID(e.Name, e.Arguments)
			if !ok {
				return nil, false
			}
			cl.expFull[i] = id
		}
	}
	for j, a := range act {
		cl.actName[j] = names.id(a.Name)
		id, ok := fullID(a.Name, a.Arguments)
		if !ok {
			return nil, false
		}
		cl.actFull[j] = id
	}
	return cl, true
}

// edgeCase handles the contract's common edge cases; ok is false when the
// lists must be compared.
// callsToCompare gives the expected and the actual calls of a case, or the
// result that decides it without comparing: skipped with no expectation,
// else the contract's edge cases (see edgeCase).
func callsToCompare(c *adapter.Case, cfg []adapter.ExpectedCall, hasCfg bool) ([]adapter.ExpectedCall, []adapter.ToolCall, Result, bool) {
	exp, _, ok := expectation(c, cfg, hasCfg)
	if !ok {
		return nil, nil, Skipped(noExpectation), true
	}
	r, done := edgeCase(exp, c.ToolCalls)
	return exp, c.ToolCalls, r, done
}

func edgeCase(exp []adapter.ExpectedCall, act []adapter.ToolCall) (Result, bool) {
	switch {
	case len(exp) == 0 && len(act) == 0:
		return Scored(1, "no tool call was expected and none was made", countMetrics(0, 0, 0)), true
	case len(exp) == 0:
		return Scored(0, fmt.Sprintf("no tool call was expected, but %s made: %s",
			plural(len(act), "call was"), actualNames(act)), countMetrics(0, 0, len(act))), true
	case len(act) == 0:
		return Scored(0, fmt.Sprintf("%s expected (%s), but no tool was called",
			plural(len(exp), "call"), expectedNames(exp)), countMetrics(0, len(exp), 0)), true
	}
	return Result{}, false
}

func countMetrics(matched, expected, actual int) map[string]float64 {
	return map[string]float64{"matched": float64(matched), "expected": float64(expected), "actual": float64(actual)}
}

func actualNames(act []adapter.ToolCall) string {
	n := make([]string, len(act))
	for i, c := range act {
		n[i] = c.Name
	}
	return truncate(strings.Join(n, ", "), 300)
}

func expectedNames(exp []adapter.ExpectedCall) string {
	n := make([]string, len(exp))
	for i, c := range exp {
		n[i] = c.Name
	}
	return truncate(strings.Join(n, ", "), 300)
}

// describe explains a pairing: what was missing, what was unexpected, and
// for a missing call, why a call of the same name did not match.
func (cc *callComparer) describe(exp []adapter.ExpectedCall, act []adapter.ToolCall, p pairs) string {
	used := make([]bool, len(act))
	for _, j := range p {
		if j >= 0 {
			used[j] = true
		}
	}
	var missing, why []string
	for i, j := range p {
		if j >= 0 {
			continue
		}
		e := exp[i]
		missing = append(missing, fmt.Sprintf("%s (expected #%d)", e.Name, i+1))
		if len(why) >= 3 {
			continue
		}
		// Prefer an unpaired call of that name; else any call of that name.
		cand := -1
		for k, a := range act {
			if a.Name == e.Name && (!used[k] || cand < 0) {
				cand = k
				if !used[k] {
					break
				}
			}
		}
		if cand >= 0 && e.HasArguments {
			if d := cc.matcher(e.Name).explain(e.Arguments, act[cand].Arguments); d != "" {
				why = append(why, fmt.Sprintf("%s (expected #%d) vs call #%d: %s", e.Name, i+1, cand+1, d))
			}
		}
	}
	var unexpected []string
	for j, a := range act {
		if !used[j] {
			unexpected = append(unexpected, fmt.Sprintf("%s (call #%d)", a.Name, j+1))
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing: "+truncate(strings.Join(missing, ", "), 300))
	}
	if len(unexpected) > 0 {
		parts = append(parts, "unexpected: "+truncate(strings.Join(unexpected, ", "), 300))
	}
	parts = append(parts, why...)
	return strings.Join(parts, "; ")
}

func withDetail(head, detail string) string {
	if detail == "" {
		return head
	}
	return head + "; " + detail
}

func ratio(num, den int) float64 {
	if den == 0 {
		return 1
	}
	return float64(num) / float64(den)
}

func f1(matched, actual, expected int) float64 {
	if actual == 0 && expected == 0 {
		return 1
	}
	if actual == 0 || expected == 0 || matched == 0 {
		return 0
	}
	p := float64(matched) / float64(actual)
	r := float64(matched) / float64(expected)
	return 2 * p * r / (p + r)
}
