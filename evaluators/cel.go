package evaluators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"github.com/google/cel-go/parser"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// `type: cel` (docs/contract.md §15): a CEL expression over `case`, compiled
// and type-checked once at config time, run where the deterministic
// evaluators run. CEL is the expression language of Kubernetes admission
// policies and Envoy: no loops beyond bounded macros, no I/O, and a cost
// model that bounds each evaluation (`cost_limit`).

type celOptions struct {
	Expression string `mapstructure:"expression"`
	// CostLimit bounds one evaluation in CEL's cost units (about one per
	// operation, one per list element a macro visits).
	CostLimit uint64 `mapstructure:"cost_limit"`
}

const defaultCELCostLimit = 1_000_000

type celEval struct {
	expr      string
	costLimit uint64
	// reads are the `case` fields the expression selects; readsAll is
	// set when it uses `case` otherwise (then it may read anything).
	reads    map[string]bool
	readsAll bool
	prg      cel.Program
	// conjuncts are the top-level `a && b && …` parts, each compiled on its
	// own, so a false result can name the part that failed.
	conjuncts []celPart
}

type celPart struct {
	text string
	prg  cel.Program
}

// The declared type of `case` and its parts: a field not listed is a
// compile error. The values are plain maps (caseView), which CEL selects
// fields from like a message; `has(case.expected.output)` tests presence.
var celTypes = map[string]map[string]*types.Type{
	"evalbridge.Case": {
		"level": types.StringType, "input": types.StringType, "output": types.StringType,
		"tool_calls": types.NewListType(types.NewObjectType("evalbridge.ToolCall")),
		"usage":      types.NewObjectType("evalbridge.Usage"),
		"model":      types.StringType, "agent_name": types.StringType, "latency_ms": types.DoubleType,
		"llm_calls":  types.IntType,
		"attributes": types.NewMapType(types.StringType, types.DynType),
		"expected":   types.NewObjectType("evalbridge.Expected"),
		"documents":  types.NewListType(types.NewObjectType("evalbridge.Document")),
		"span_name":  types.StringType, "service_name": types.StringType, "conversation_id": types.StringType,
		"turns": types.NewListType(types.NewObjectType("evalbridge.Turn")),
	},
	"evalbridge.ToolCall": {
		"name": types.StringType, "arguments": types.NewMapType(types.StringType, types.DynType),
		"result": types.StringType, "errored": types.BoolType, "duration_ms": types.DoubleType,
	},
	"evalbridge.Usage": {"input_tokens": types.IntType, "output_tokens": types.IntType, "total_tokens": types.IntType},
	"evalbridge.Expected": {
		"tool_calls": types.NewListType(types.NewObjectType("evalbridge.ExpectedCall")),
		"output":     types.DynType,
	},
	"evalbridge.ExpectedCall": {"name": types.StringType, "arguments": types.NewMapType(types.StringType, types.DynType)},
	"evalbridge.Document":     {"id": types.StringType, "content": types.StringType, "score": types.DoubleType},
	// An earlier evaluator's result, as run_if sees it (runif.go).
	"evalbridge.Result": {"status": types.StringType, "score": types.DoubleType, "passed": types.BoolType},
	"evalbridge.Turn": {
		"input": types.StringType, "output": types.StringType,
		"tool_calls": types.NewListType(types.NewObjectType("evalbridge.ToolCall")),
		"usage":      types.NewObjectType("evalbridge.Usage"),
		"model":      types.StringType, "latency_ms": types.DoubleType, "llm_calls": types.IntType,
	},
}

// celProvider adds the declared types to the environment's provider. The
// fields have no getters, so the interpreter selects them from the map
// values by key.
type celProvider struct{ types.Provider }

func (p celProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := celTypes[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p celProvider) FindStructFieldNames(name string) ([]string, bool) {
	if fs, ok := celTypes[name]; ok {
		out := make([]string, 0, len(fs))
		for f := range fs {
			out = append(out, f)
		}
		return out, true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p celProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if fs, ok := celTypes[name]; ok {
		t, ok := fs[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return p.Provider.FindStructFieldType(name, field)
}

// celEnv is built once: building an environment costs milliseconds, and an
// environment is safe for concurrent use.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("case", celCaseType),
		// Numbers in tool arguments are JSON doubles: `t.arguments.nights <= 14` must work.
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		// Keeps macros (exists, all, map …) in the source info, so a
		// conjunct that uses one can be quoted in a reason.
		cel.EnableMacroCallTracking(),
		ext.Strings(), ext.Math(), ext.Lists(), ext.Sets(), ext.Encoders(), ext.Regex(), ext.Bindings(),
		// json.decode is declared per evaluator (celJSONDecoder): it
		// refuses, before decoding, an input its cost_limit cannot pay.
		// Last: the libraries above register types with the default provider.
		func(env *cel.Env) (*cel.Env, error) {
			return cel.CustomTypeProvider(celProvider{env.CELTypeProvider()})(env)
		},
	)
})

// celJSONDecoder is `json.decode(s)` for an expression with costLimit:
// tool results and attributes often hold JSON text; numbers become doubles,
// as in JSON. It costs one per input byte (celCostTrackers), and an input
// larger than costLimit is refused before it is decoded: decoding allocates
// about 20 times the input, and the cost is only counted after a call.
func celJSONDecoder(costLimit uint64) cel.EnvOption {
	return cel.Function("json.decode",
		cel.Overload("json_decode_string", []*cel.Type{cel.StringType}, cel.DynType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				if n := uint64(len(s)); n > costLimit {
					return types.NewErr("json.decode: an input of %d bytes exceeds cost_limit %d (json.decode costs one per byte); "+
						"raise `cost_limit` or decode less", n, costLimit)
				}
				var out any
				if err := json.Unmarshal([]byte(s), &out); err != nil {
					return types.NewErr("json.decode: %v", err)
				}
				return types.DefaultTypeAdapter.NativeToValue(out)
			})))
}

// celCostTrackers cost by size what the libraries cost 1 whatever their
// input: json.decode (one per input byte) and format (one per output
// byte). The other string functions (ext.Strings, regex, base64, quote)
// already cost by size.
var celCostTrackers = cel.CostTrackerOptions(
	interpreter.OverloadCostTracker("json_decode_string", func(args []ref.Val, _ ref.Val) *uint64 {
		return sizeCost(args[0])
	}),
	interpreter.OverloadCostTracker("string_format", func(_ []ref.Val, result ref.Val) *uint64 {
		return sizeCost(result)
	}),
)

func sizeCost(v ref.Val) *uint64 {
	n := uint64(1)
	if s, ok := v.(types.String); ok {
		n = max(n, uint64(len(s)))
	}
	return &n
}

func newCEL(opts *confmap.Conf, _ Deps) (Evaluator, error) {
	o := celOptions{CostLimit: defaultCELCostLimit}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Expression) == "" {
		return nil, errors.New("option `expression` is required: a CEL expression over `case` returning a bool, a number in [0, 1] or {\"score\": …, \"reason\": …}")
	}
	if o.CostLimit == 0 {
		return nil, errors.New("option `cost_limit` must be positive")
	}
	base, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	env, err := base.Extend(celJSONDecoder(o.CostLimit))
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	checked, iss := env.Compile(o.Expression)
	if iss.Err() != nil {
		return nil, fmt.Errorf("expression: %w", iss.Err())
	}
	switch out := checked.OutputType(); out.Kind() {
	case types.BoolKind, types.DoubleKind, types.IntKind, types.UintKind, types.MapKind, types.DynKind:
	default:
		return nil, fmt.Errorf("expression returns %s; it must return a bool, a number in [0, 1] or a map {\"score\": …, \"reason\": …}", out)
	}
	e := &celEval{expr: o.Expression, costLimit: o.CostLimit}
	e.reads, e.readsAll = caseFieldsRead(checked.NativeRep().Expr())
	if e.prg, err = e.program(env, checked); err != nil {
		return nil, err
	}
	if checked.OutputType().Kind() == types.BoolKind {
		e.conjuncts = e.splitConjuncts(env, checked)
	}
	return e, nil
}

// caseFieldsRead lists the fields of `case` an expression selects, and
// whether it also uses `case` as a whole (passed to a function, compared).
func caseFieldsRead(x ast.Expr) (map[string]bool, bool) { return fieldsSelected(x, "case") }

// fieldsSelected lists the fields of variable that x selects
// (variable.<field>), and whether x also uses variable otherwise.
func fieldsSelected(x ast.Expr, variable string) (map[string]bool, bool) {
	fields := map[string]bool{}
	idents, selects := 0, 0
	ast.PostOrderVisit(x, ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() == variable {
				idents++
			}
		case ast.SelectKind:
			if op := e.AsSelect().Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == variable {
				selects++
				fields[e.AsSelect().FieldName()] = true
			}
		}
	}))
	return fields, idents != selects
}

// ConversationFree says the expression reads neither input nor output, so
// the adapter may skip decoding the conversation (see factory).
func (e *celEval) ConversationFree() bool {
	return !e.readsAll && !e.reads["input"] && !e.reads["output"]
}

// NeedsAttributes says the expression reads the span's attributes.
func (e *celEval) NeedsAttributes() bool { return e.readsAll || e.reads["attributes"] }

func (e *celEval) program(env *cel.Env, a *cel.Ast) (cel.Program, error) {
	prg, err := env.Program(a,
		cel.CostLimit(e.costLimit), celCostTrackers,
		// OptOptimize compiles constant regular expressions (`matches`) once
		// here instead of on every evaluation.
		cel.EvalOptions(cel.OptTrackCost, cel.OptOptimize),
		// A trace's timeout (ctx) stops a long comprehension, not only the cost limit.
		cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("expression: %w", err)
	}
	return prg, nil
}

// splitConjuncts compiles the top-level parts of `a && b && …`, keyed by
// their source text, in order. Anything that does not split cleanly is left
// out: the reason then quotes the whole expression.
func (e *celEval) splitConjuncts(env *cel.Env, checked *cel.Ast) []celPart {
	native := checked.NativeRep()
	var parts []ast.Expr
	var walk func(x ast.Expr)
	walk = func(x ast.Expr) {
		if x.Kind() == ast.CallKind && x.AsCall().FunctionName() == operators.LogicalAnd {
			for _, a := range x.AsCall().Args() {
				walk(a)
			}
			return
		}
		parts = append(parts, x)
	}
	walk(native.Expr())
	if len(parts) < 2 {
		return nil
	}
	out := make([]celPart, 0, len(parts))
	for _, p := range parts {
		text, err := parser.Unparse(p, native.SourceInfo())
		if err != nil {
			return nil
		}
		a, iss := env.Compile(text)
		if iss.Err() != nil {
			return nil
		}
		prg, err := e.program(env, a)
		if err != nil {
			return nil
		}
		out = append(out, celPart{text: text, prg: prg})
	}
	return out
}

func (e *celEval) Evaluate(ctx context.Context, c *adapter.Case) Result {
	act := map[string]any{"case": newCELCase(c)}
	val, det, err := e.prg.ContextEval(ctx, act)
	if err != nil {
		return e.evalError(ctx, err, det)
	}
	m := map[string]float64{}
	if det != nil && det.ActualCost() != nil {
		m["cost"] = float64(*det.ActualCost())
	}
	switch v := val.(type) {
	case types.Bool:
		if v {
			return Scored(1, "expression is true", m)
		}
		return Scored(0, e.whyFalse(ctx, act), m)
	case types.Double, types.Int, types.Uint:
		return scoreFromNumber(toFloat(v), "expression returned", m)
	case traits.Mapper:
		return scoreFromMap(v, m)
	}
	return Errored("expression returned %s (%v); it must return a bool, a number in [0, 1] or a map {\"score\": …, \"reason\": …}",
		val.Type().TypeName(), clipText(fmt.Sprint(val.Value()), 100))
}

func (e *celEval) evalError(ctx context.Context, err error, det *cel.EvalDetails) Result {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cost limit exceeded"):
		return Errored("expression exceeded its cost_limit of %d; simplify it or raise `cost_limit`", e.costLimit)
	case ctx.Err() != nil:
		return Result{Status: StatusTimeout, Reason: "the trace's evaluation timeout passed while the expression ran"}
	}
	return Errored("expression failed: %s", clipText(msg, 300))
}

// whyFalse names the first top-level conjunct that is false (or fails),
// else quotes the expression.
func (e *celEval) whyFalse(ctx context.Context, act map[string]any) string {
	for _, p := range e.conjuncts {
		v, _, err := p.prg.ContextEval(ctx, act)
		if err != nil {
			return fmt.Sprintf("expression is false: `%s` failed: %s", clipText(p.text, 300), clipText(err.Error(), 200))
		}
		if b, ok := v.(types.Bool); ok && !bool(b) {
			return fmt.Sprintf("expression is false: `%s` is false", clipText(p.text, 300))
		}
	}
	return fmt.Sprintf("expression is false: `%s`", clipText(strings.TrimSpace(e.expr), 300))
}

func toFloat(v ref.Val) float64 {
	switch n := v.(type) {
	case types.Double:
		return float64(n)
	case types.Int:
		return float64(n)
	case types.Uint:
		return float64(n)
	}
	return math.NaN()
}

// scoreFromNumber checks a returned score: a number outside [0, 1] is the
// expression's (or the server's) bug, reported, never clamped into a pass.
func scoreFromNumber(f float64, what string, m map[string]float64) Result {
	if !(f >= 0 && f <= 1) {
		return Errored("%s %v, outside [0, 1]", what, f)
	}
	return Scored(f, fmt.Sprintf("%s %v", what, f), m)
}

// scoreFromMap reads {"score": …, "reason": "…"} or {"skipped": "…"}.
func scoreFromMap(v traits.Mapper, m map[string]float64) Result {
	if s, ok := v.Find(types.String("skipped")); ok {
		if str, ok := s.(types.String); ok {
			return Skipped("%s", clipText(string(str), 900))
		}
	}
	s, ok := v.Find(types.String("score"))
	if !ok {
		return Errored("expression returned a map without \"score\"")
	}
	var f float64
	switch n := s.(type) {
	case types.Bool:
		f = 0
		if n {
			f = 1
		}
	case types.Double, types.Int, types.Uint:
		f = toFloat(n)
	default:
		return Errored("expression returned \"score\" of type %s; want a number in [0, 1]", s.Type().TypeName())
	}
	r := scoreFromNumber(f, "expression returned score", m)
	if r.Status == StatusError {
		return r
	}
	if reason, ok := v.Find(types.String("reason")); ok {
		if str, ok := reason.(types.String); ok && strings.TrimSpace(string(str)) != "" {
			r.Reason = clipText(string(str), 900)
		}
	}
	return r
}

// celCase is `case` as a CEL value: a field is built when the expression
// first reads it (and kept for the rest of the evaluation), so
// `case.usage.total_tokens < 5000` does not copy every tool call.
type celCase struct {
	c      *adapter.Case
	fields []ref.Val // by index in caseFields
}

var (
	celCaseType    = types.NewObjectType("evalbridge.Case")
	caseFieldIndex = func() map[string]int {
		m := make(map[string]int, len(caseFields))
		for i, f := range caseFields {
			m[f] = i
		}
		return m
	}()
)

func newCELCase(c *adapter.Case) *celCase {
	return &celCase{c: c, fields: make([]ref.Val, len(caseFields))}
}

// Get implements traits.Indexer: the interpreter selects `case.<field>` with it.
func (v *celCase) Get(idx ref.Val) ref.Val {
	name, ok := idx.(types.String)
	if !ok {
		return types.NewErr("no such key: %v", idx)
	}
	i, ok := caseFieldIndex[string(name)]
	if !ok {
		return types.NewErr("no such key: %s", name)
	}
	if v.fields[i] == nil {
		v.fields[i] = types.DefaultTypeAdapter.NativeToValue(caseField(v.c, string(name), 0))
	}
	return v.fields[i]
}

// IsSet implements traits.FieldTester (`has(case.input)`): every field is set.
func (v *celCase) IsSet(field ref.Val) ref.Val {
	name, ok := field.(types.String)
	if !ok {
		return types.NewErr("no such key: %v", field)
	}
	_, ok = caseFieldIndex[string(name)]
	return types.Bool(ok)
}

func (v *celCase) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("case cannot be converted to %v", typeDesc)
}

func (v *celCase) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return celCaseType
	}
	return types.NewErr("case cannot be converted to %s", t.TypeName())
}

func (v *celCase) Equal(other ref.Val) ref.Val { return types.Bool(other == ref.Val(v)) }
func (v *celCase) Type() ref.Type              { return celCaseType }
func (v *celCase) Value() any                  { return v.c }
