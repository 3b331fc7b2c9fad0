package evaluators

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// ---------------------------------------------------------------- tool_trajectory

// Trajectory modes.
const (
	trajStrict    = "strict"
	trajInOrder   = "in_order"
	trajAnyOrder  = "any_order"
	trajSuperset  = "superset"
	trajSubset    = "subset"
	trajPrecision = "precision"
	trajRecall    = "recall"
	trajF1        = "f1"
)

// modeOptions are the options of the evaluators that compare calls under a
// `mode`: the call comparison options plus the mode.
type modeOptions struct {
	callCompareOptions `mapstructure:",squash"`
	Mode               string `mapstructure:"mode"`
}

// modeCalls is an evaluator that compares a case's tool calls with the
// expected ones under a `mode`: tool_trajectory and tool_correctness, which
// differ in how they score the calls (score).
type modeCalls struct {
	mode  string
	cc    *callComparer
	score callsScorer
	metricsOff
}

// callsScorer scores a case's calls act against the expected exp.
type callsScorer func(ctx context.Context, t *modeCalls, exp []adapter.ExpectedCall, act []adapter.ToolCall) Result

// newModeCalls decodes modeOptions, checks the mode against the ones the
// evaluator knows (the first is the default) and builds the comparer.
func newModeCalls(opts *confmap.Conf, deps Deps, score callsScorer, modes ...string) (Evaluator, error) {
	o := modeOptions{Mode: modes[0]}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if !slices.Contains(modes, o.Mode) {
		return nil, fmt.Errorf("option `mode`: %q is not one of %s", o.Mode, strings.Join(modes, ", "))
	}
	cc, err := newCallComparer(o.callCompareOptions)
	if err != nil {
		return nil, err
	}
	return &modeCalls{mode: o.Mode, cc: cc, score: score, metricsOff: metricsOff(deps.NoMetrics)}, nil
}

func (t *modeCalls) canonicalOptions(kept map[string]any) map[string]any {
	return t.cc.canonicalOptions(kept)
}

func (t *modeCalls) Evaluate(ctx context.Context, c *adapter.Case) Result {
	exp, act, r, done := callsToCompare(c, t.cc.cfg, t.cc.hasCfg)
	if done {
		return r
	}
	return t.score(ctx, t, exp, act)
}

func newToolTrajectory(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	return newModeCalls(opts, deps, scoreTrajectory, trajInOrder, trajStrict, trajAnyOrder, trajSuperset, trajSubset, trajPrecision, trajRecall, trajF1)
}

func scoreTrajectory(ctx context.Context, t *modeCalls, exp []adapter.ExpectedCall, act []adapter.ToolCall) Result {
	eq, classes := t.cc.comparison(exp, act)
	longer := max(len(exp), len(act))
	// what is said only when the comparison stops: built only then.
	what := func() string {
		return fmt.Sprintf("comparing %s with %s (%s)", plural(len(act), "call"), plural(len(exp), "expected call"), t.mode)
	}
	var p pairs
	var err error
	var score float64
	var head string
	switch t.mode {
	case trajStrict:
		p = positional(len(exp), len(act), eq)
		m := p.count()
		if len(exp) == len(act) && m == len(exp) {
			return Scored(1, fmt.Sprintf("the %s match the expected trajectory position by position", plural(len(act), "call")),
				t.counts(m, len(exp), len(act)))
		}
		head = fmt.Sprintf("trajectory differs (strict): %d of %d positions match", m, longer)
		if len(exp) != len(act) {
			head += fmt.Sprintf(", %s expected but %d made", plural(len(exp), "call"), len(act))
		}
		for i := 0; i < longer; i++ {
			if i < len(exp) && i < len(act) && eq(i, i) {
				continue
			}
			switch {
			case i >= len(act):
				head += fmt.Sprintf("; first difference at position %d: expected %s, no call", i+1, exp[i].Name)
			case i >= len(exp):
				head += fmt.Sprintf("; first difference at position %d: unexpected call %s", i+1, act[i].Name)
			case exp[i].Name != act[i].Name:
				head += fmt.Sprintf("; first difference at position %d: expected %s, got %s", i+1, exp[i].Name, act[i].Name)
			default:
				head += fmt.Sprintf("; first difference at position %d (%s): %s", i+1, exp[i].Name,
					t.cc.matcher(exp[i].Name).explain(exp[i].Arguments, act[i].Arguments))
			}
			break
		}
		return Scored(0, head, t.counts(m, len(exp), len(act)))
	case trajInOrder:
		if p, err = lcs(ctx, len(exp), len(act), eq); err != nil {
			return stopped(ctx, err, what())
		}
		m := p.count()
		score = ratio(m, longer)
		head = strconv.Itoa(m) + " of " + strconv.Itoa(longer) + " calls in expected order (LCS / longer length)"
	default:
		if p, err = maxMatching(ctx, len(exp), len(act), eq, classes); err != nil {
			return stopped(ctx, err, what())
		}
		m := p.count()
		switch t.mode {
		case trajAnyOrder:
			score = ratio(m, longer)
			head = fmt.Sprintf("%d of %d calls matched in any order (matched / longer length)", m, longer)
		case trajSuperset:
			score = b2f(m == len(exp))
			head = fmt.Sprintf("%d of %d expected calls matched by distinct calls (superset)", m, len(exp))
		case trajSubset:
			score = b2f(m == len(act))
			head = fmt.Sprintf("%d of %d calls made are expected (subset)", m, len(act))
		case trajPrecision:
			score = ratio(m, len(act))
			head = fmt.Sprintf("precision: %d of %d calls made were expected", m, len(act))
		case trajRecall:
			score = ratio(m, len(exp))
			head = fmt.Sprintf("recall: %d of %d expected calls were made", m, len(exp))
		case trajF1:
			score = f1(m, len(act), len(exp))
			head = fmt.Sprintf("F1: %d matched, %d expected, %d made", m, len(exp), len(act))
		}
	}
	m := p.count()
	return Scored(score, withDetail(head, t.cc.describe(exp, act, p)), t.counts(m, len(exp), len(act)))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------- tool_correctness

// Tool correctness modes (Dokimos ToolCorrectnessEvaluator.MatchMode).
const (
	corrNamesOnly     = "names_only"
	corrNamesAndOrder = "names_and_order"
	corrNamesAndArgs  = "names_and_args"
)

func newToolCorrectness(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	return newModeCalls(opts, deps, scoreCorrectness, corrNamesOnly, corrNamesAndOrder, corrNamesAndArgs)
}

func scoreCorrectness(ctx context.Context, t *modeCalls, exp []adapter.ExpectedCall, act []adapter.ToolCall) Result {
	switch t.mode {
	case corrNamesOnly:
		es, as := map[string]bool{}, map[string]bool{}
		for _, e := range exp {
			es[e.Name] = true
		}
		for _, a := range act {
			as[a.Name] = true
		}
		var correct, missing, unexpected []string
		for n := range es {
			if as[n] {
				correct = append(correct, n)
			} else {
				missing = append(missing, n)
			}
		}
		for n := range as {
			if !es[n] {
				unexpected = append(unexpected, n)
			}
		}
		sort.Strings(correct)
		sort.Strings(missing)
		sort.Strings(unexpected)
		score := f1(len(correct), len(as), len(es))
		reason := fmt.Sprintf("F1 of tool names: %d of %d expected names called, %d distinct names called", len(correct), len(es), len(as))
		if len(missing) > 0 {
			reason += "; missing: " + truncate(strings.Join(missing, ", "), 300)
		}
		if len(unexpected) > 0 {
			reason += "; unexpected: " + truncate(strings.Join(unexpected, ", "), 300)
		}
		return Scored(score, reason, t.counts(len(correct), len(es), len(as)))
	case corrNamesAndOrder:
		names := interner{}
		en, an := make([]int32, len(exp)), make([]int32, len(act))
		for i := range exp {
			en[i] = names.id(exp[i].Name)
		}
		for j := range act {
			an[j] = names.id(act[j].Name)
		}
		p, err := lcs(ctx, len(exp), len(act), func(i, j int) bool { return en[i] == an[j] })
		if err != nil {
			return stopped(ctx, err, fmt.Sprintf("comparing the names of %s with %s in order",
				plural(len(act), "call"), plural(len(exp), "expected call")))
		}
		m := p.count()
		longer := max(len(exp), len(act))
		head := fmt.Sprintf("%d of %d tool names in expected order (LCS / longer length)", m, longer)
		return Scored(ratio(m, longer), withDetail(head, describeNames(exp, act, p)), t.counts(m, len(exp), len(act)))
	default:
		eq, classes := t.cc.comparison(exp, act)
		p, err := maxMatching(ctx, len(exp), len(act), eq, classes)
		if err != nil {
			return stopped(ctx, err, fmt.Sprintf("matching %s with %s and their arguments",
				plural(len(act), "call"), plural(len(exp), "expected call")))
		}
		m := p.count()
		head := fmt.Sprintf("F1 of calls with arguments: %d matched, %d expected, %d made", m, len(exp), len(act))
		return Scored(f1(m, len(act), len(exp)), withDetail(head, t.cc.describe(exp, act, p)), t.counts(m, len(exp), len(act)))
	}
}

func describeNames(exp []adapter.ExpectedCall, act []adapter.ToolCall, p pairs) string {
	names := &callComparer{def: &argMatcher{mode: argsIgnore}}
	return names.describe(exp, act, p)
}

// ---------------------------------------------------------------- tool_call_accuracy

type accuracyOptions struct {
	expectedOption     `mapstructure:",squash"`
	RequireOrder       bool `mapstructure:"require_order"`
	PenalizeUnexpected bool `mapstructure:"penalize_unexpected"`
}

// toolCallAccuracy follows multivon-eval's ToolCallAccuracy: the fraction of
// expected tool names that were called; positional with require_order;
// matched / |expected ∪ called names| with penalize_unexpected.
type toolCallAccuracy struct {
	o      accuracyOptions
	cfg    []adapter.ExpectedCall
	hasCfg bool
	metricsOff
}

func newToolCallAccuracy(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	o, cfg, has, err := decodeWithExpected[[]adapter.ExpectedCall, accuracyOptions](opts)
	if err != nil {
		return nil, err
	}
	return &toolCallAccuracy{o: o, cfg: cfg, hasCfg: has, metricsOff: metricsOff(deps.NoMetrics)}, nil
}

func (t *toolCallAccuracy) canonicalOptions(kept map[string]any) map[string]any {
	return respelled(kept, []string{"expected"}, map[string]any{"expected": expectedCallsSpelling(t.cfg, t.hasCfg)})
}

func (t *toolCallAccuracy) Evaluate(_ context.Context, c *adapter.Case) Result {
	exp, act, r, done := callsToCompare(c, t.cfg, t.hasCfg)
	if done {
		return r
	}
	expSet := map[string]bool{}
	for _, e := range exp {
		expSet[e.Name] = true
	}
	actSet := map[string]bool{}
	for _, a := range act {
		actSet[a.Name] = true
	}
	var missing, unexpected []string
	seen := map[string]bool{}
	for _, e := range exp {
		if !actSet[e.Name] && !seen[e.Name] {
			missing = append(missing, e.Name)
			seen[e.Name] = true
		}
	}
	for _, a := range act {
		if !expSet[a.Name] && !seen["\x00"+a.Name] {
			unexpected = append(unexpected, a.Name)
			seen["\x00"+a.Name] = true
		}
	}
	var matched, den int
	var head string
	var mismatch []string
	if t.o.RequireOrder {
		for i := range exp {
			if i < len(act) && act[i].Name == exp[i].Name {
				matched++
			} else if len(mismatch) < 3 {
				got := "no call"
				if i < len(act) {
					got = act[i].Name
				}
				mismatch = append(mismatch, fmt.Sprintf("position %d: expected %s, got %s", i+1, exp[i].Name, got))
			}
		}
		den = len(exp)
		head = fmt.Sprintf("%d of %d expected calls at their position", matched, den)
	} else {
		for n := range expSet {
			if actSet[n] {
				matched++
			}
		}
		den = len(expSet)
		head = fmt.Sprintf("%d of %d expected tools called", matched, den)
	}
	if t.o.PenalizeUnexpected {
		// matched / size of the union. Unordered, matched counts names, so
		// the union is of the name sets. With require_order, matched counts
		// positions (occurrences), so the union is of the name multisets:
		// per name, the larger of its expected and called counts. A set
		// union there could be smaller than matched (expected [a, a, a],
		// called [a, a, a, b]: 3 / |{a, b}| = 1.5); the multiset union
		// gives 3 / 4.
		union := 0
		if t.o.RequireOrder {
			ec, ac := map[string]int{}, map[string]int{}
			for _, e := range exp {
				ec[e.Name]++
			}
			for _, a := range act {
				ac[a.Name]++
			}
			for n, k := range ec {
				union += max(k, ac[n])
			}
			for n, k := range ac {
				if ec[n] == 0 {
					union += k
				}
			}
		} else {
			union = len(expSet)
			for n := range actSet {
				if !expSet[n] {
					union++
				}
			}
		}
		if union != den {
			den = union
			what := "expected ∪ called names"
			if t.o.RequireOrder {
				what = "expected ∪ called calls, counting repeats"
			}
			head += fmt.Sprintf("; unexpected calls penalized: score = %d / %d (%s)", matched, den, what)
		}
	}
	parts := []string{head}
	parts = append(parts, mismatch...)
	if len(missing) > 0 {
		parts = append(parts, "missing: "+truncate(strings.Join(missing, ", "), 300))
	}
	if len(unexpected) > 0 {
		parts = append(parts, "unexpected: "+truncate(strings.Join(unexpected, ", "), 300))
	}
	return Scored(ratio(matched, den), strings.Join(parts, "; "), t.counts(matched, len(exp), len(act)))
}
