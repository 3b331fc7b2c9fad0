package evaluators

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// llm_judge: the user's own criteria, scored by the judge on score_range and
// normalised to [0,1] (docs/contract.md §10).

type llmJudgeOptions struct {
	Criteria   string    `mapstructure:"criteria"`
	Inputs     []string  `mapstructure:"inputs"`
	ScoreRange []float64 `mapstructure:"score_range"`
	// Context is the grounding context when the spans carry none.
	Context []string `mapstructure:"context"`
}

var llmJudgeInputs = []string{"input", "output", "expected", "context", "tool_calls"}

type llmJudge struct {
	judgeBase
	criteria string
	inputs   []string
	lo, hi   float64
	context  []string
}

func newLLMJudge(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o llmJudgeOptions
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Criteria) == "" {
		return nil, errors.New("option `criteria` is required: say what a good answer is")
	}
	if len(o.Inputs) == 0 {
		o.Inputs = []string{"input", "output"}
	}
	seen := map[string]bool{}
	for _, in := range o.Inputs {
		if !containsString(llmJudgeInputs, in) {
			return nil, fmt.Errorf("option `inputs`: unknown input %q (known: %s)", in, strings.Join(llmJudgeInputs, ", "))
		}
		if seen[in] {
			return nil, fmt.Errorf("option `inputs`: %q is listed twice", in)
		}
		seen[in] = true
	}
	e := &llmJudge{judgeBase: newJudgeBase(deps), criteria: o.Criteria, inputs: o.Inputs, lo: 0, hi: 1, context: o.Context}
	if o.ScoreRange != nil {
		if len(o.ScoreRange) != 2 || !(o.ScoreRange[0] < o.ScoreRange[1]) {
			return nil, fmt.Errorf("option `score_range`: %v must be [min, max] with min < max", o.ScoreRange)
		}
		e.lo, e.hi = o.ScoreRange[0], o.ScoreRange[1]
	}
	return e, nil
}

func (e *llmJudge) Evaluate(ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	var fields []field
	for _, in := range e.inputs {
		switch in {
		case "input":
			if strings.TrimSpace(c.Input) == "" {
				return Skipped("no input (the user's message) on this case; llm_judge was asked to judge it")
			}
			fields = append(fields, field{"input", clipText(c.Input, limit)})
		case "output":
			if strings.TrimSpace(c.Output) == "" {
				return Skipped("no output (the final assistant text) on this case; llm_judge was asked to judge it")
			}
			fields = append(fields, field{"output", clipText(c.Output, limit)})
		case "expected":
			exp, ok := expectedOutputText(c)
			if !ok {
				return Skipped("no expected output: set the span attribute eval.expected.output")
			}
			fields = append(fields, field{"expected_output", clipText(exp, limit)})
		case "context":
			ctxs, _ := groundingContext(c, e.context, limit)
			if len(ctxs) == 0 {
				return Skipped("no context: set eval.context, record retrieved documents, or the evaluator's `context` option")
			}
			fields = append(fields, field{"context", ctxs})
		case "tool_calls":
			fields = append(fields, field{"tool_calls", toolCallsData(c.ToolCalls, limit, true)})
		}
	}
	var reply scoreReply
	if r := e.ask(ctx, llmJudgePrompt(e.criteria, e.lo, e.hi), fields, &reply); r != nil {
		return *r
	}
	if !reply.Score.ok {
		return Errored("the judge's reply has no `score`")
	}
	raw := reply.Score.v
	if raw < e.lo || raw > e.hi {
		return Errored("the judge answered score %s, outside score_range [%s, %s]", fmtNum(raw), fmtNum(e.lo), fmtNum(e.hi))
	}
	score := (raw - e.lo) / (e.hi - e.lo)
	return Scored(score, judgeReason(fmt.Sprintf("judge scored %s on [%s, %s]", fmtNum(raw), fmtNum(e.lo), fmtNum(e.hi)), reply.Reason),
		map[string]float64{"raw_score": raw})
}

func fmtNum(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", v), ".0") }
