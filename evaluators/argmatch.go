// The argument matcher (`arguments:`, `tool_arguments:`): whether an actual
// call's arguments match an expected call's, and why not. The alignment of
// whole call sequences is in alignment.go.

package evaluators

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Argument matching modes (docs/contract.md §6, `arguments:`).
const (
	argsExact    = "exact"
	argsSubset   = "subset"
	argsSuperset = "superset"
	argsIgnore   = "ignore"
	argsFuzzy    = "fuzzy"
)

const defaultFuzzyThreshold = 0.8

// argumentOptions is the `arguments:` option (and each entry of
// `tool_arguments:`). Pointer fields distinguish "not given" so that a
// per-tool entry inherits what it does not set from `arguments`.
type argumentOptions struct {
	Mode            *string  `mapstructure:"mode"`
	TrimStrings     *bool    `mapstructure:"trim_strings"`
	CaseInsensitive *bool    `mapstructure:"case_insensitive"`
	FuzzyThreshold  *float64 `mapstructure:"fuzzy_threshold"`
}

// argMatcher compares an expected argument object with an actual one.
//
// Direction: matches(expected, actual). In subset mode the expected keys
// must be a subset of the actual keys (the call may carry extra arguments),
// as Dokimos' TolerantArgumentMatcher (SUBSET) and Axion's "subset" strategy
// do; superset is the opposite (the call may omit expected arguments but
// must not add any). The mode decides the key sets of the arguments object
// itself; values, nested objects and lists among them, are compared
// recursively by the value rules, as in Dokimos ("maps and lists are
// compared recursively using the same rules"; key-set handling follows the
// mode): a nested object must have the same keys, a list the same length,
// element by element. Numbers compare by value; strings exactly unless
// trim_strings / case_insensitive. Fuzzy mode treats keys like subset and
// compares strings by difflib's SequenceMatcher ratio (as Axion does) against
// fuzzy_threshold.
type argMatcher struct {
	mode            string
	trim            bool
	caseInsensitive bool
	fuzzyThreshold  float64
}

var defaultMatcher = &argMatcher{mode: argsExact, fuzzyThreshold: defaultFuzzyThreshold}

// newArgMatcher builds a matcher from options over a base (nil: defaults).
// option names the option for error messages (`arguments`,
// `tool_arguments.book_hotel`).
func newArgMatcher(o *argumentOptions, base *argMatcher, option string) (*argMatcher, error) {
	m := *defaultMatcher
	if base != nil {
		m = *base
	}
	if o == nil {
		return &m, nil
	}
	if o.Mode != nil {
		switch *o.Mode {
		case argsExact, argsSubset, argsSuperset, argsIgnore, argsFuzzy:
			m.mode = *o.Mode
		default:
			return nil, fmt.Errorf("option `%s.mode`: %q is not one of exact, subset, superset, ignore, fuzzy", option, *o.Mode)
		}
	}
	if o.TrimStrings != nil {
		m.trim = *o.TrimStrings
	}
	if o.CaseInsensitive != nil {
		m.caseInsensitive = *o.CaseInsensitive
	}
	if o.FuzzyThreshold != nil {
		t := *o.FuzzyThreshold
		if !(t > 0 && t <= 1) {
			return nil, fmt.Errorf("option `%s.fuzzy_threshold`: %v must be within (0, 1]", option, t)
		}
		m.fuzzyThreshold = t
	}
	return &m, nil
}

// spelling is the `arguments:` option that gives m over base: the settings
// in which they differ, for the version (version.go); nil when none.
func (m *argMatcher) spelling(base *argMatcher) map[string]any {
	out := map[string]any{}
	if m.mode != base.mode {
		out["mode"] = m.mode
	}
	if m.trim != base.trim {
		out["trim_strings"] = m.trim
	}
	if m.caseInsensitive != base.caseInsensitive {
		out["case_insensitive"] = m.caseInsensitive
	}
	if m.fuzzyThreshold != base.fuzzyThreshold {
		out["fuzzy_threshold"] = m.fuzzyThreshold
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// matches reports whether actual arguments satisfy the expected ones.
// A nil map is an empty object.
//
// An empty expected object expects a call without arguments in every mode
// but ignore (docs/contract.md §6: "`arguments: {}` expects none"), so under
// subset and fuzzy, where expected keys ⊆ actual keys would hold vacuously,
// `{}` still differs from an omitted `arguments` (which matches anything and
// never reaches the matcher).
func (m *argMatcher) matches(expected, actual map[string]any) bool {
	if m.mode == argsIgnore {
		return true
	}
	if len(expected) == 0 {
		return len(actual) == 0
	}
	return m.objects(m.mode, expected, actual)
}

// objects compares two objects whose key sets are handled by mode: the
// matcher's mode for the arguments themselves, exact for nested objects.
func (m *argMatcher) objects(mode string, exp, act map[string]any) bool {
	switch mode {
	case argsExact:
		if len(exp) != len(act) {
			return false
		}
		for k, ev := range exp {
			av, ok := act[k]
			if !ok || !m.values(ev, av) {
				return false
			}
		}
		return true
	case argsSuperset:
		for k, av := range act {
			ev, ok := exp[k]
			if !ok || !m.values(ev, av) {
				return false
			}
		}
		return true
	default: // subset, fuzzy
		for k, ev := range exp {
			av, ok := act[k]
			if !ok || !m.values(ev, av) {
				return false
			}
		}
		return true
	}
}

func (m *argMatcher) values(e, a any) bool {
	if e == nil || a == nil {
		return e == nil && a == nil
	}
	if en, ok := toNumber(e); ok {
		an, ok := toNumber(a)
		return ok && en.equal(an)
	}
	switch ev := e.(type) {
	case string:
		av, ok := a.(string)
		return ok && m.strings(ev, av)
	case bool:
		av, ok := a.(bool)
		return ok && ev == av
	case map[string]any:
		av, ok := a.(map[string]any)
		return ok && m.objects(argsExact, ev, av)
	case []any:
		av, ok := a.([]any)
		if !ok || len(ev) != len(av) {
			return false
		}
		for i := range ev {
			if !m.values(ev[i], av[i]) {
				return false
			}
		}
		return true
	}
	// Other decoded shapes (typed slices/maps from config decoding).
	return fmt.Sprint(e) == fmt.Sprint(a)
}

func (m *argMatcher) strings(e, a string) bool {
	if m.trim {
		e, a = strings.TrimSpace(e), strings.TrimSpace(a)
	}
	if m.mode == argsFuzzy {
		if m.caseInsensitive {
			e, a = strings.ToLower(e), strings.ToLower(a)
		}
		if e == a {
			return true
		}
		return sequenceRatio(a, e) >= m.fuzzyThreshold
	}
	if m.caseInsensitive {
		return strings.EqualFold(e, a)
	}
	return e == a
}

// explain returns the first difference between expected and actual
// arguments, in words ("argument `nights`: expected 5, got 3"); "" when
// they match.
func (m *argMatcher) explain(expected, actual map[string]any) string {
	if m.matches(expected, actual) {
		return ""
	}
	if len(expected) == 0 {
		k := sortedKeys(actual)[0]
		return fmt.Sprintf("expected no arguments, got `%s` = %s", k, render(actual[k]))
	}
	return m.explainObject(m.mode, "", expected, actual)
}

func (m *argMatcher) explainObject(mode, path string, exp, act map[string]any) string {
	for _, k := range sortedKeys(exp) {
		p := joinPath(path, k)
		av, ok := act[k]
		if !ok {
			if mode == argsSuperset {
				continue
			}
			return fmt.Sprintf("argument `%s` is missing (expected %s)", p, render(exp[k]))
		}
		if !m.values(exp[k], av) {
			return m.explainValue(p, exp[k], av)
		}
	}
	if mode == argsExact || mode == argsSuperset {
		for _, k := range sortedKeys(act) {
			if _, ok := exp[k]; !ok {
				return fmt.Sprintf("unexpected argument `%s` = %s", joinPath(path, k), render(act[k]))
			}
		}
	}
	return "arguments differ"
}

func (m *argMatcher) explainValue(path string, e, a any) string {
	if em, ok := e.(map[string]any); ok {
		if am, ok := a.(map[string]any); ok {
			return m.explainObject(argsExact, path, em, am)
		}
	}
	if el, ok := e.([]any); ok {
		if al, ok := a.([]any); ok && len(el) == len(al) {
			for i := range el {
				if !m.values(el[i], al[i]) {
					return m.explainValue(fmt.Sprintf("%s[%d]", path, i), el[i], al[i])
				}
			}
		}
	}
	if es, ok := e.(string); ok && m.mode == argsFuzzy {
		if as, ok := a.(string); ok {
			return fmt.Sprintf("argument `%s`: expected %s, got %s (similarity %.2f < %.2f)", path, render(e), render(a),
				sequenceRatio(m.fuzzyNorm(as), m.fuzzyNorm(es)), m.fuzzyThreshold)
		}
	}
	return fmt.Sprintf("argument `%s`: expected %s, got %s", path, render(e), render(a))
}

func (m *argMatcher) fuzzyNorm(s string) string {
	if m.trim {
		s = strings.TrimSpace(s)
	}
	if m.caseInsensitive {
		s = strings.ToLower(s)
	}
	return s
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// render shows a value compactly for reasons.
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return truncate(fmt.Sprint(v), 80)
	}
	return truncate(string(b), 80)
}

// number is a JSON number held exactly when it is an integer.
type number struct {
	isInt bool
	i     int64
	f     float64
}

func (n number) equal(o number) bool {
	if n.isInt && o.isInt {
		return n.i == o.i
	}
	return n.float() == o.float()
}

func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

func toNumber(v any) (number, bool) {
	switch t := v.(type) {
	case int, int8, int16, int32, int64:
		return number{isInt: true, i: reflect.ValueOf(t).Int()}, true
	case uint, uint8, uint16, uint32, uint64:
		return fromUint(reflect.ValueOf(t).Uint()), true
	case float32:
		return fromFloat(float64(t)), true
	case float64:
		return fromFloat(t), true
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return number{isInt: true, i: i}, true
		}
		if f, err := strconv.ParseFloat(string(t), 64); err == nil {
			return fromFloat(f), true
		}
	}
	return number{}, false
}

func fromUint(u uint64) number {
	if u <= math.MaxInt64 {
		return number{isInt: true, i: int64(u)}
	}
	return number{f: float64(u)}
}

func fromFloat(f float64) number {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return number{isInt: true, i: int64(f)}
	}
	return number{f: f}
}

// key writes a canonical form of args to buf such that, for this matcher,
// matches(x, y) holds exactly when the keys of x and y are equal; ok is
// false when the mode or a value has no such form (subset, superset and
// fuzzy are not equivalences; case-insensitive folding, NaN, numbers beyond
// 2^53 and shapes compared by their printed form are left to matches). It
// lets tool_efficiency and the call comparisons hash instead of comparing
// every pair.
func (m *argMatcher) key(buf []byte, args map[string]any) ([]byte, bool) {
	switch {
	case m.mode == argsIgnore:
		return buf, true
	case m.mode != argsExact || m.caseInsensitive:
		return buf, false
	}
	return m.keyValue(buf, args, 0)
}

func (m *argMatcher) keyValue(buf []byte, v any, depth int) ([]byte, bool) {
	if depth > 64 {
		return buf, false
	}
	if v == nil {
		return append(buf, 'z'), true
	}
	if n, ok := toNumber(v); ok {
		f := n.float()
		if f != f || math.Abs(f) >= 1<<53 {
			return buf, false
		}
		if n.isInt {
			return strconv.AppendInt(append(buf, 'i'), n.i, 10), true
		}
		return strconv.AppendFloat(append(buf, 'f'), f, 'g', -1, 64), true
	}
	switch t := v.(type) {
	case string:
		if m.trim {
			t = strings.TrimSpace(t)
		}
		return strconv.AppendQuote(append(buf, 's'), t), true
	case bool:
		return strconv.AppendBool(append(buf, 'b'), t), true
	case map[string]any:
		buf = append(buf, '{')
		for _, k := range sortedKeys(t) {
			buf = strconv.AppendQuote(buf, k)
			var ok bool
			if buf, ok = m.keyValue(buf, t[k], depth+1); !ok {
				return buf, false
			}
			buf = append(buf, ',')
		}
		return append(buf, '}'), true
	case []any:
		buf = append(buf, '[')
		for _, e := range t {
			var ok bool
			if buf, ok = m.keyValue(buf, e, depth+1); !ok {
				return buf, false
			}
			buf = append(buf, ',')
		}
		return append(buf, ']'), true
	}
	return buf, false
}
