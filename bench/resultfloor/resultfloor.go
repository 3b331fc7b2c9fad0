// Package resultfloor is a benchmark-only processor: the least any
// implementation of stream mode (docs/contract.md §26) must do to a
// request, and nothing more. It forwards each request as it came and adds,
// for each agent span in it, the result span stream mode would send for
// that span (its child, under its resource, with the §4 attributes and
// events of fixed results, eval.target.span_name, eval.generated and
// gen_ai.agent.name), without keeping, holding or scoring anything.
//
// `evalbridge-loadgen cpu -floor` runs `[resultfloor, batch]` beside
// `[batch]` and `[eval (stream), batch]`: what the floor costs over
// `[batch]` is what exporting the results costs end to end, which no
// implementation of §26 can go below. The distribution does not ship it
// (cmd/otelcol-evalbridge/bench_floor.go adds it under the floor build
// tag).
package resultfloor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// Type is the processor's type.
var Type = component.MustNewType("resultfloor")

// Config has no options: the results are the load generator's four
// deterministic evaluators' (fixedResults).
type Config struct{}

// NewFactory returns the benchmark-only resultfloor processor's factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(Type, func() component.Config { return &Config{} },
		processor.WithTraces(createTraces, component.StabilityLevelDevelopment))
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return processorhelper.NewTraces(ctx, set, cfg, next, addResultSpans,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}))
}

// fixedResults are results of the size the load generator's evaluators
// write on an agent run (cmd/evalbridge-loadgen, normalEvaluators): the
// same names, provenance and reasons of about the same length.
var fixedResults = []evaluators.Result{
	{Name: "tool_trajectory", Type: "tool_trajectory", Version: "sha256:bef6f0c5acff", EvaluatorType: "deterministic", Status: evaluators.StatusPassed, Score: 1, Threshold: 1,
		Reason: "3 of 3 calls in expected order (LCS / longer length)"},
	{Name: "tool_error", Type: "tool_error", Version: "sha256:a147128681f0", EvaluatorType: "deterministic", Status: evaluators.StatusPassed, Score: 1, Threshold: 1,
		Reason: "3 of 3 tool calls succeeded"},
	{Name: "tool_efficiency", Type: "tool_efficiency", Version: "sha256:b9a3bcfdbc78", EvaluatorType: "deterministic", Status: evaluators.StatusPassed, Score: 1, Threshold: 1,
		Reason: "3 of 3 calls distinct (0 redundant)"},
	{Name: "tool_call_validity", Type: "tool_call_validity", Version: "sha256:8e135cd2a219", EvaluatorType: "deterministic", Status: evaluators.StatusPassed, Score: 1, Threshold: 1,
		Reason: "3 of 3 tool calls valid against their schema"},
}

const (
	attrOperation = "gen_ai.operation.name"
	attrAgentName = "gen_ai.agent.name"
	attrModel     = "gen_ai.request.model"
)

// addResultSpans appends to td one result span per agent span in it, each
// under a copy of its span's resource (stream mode sends the results of a
// trace's spans under one resource together; so does this).
func addResultSpans(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	out := ptrace.NewResourceSpansSlice()
	var lastRS ptrace.ResourceSpans
	var results ptrace.SpanSlice
	now := pcommon.NewTimestampFromTime(time.Now())
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		s := r.Span
		if op, ok := s.Attributes().Get(attrOperation); !ok || op.Str() != "invoke_agent" {
			return
		}
		if out.Len() == 0 || lastRS != r.ResourceSpans {
			rs := out.AppendEmpty()
			r.Resource().CopyTo(rs.Resource())
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("github.com/evalbridge/evalbridge/processor/evalprocessor")
			results, lastRS = ss.Spans(), r.ResourceSpans
		}
		rsp := results.AppendEmpty()
		rsp.SetTraceID(s.TraceID())
		rsp.SetSpanID(engine.NewSpanID())
		rsp.SetParentSpanID(s.SpanID())
		rsp.SetName("evaluation")
		rsp.SetKind(ptrace.SpanKindInternal)
		rsp.SetStartTimestamp(now)
		rsp.SetEndTimestamp(now)
		info := annotator.CaseInfo{}
		if v, ok := s.Attributes().Get(attrAgentName); ok {
			info.AgentName = v.Str()
		}
		if v, ok := s.Attributes().Get(attrModel); ok {
			info.Model = v.Str()
		} else {
			// The load generator's agent spans name no model; eval's
			// results carry the one of the run's chat spans.
			info.Model = "gpt-4o"
		}
		annotator.AnnotateCase(rsp, fixedResults, now, info)
		attrs := rsp.Attributes()
		for k, v := range s.Attributes().All() { // as stream mode keeps them
			if annotator.Describing(k, v) {
				v.CopyTo(attrs.PutEmpty(k))
			}
		}
		attrs.PutStr(engine.AttrTargetSpanName, s.Name())
		attrs.PutBool(adapter.AttrGenerated, true)
		if info.AgentName != "" {
			attrs.PutStr(attrAgentName, info.AgentName)
		}
	})
	out.MoveAndAppendTo(td.ResourceSpans())
	return td, nil
}
