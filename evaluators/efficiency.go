package evaluators

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

type efficiencyOptions struct {
	Arguments *argumentOptions `mapstructure:"arguments"`
}

// toolEfficiency follows Dokimos' ToolEfficiencyEvaluator: distinct calls /
// calls, where a call is a repeat of an earlier distinct call with the same
// name and matching arguments (matches(earlier, later)).
type toolEfficiency struct {
	m *argMatcher
	metricsOff
}

func newToolEfficiency(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o efficiencyOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	m, err := newArgMatcher(o.Arguments, nil, "arguments")
	if err != nil {
		return nil, err
	}
	return &toolEfficiency{m: m, metricsOff: metricsOff(deps.NoMetrics)}, nil
}

func (t *toolEfficiency) canonicalOptions(kept map[string]any) map[string]any {
	var s any
	if sp := t.m.spelling(defaultMatcher); sp != nil {
		s = sp
	}
	return respelled(kept, []string{"arguments"}, map[string]any{"arguments": s})
}

func (t *toolEfficiency) same(a, b *adapter.ToolCall) bool {
	return a.Name == b.Name && t.m.matches(a.Arguments, b.Arguments)
}

// classes numbers the calls so that same(a, b) is class(a) == class(b):
// possible when the matcher keys arguments (exact mode, the default), where
// "same" is an equivalence. ok is false otherwise.
func (t *toolEfficiency) classes(calls []adapter.ToolCall) ([]int32, bool) {
	ids := interner{}
	out := make([]int32, len(calls))
	var buf []byte
	for i := range calls {
		buf = append(buf[:0], calls[i].Name...)
		buf = append(buf, 0)
		var ok bool
		if buf, ok = t.m.key(buf, calls[i].Arguments); !ok {
			return nil, false
		}
		out[i] = ids.id(string(buf))
	}
	return out, true
}

func (t *toolEfficiency) Evaluate(ctx context.Context, c *adapter.Case) Result {
	calls := c.ToolCalls
	n := len(calls)
	if n == 0 {
		return Scored(1, "no tool calls to inspect", map[string]float64{"distinct": 0, "calls": 0, "repeats": 0})
	}
	// same(i, j): by class in O(n) when calls hash; else pair by pair
	// against the distinct calls so far, O(n·distinct), checking the
	// deadline as it goes.
	r := repeatFinder{ctx: ctx, t: t, calls: calls}
	if n > 64 && hashCalls {
		if cls, ok := t.classes(calls); ok {
			r.cls, r.seen = cls, make(map[int32]bool, len(cls))
		}
	}
	var distinctBuf [32]int // the usual few calls: on the stack
	distinct := distinctBuf[:0]
	repeats := map[string]int{}
	var repeatOrder []string
	for i := range calls {
		dup, err := r.isRepeat(i, distinct)
		if err == nil && i%256 == 255 {
			err = ctx.Err()
		}
		if err != nil {
			return timedOut(ctx, fmt.Sprintf("looking for repeats among %s", plural(n, "call")))
		}
		if dup {
			if repeats[calls[i].Name] == 0 {
				repeatOrder = append(repeatOrder, calls[i].Name)
			}
			repeats[calls[i].Name]++
		} else {
			distinct = append(distinct, i)
		}
	}
	// Loops: runs of consecutive identical calls.
	var loops []string
	consecutive := 0
	for i := 1; i < n; {
		if !r.same(i-1, i) {
			i++
			continue
		}
		start := i - 1
		for i < n && r.same(i-1, i) {
			i++
		}
		consecutive += i - 1 - start
		if len(loops) < 3 {
			loops = append(loops, fmt.Sprintf("%s called %d times in a row with the same arguments (calls #%d-#%d)",
				calls[start].Name, i-start, start+1, i))
		}
	}
	d := len(distinct)
	reason := strconv.Itoa(d) + " of " + strconv.Itoa(n) + " calls distinct (" + strconv.Itoa(n-d) + " redundant)"
	if len(loops) > 0 {
		reason += "; loop: " + strings.Join(loops, "; ")
	}
	if n-d > 0 {
		parts := make([]string, 0, len(repeatOrder))
		for _, name := range repeatOrder {
			parts = append(parts, fmt.Sprintf("%s ×%d", name, repeats[name]))
		}
		reason += "; repeated: " + truncate(strings.Join(parts, ", "), 300)
	}
	var m map[string]float64
	if !t.metricsOff {
		m = map[string]float64{
			"distinct": float64(d), "calls": float64(n), "repeats": float64(n - d), "consecutive_repeats": float64(consecutive),
		}
	}
	return Scored(float64(d)/float64(n), reason, m)
}

// repeatFinder answers same and isRepeat for a case's calls: by class
// (cls, when the calls hash), O(1) each; else pair by pair.
type repeatFinder struct {
	ctx   context.Context
	t     *toolEfficiency
	calls []adapter.ToolCall
	cls   []int32
	seen  map[int32]bool // the classes seen, with cls
}

func (r *repeatFinder) same(i, j int) bool {
	if r.cls != nil {
		return r.cls[i] == r.cls[j]
	}
	return r.t.same(&r.calls[i], &r.calls[j])
}

// isRepeat says whether call i is the same as one of distinct (the
// distinct calls before it).
func (r *repeatFinder) isRepeat(i int, distinct []int) (bool, error) {
	if r.cls != nil {
		if r.seen[r.cls[i]] {
			return true, nil
		}
		r.seen[r.cls[i]] = true
		return false, nil
	}
	for k, d := range distinct {
		if k%1024 == 1023 && r.ctx.Err() != nil {
			return false, r.ctx.Err()
		}
		if r.same(d, i) {
			return true, nil
		}
	}
	return false, nil
}
