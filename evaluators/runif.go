package evaluators

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/evalbridge/evalbridge/adapter"
)

// `run_if` (docs/contract.md §21, docs/cost.md): a CEL condition over the
// results of the evaluators defined earlier that ran on the same case, and
// the case itself (the same `case` as `type: cel`, §15). False: the
// instance is `skipped` with the reason "run_if". It makes cascades: a
// judge that runs only where a free deterministic check failed.

// runIfReason is the reason of a result skipped because run_if was false.
const runIfReason = "run_if"

// runIfCostLimit bounds one evaluation of a run_if condition.
const runIfCostLimit = 100_000

// RunIf is a compiled run_if condition.
type RunIf struct {
	expr string
	prg  cel.Program
	// Names are the evaluator names the condition reads as results.<name>.
	Names []string
	// reads are the `case` fields it selects; readsAll: it uses `case`
	// otherwise.
	reads    map[string]bool
	readsAll bool
}

func (r *RunIf) conversationFree() bool {
	return !r.readsAll && !r.reads["input"] && !r.reads["output"] && !r.reads["turns"]
}

func (r *RunIf) needsAttributes() bool { return r.readsAll || r.reads["attributes"] }

// runIfEnv is celEnv with `results`: a map from evaluator name to
// {status, score, passed}, of the earlier evaluators that ran on the case.
var runIfEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	return env.Extend(cel.Variable("results", cel.MapType(cel.StringType, cel.ObjectType("evalbridge.Result"))))
})

// compileRunIf compiles a run_if condition: it must type-check and return
// a bool, and read results only as results.<name>.
func compileRunIf(expr string) (*RunIf, error) {
	env, err := runIfEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("run_if: %w", iss.Err())
	}
	if out := checked.OutputType(); out.Kind() != types.BoolKind && out.Kind() != types.DynKind {
		return nil, fmt.Errorf("run_if returns %s; it must return a bool", out)
	}
	names, whole := resultNames(checked.NativeRep().Expr())
	if whole {
		return nil, errors.New("run_if: read results as results.<name> (or has(results.<name>)), so that the names can be checked against the evaluators defined earlier")
	}
	prg, err := env.Program(checked, cel.CostLimit(runIfCostLimit), cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("run_if: %w", err)
	}
	ri := &RunIf{expr: expr, prg: prg, Names: names}
	ri.reads, ri.readsAll = caseFieldsRead(checked.NativeRep().Expr())
	return ri, nil
}

// resultNames lists the names selected as results.<name>, sorted, and
// whether `results` is also used otherwise.
func resultNames(x ast.Expr) ([]string, bool) {
	set, whole := fieldsSelected(x, "results")
	return slices.Sorted(maps.Keys(set)), whole
}

// Eval decides whether the instance runs: results holds the results of
// the earlier evaluators that ran on the case, by name. It returns false
// with the reason of the skipped result: "run_if" when the condition is
// false, "run_if: <why>" when it could not be evaluated (a name whose
// evaluator did not run on the case is absent: test it with has()).
func (r *RunIf) Eval(ctx context.Context, c *adapter.Case, results map[string]Result) (bool, string) {
	view := make(map[string]any, len(results))
	for name, res := range results {
		m := map[string]any{"status": string(res.Status)}
		if res.Scored() {
			m["score"] = res.Score
			m["passed"] = res.Status == StatusPassed
		}
		view[name] = m
	}
	val, _, err := r.prg.ContextEval(ctx, map[string]any{"case": newCELCase(c), "results": view})
	if err != nil {
		return false, runIfReason + ": " + clipText(err.Error(), 300)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Sprintf("%s: the condition returned %s, not a bool", runIfReason, val.Type().TypeName())
	}
	if !b {
		return false, runIfReason
	}
	return true, ""
}

// level is the case level an entry scores: `case`, else its type's default.
func (c *Config) level() adapter.Level {
	if c.Case != "" {
		return c.Case
	}
	if f, ok := lookup(c.Type); ok {
		return f.DefaultLevel
	}
	return ""
}

// ValidateRunIf checks what only the whole list can tell about run_if: each
// name it reads is an evaluator defined earlier, of the same case level,
// and no conditions refer to each other in a cycle. A condition that does
// not compile is left to the entry's Validate.
func ValidateRunIf(cfgs []Config) error {
	index := make(map[string]int, len(cfgs))
	for i := range cfgs {
		if _, dup := index[cfgs[i].InstanceName()]; !dup {
			index[cfgs[i].InstanceName()] = i
		}
	}
	var errs []error
	deps := make([][]int, len(cfgs))
	for i := range cfgs {
		c := &cfgs[i]
		if strings.TrimSpace(c.RunIf) == "" {
			continue
		}
		name := c.InstanceName()
		ri, err := compileRunIf(c.RunIf)
		if err != nil {
			continue // the entry's own Validate reports it
		}
		for _, ref := range ri.Names {
			j, ok := index[ref]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("evaluator %q: run_if reads results.%s, but no evaluator is named %q (evaluators before %q: %s)",
					name, ref, ref, name, earlierNames(cfgs[:i])))
				continue
			case j == i:
				errs = append(errs, fmt.Errorf("evaluator %q: run_if reads its own results (results.%s); it can read only evaluators defined before it", name, ref))
				continue
			case j > i:
				errs = append(errs, fmt.Errorf("evaluator %q: run_if reads results.%s, but %q is defined after %q; run_if sees only the evaluators defined earlier: move %q above %q",
					name, ref, ref, name, ref, name))
			case cfgs[j].level() != c.level():
				errs = append(errs, fmt.Errorf("evaluator %q: run_if reads results.%s, but %q scores %s cases and %q scores %s cases; run_if sees only results of the same case",
					name, ref, ref, cfgs[j].level(), name, c.level()))
			}
			deps[i] = append(deps[i], j)
		}
	}
	if cyc := findCycle(deps); len(cyc) > 0 {
		parts := make([]string, len(cyc))
		for k, i := range cyc {
			parts[k] = cfgs[i].InstanceName()
		}
		errs = append(errs, fmt.Errorf("run_if: the conditions form a cycle: %s", strings.Join(parts, " -> ")))
	}
	return errors.Join(errs...)
}

func earlierNames(cfgs []Config) string {
	if len(cfgs) == 0 {
		return "none"
	}
	names := make([]string, len(cfgs))
	for i := range cfgs {
		names[i] = cfgs[i].InstanceName()
	}
	return strings.Join(names, ", ")
}

// findCycle returns a cycle of the graph (a path that ends where it
// started), or nil.
func findCycle(deps [][]int) []int {
	state := make([]int, len(deps)) // 0 new, 1 on the path, 2 done
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		state[i] = 1
		path = append(path, i)
		for _, j := range deps[i] {
			if state[j] == 1 {
				for k, p := range path {
					if p == j {
						return append(append([]int(nil), path[k:]...), j)
					}
				}
			}
			if state[j] == 0 {
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
		return nil
	}
	for i := range deps {
		if state[i] == 0 {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}
