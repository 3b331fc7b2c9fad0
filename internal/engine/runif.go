package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// The order of a case's evaluators (docs/contract.md §21): run_if reads the
// results of evaluators defined earlier, so an instance runs after those it
// reads. Deterministic instances run inline, in config order; judge and
// remote instances run on the pool. An instance whose run_if reads a
// result computed on the pool runs on the pool too, as a later step of the
// task that computes it (a task is a chain of steps run in config order):
// a judge behind a deterministic check is decided once the check is in,
// inline; a check or judge behind a judge waits for that judge.

// planCase runs the inline instances of selected on the case of sc,
// recording the result of selected[k] in sc.results[k] through prog (nil:
// directly), and returns the tasks of the others. ok is false when prog
// refused a result (the caller took the trace over): nothing more is run
// then.
func (e *Engine) planCase(ctx context.Context, selected []*instance, sc *scoredCase, prog *Progress, origin func(adapter.SpanRef) any) (tasks []*judgeTask, ok bool) {
	c, ref, results := sc.c, sc.ref, sc.results
	// The common case, every instance inline and none with run_if, needs
	// no plan: run them in order.
	plain := true
	for _, in := range selected {
		if in.RunIf != nil || (in.Background() && ctx.Err() == nil) {
			plain = false
			break
		}
	}
	if plain {
		for k, in := range selected {
			if !prog.set(sc, k, e.evaluate(ctx, in, c, nil)) {
				return nil, false
			}
		}
		return nil, true
	}
	n := len(selected)
	deferred := make([]bool, n)
	group := make([]int, n) // union-find of the instances that share a task
	var pos map[string]int  // selected index by name, when some run_if needs it
	hasRunIf := false
	for k, in := range selected {
		group[k] = k
		deferred[k] = in.Background() && ctx.Err() == nil
		if in.RunIf == nil {
			continue
		}
		hasRunIf = true
		if pos == nil {
			pos = make(map[string]int, n)
			for j, o := range selected {
				pos[o.Name] = j
			}
		}
		for _, name := range in.RunIf.Names {
			if j, ok := pos[name]; ok && j < k && deferred[j] {
				deferred[k] = true
				union(group, j, k)
			}
		}
	}
	var seen map[string]evaluators.Result
	if hasRunIf {
		seen = make(map[string]evaluators.Result, n)
	}
	for k, in := range selected {
		if deferred[k] {
			continue
		}
		r := e.evaluate(ctx, in, c, seen)
		if !prog.set(sc, k, r) {
			return nil, false
		}
		if seen != nil {
			seen[in.Name] = r
		}
	}
	var (
		byRoot map[int]*judgeTask
		target *lateTarget
	)
	for k, in := range selected {
		if !deferred[k] {
			continue
		}
		root := find(group, k)
		if t, ok := byRoot[root]; ok {
			t.steps = append(t.steps, taskStep{in: in, slot: &results[k]})
			continue
		}
		t := e.newJudgeTask(in, c, ref, origin, &target, &results[k])
		t.prior = seen // read-only from here on; a task with steps clones it
		if byRoot == nil {
			byRoot = map[int]*judgeTask{}
		}
		byRoot[root] = t
		tasks = append(tasks, t)
	}
	return tasks, true
}

func find(parent []int, i int) int {
	for parent[i] != i {
		parent[i] = parent[parent[i]]
		i = parent[i]
	}
	return i
}

func union(parent []int, a, b int) {
	ra, rb := find(parent, a), find(parent, b)
	if ra < rb {
		parent[rb] = ra
	} else {
		parent[ra] = rb
	}
}

// evaluate runs one instance on a case unless its run_if, over the
// results seen so far on the case, says otherwise.
func (e *Engine) evaluate(ctx context.Context, in *instance, c *adapter.Case, seen map[string]evaluators.Result) evaluators.Result {
	if in.RunIf != nil && ctx.Err() == nil {
		if ok, reason := in.RunIf.Eval(ctx, c, seen); !ok {
			return in.Stamp(evaluators.Result{Status: evaluators.StatusSkipped, Reason: reason})
		}
	}
	if e.estimateOnly && in.Async && in.Judge == "" {
		return in.Stamp(evaluators.Result{Status: evaluators.StatusSkipped, Reason: "estimate only: remote evaluators are not called"})
	}
	return runInstance(ctx, in, c)
}

// SetEstimateOnly makes the engine estimate instead of spending: every
// judge records its calls with record instead of making them (their
// evaluators report `skipped`), and remote evaluators are skipped; the
// deterministic evaluators, run_if, `when` and sample_rate work as in a
// real run. Call it before the first trace.
func (e *Engine) SetEstimateOnly(record func(judge.Call)) {
	e.estimateOnly = true
	for _, c := range e.judges {
		c.SetEstimateOnly(record)
	}
}

// JudgeSpend lists what each judge's replies cost so far, by judge and
// evaluator.
func (e *Engine) JudgeSpend() []judge.Spend {
	var out []judge.Spend
	for _, name := range slices.Sorted(maps.Keys(e.judges)) {
		out = append(out, e.judges[name].Spend()...)
	}
	return out
}

// JudgePrice returns the named judge's price and max_tokens.
func (e *Engine) JudgePrice(name string) (judge.PriceConfig, int, bool) {
	c, ok := e.judges[name]
	if !ok {
		return judge.PriceConfig{}, 0, false
	}
	return c.Price(), c.MaxTokens(), true
}
