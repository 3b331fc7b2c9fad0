package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottlspan"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
)

// Engine scores traces. It is safe for concurrent use once built.
type Engine struct {
	instances []instance
	logger    *zap.Logger
}

type instance struct {
	*evaluators.Instance
	// when is nil when the instance runs on every case.
	when *ottl.ConditionSequence[*ottlspan.TransformContext]
	// sampleBelow is sample_rate scaled to the uint64 range.
	sampleBelow uint64
	sampleAll   bool
}

// Evaluation is the outcome of the evaluators on one case.
type Evaluation struct {
	Case    *adapter.Case
	Results []evaluators.Result
}

// Report is what scoring one trace produced.
type Report struct {
	Evaluations []Evaluation
	// Problems are what the adapter could not read (bad input).
	Problems []string
}

// New builds an engine from a validated config.
func New(cfg *Config, set component.TelemetrySettings) (*Engine, error) {
	insts, err := evaluators.Build(cfg.Evaluators, evaluators.Deps{Logger: set.Logger})
	if err != nil {
		return nil, err
	}
	e := &Engine{logger: set.Logger}
	for _, in := range insts {
		ins := instance{Instance: in}
		if len(in.When) > 0 {
			seq, err := parseWhen(in.When, set)
			if err != nil {
				return nil, fmt.Errorf("evaluator %q: when: %w", in.Name, err)
			}
			ins.when = seq
		}
		ins.sampleAll = in.SampleRate >= 1
		ins.sampleBelow = uint64(in.SampleRate * math.MaxUint64)
		e.instances = append(e.instances, ins)
	}
	return e, nil
}

// Instances lists the configured evaluator instances.
func (e *Engine) Instances() []*evaluators.Instance {
	out := make([]*evaluators.Instance, len(e.instances))
	for i := range e.instances {
		out[i] = e.instances[i].Instance
	}
	return out
}

// ScoreTrace adapts one trace's spans into cases, runs every evaluator whose
// level, `when` conditions and sample rate select the case, and writes the
// results onto the spans the cases came from. The spans are edited in place:
// the caller must own them. When ctx ends, evaluations not yet run are
// reported as `timeout` and the trace still gets what finished.
func (e *Engine) ScoreTrace(ctx context.Context, spans []adapter.SpanRef) Report {
	cases, problems := adapter.Adapt(spans)
	rep := Report{Problems: problems}
	if len(cases) == 0 {
		return rep
	}
	byID := make(map[pcommon.SpanID]adapter.SpanRef, len(spans))
	for _, s := range spans {
		byID[s.Span.SpanID()] = s
	}
	now := pcommon.NewTimestampFromTime(time.Now())
	for i := range cases {
		c := &cases[i]
		ref, ok := byID[c.SpanID]
		if !ok {
			continue
		}
		var results []evaluators.Result
		for j := range e.instances {
			in := &e.instances[j]
			if in.Level != c.Level || !in.sampled(c.TraceID) || !e.matches(ctx, in, ref) {
				continue
			}
			var r evaluators.Result
			if ctx.Err() != nil {
				r = evaluators.Result{Name: in.Name, Type: in.Type, Threshold: in.Threshold,
					Status: evaluators.StatusTimeout, Reason: "the trace's evaluation timeout passed before this evaluator ran"}
			} else {
				r = in.Evaluate(ctx, c)
			}
			results = append(results, r)
		}
		if len(results) == 0 {
			continue
		}
		annotator.Annotate(ref.Span, results, now)
		rep.Evaluations = append(rep.Evaluations, Evaluation{Case: c, Results: results})
	}
	return rep
}

// sampled decides by trace id alone, so every collector that sees the trace
// makes the same choice.
func (in *instance) sampled(id pcommon.TraceID) bool {
	if in.sampleAll {
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write(id[:])
	return h.Sum64() < in.sampleBelow
}

func (e *Engine) matches(ctx context.Context, in *instance, ref adapter.SpanRef) bool {
	if in.when == nil {
		return true
	}
	tctx := ottlspan.NewTransformContext(ref.ResourceSpans, ref.ScopeSpans, ref.Span)
	defer tctx.Close()
	ok, err := in.when.Eval(ctx, tctx)
	if err != nil {
		e.logger.Warn("evaluator `when` condition failed; the evaluator is not run on this span",
			zap.String("evaluator", in.Name), zap.Error(err))
		return false
	}
	return ok
}

func parseWhen(conds []string, set component.TelemetrySettings) (*ottl.ConditionSequence[*ottlspan.TransformContext], error) {
	parser, err := ottlspan.NewParser(ottlfuncs.StandardConverters[*ottlspan.TransformContext](), set)
	if err != nil {
		return nil, err
	}
	parsed, err := parser.ParseConditions(conds)
	if err != nil {
		return nil, err
	}
	seq := ottlspan.NewConditionSequence(parsed, set)
	return &seq, nil
}

func validateConditions(cfgs []evaluators.Config) error {
	set := component.TelemetrySettings{Logger: zap.NewNop()}
	for _, c := range cfgs {
		if len(c.When) == 0 {
			continue
		}
		if _, err := parseWhen(c.When, set); err != nil {
			return fmt.Errorf("evaluator %q: when: %w", c.InstanceName(), err)
		}
	}
	return nil
}

var _ = ptrace.NewTraces
