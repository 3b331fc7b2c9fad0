package evaluators

import (
	"context"
	"fmt"
	"strings"

	"github.com/evalbridge/evalbridge/adapter"
)

// Judge evaluators of agent runs: task_completion, tool_argument_hallucination,
// tool_argument_accuracy, tool_call_necessity, step_faithfulness,
// plan_quality, trajectory_efficiency, agent_memory.

// perStep asks one yes/no question about each of the first max calls and
// scores ok / judged. what names the property ("grounded", "necessary" …).
func (e *agentJudge) perStep(ctx context.Context, c *adapter.Case, max int, p judgePrompt, what string, withResults bool, extra ...field) Result {
	limit := e.limit()
	calls := c.ToolCalls
	if max > 0 && len(calls) > max {
		calls = calls[:max]
	}
	fields := []field{{"input", clipText(c.Input, limit)}}
	fields = append(fields, extra...)
	fields = append(fields, field{"tool_calls", toolCallsData(calls, limit, withResults)})
	var reply stepsReply
	byIdx, r := askVerdicts(e.judgeBase, ctx, p, fields, &reply, len(calls), "step")
	if r != nil {
		return *r
	}
	steps := tally{max: 3}
	for i := 1; i <= len(calls); i++ {
		v := byIdx[i]
		steps.add(v.OK.v, func() string { return withReason(fmt.Sprintf("step %d %s", i, calls[i-1].Name), v.Reason) })
	}
	summary := fmt.Sprintf("%d of %s %s", steps.passed, plural(len(calls), "call"), what)
	if len(c.ToolCalls) > len(calls) {
		summary += fmt.Sprintf(" (the first %d of %d judged)", len(calls), len(c.ToolCalls))
	}
	summary += steps.note("not "+what, "; ")
	return Scored(float64(steps.passed)/float64(len(calls)), judgeReason(summary, reply.Reason),
		map[string]float64{"calls": float64(len(c.ToolCalls)), "judged": float64(len(calls)), what: float64(steps.passed)})
}

func needInput(c *adapter.Case, typ string) *Result {
	if strings.TrimSpace(c.Input) == "" {
		r := Skipped("no input (the user's request) on this case; %s judges the agent against it", typ)
		return &r
	}
	return nil
}

// tool_argument_hallucination: calls whose argument values are grounded in
// the user's input, the conversation or earlier tool results / calls.
func runToolArgHallucination(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if r := needInput(c, "tool_argument_hallucination"); r != nil {
		return *r
	}
	if len(c.ToolCalls) == 0 {
		return Scored(1, "no tool calls, so no argument could be hallucinated", map[string]float64{"calls": 0})
	}
	var extra []field
	if conv := conversationData(c, e.limit(), false); len(conv) > 0 {
		extra = append(extra, field{"conversation", conv})
	}
	return e.perStep(ctx, c, e.o.toolArguments.MaxCalls, toolArgHallucinationPrompt, "grounded", true, extra...)
}

// tool_argument_accuracy: the first max_calls (8) calls whose arguments are
// correct for the tool and the task / calls judged.
func runToolArgAccuracy(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if r := needInput(c, "tool_argument_accuracy"); r != nil {
		return *r
	}
	if len(c.ToolCalls) == 0 {
		return Scored(1, "no tool calls to judge", map[string]float64{"calls": 0})
	}
	var extra []field
	if defs := toolDefsData(c, e.limit()); len(defs) > 0 {
		extra = append(extra, field{"tool_definitions", defs})
	}
	return e.perStep(ctx, c, e.o.toolArguments.MaxCalls, toolArgAccuracyPrompt, "correct", false, extra...)
}

// tool_call_necessity: necessary calls / calls; an empty trace passes.
func runToolCallNecessity(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if len(c.ToolCalls) == 0 {
		return Scored(1, "no tool calls", map[string]float64{"calls": 0})
	}
	if r := needInput(c, "tool_call_necessity"); r != nil {
		return *r
	}
	return e.perStep(ctx, c, 0, toolCallNecessityPrompt, "necessary", true)
}

// step_faithfulness: steps consistent with the user's request and with what
// the agent knew at that point (earlier results) / steps.
func runStepFaithfulness(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if r := needInput(c, "step_faithfulness"); r != nil {
		return *r
	}
	if len(c.ToolCalls) == 0 {
		return Skipped("no steps (tool calls) to judge")
	}
	var extra []field
	if c.SystemInstructions != "" {
		extra = append(extra, field{"system_instructions", clipText(c.SystemInstructions, e.limit())})
	}
	return e.perStep(ctx, c, 0, stepFaithfulnessPrompt, "faithful", true, extra...)
}

// plan_quality: the agent's plan (its intermediate messages and the
// sequence of calls) rated 1..5 for completeness, logical order and
// efficiency, normalised and averaged.
func runPlanQuality(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if r := needInput(c, "plan_quality"); r != nil {
		return *r
	}
	limit := e.limit()
	notes := agentNotes(c, limit)
	if len(c.ToolCalls) == 0 && len(notes) == 0 {
		return Skipped("no plan or steps (tool calls, intermediate assistant messages) to judge")
	}
	fields := []field{{"input", clipText(c.Input, limit)}}
	if len(notes) > 0 {
		fields = append(fields, field{"agent_messages", notes})
	}
	fields = append(fields, field{"tool_calls", toolCallsData(c.ToolCalls, limit, false)})
	var reply planQualityReply
	if r := e.ask(ctx, planQualityPrompt, fields, &reply); r != nil {
		return *r
	}
	return rubric(reply.Reason, []rubricItem{{"completeness", reply.Completeness}, {"logical_order", reply.LogicalOrder}, {"efficiency", reply.Efficiency}})
}

// trajectory_efficiency: useful steps / steps, where a step is not useful
// when the judge finds it redundant or it errored, minus 0.2 for each errored
// step the agent did not recover from (floored at 0). Errored steps are
// taken from the spans, not from the judge.
func runTrajectoryEfficiency(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	if r := needInput(c, "trajectory_efficiency"); r != nil {
		return *r
	}
	n := len(c.ToolCalls)
	if n == 0 {
		return Skipped("no steps (tool calls) to judge")
	}
	fields := []field{{"input", clipText(c.Input, e.limit())}, {"tool_calls", toolCallsData(c.ToolCalls, e.limit(), true)}}
	if c.Output != "" {
		fields = append(fields, field{"output", clipText(c.Output, e.limit())})
	}
	var reply trajectoryReply
	if r := e.ask(ctx, trajectoryEfficiencyPrompt, fields, &reply); r != nil {
		return *r
	}
	wasted := map[int]bool{}
	redundant := 0
	for _, s := range reply.Redundant {
		if i := int(s.v); s.ok && i >= 1 && i <= n && !wasted[i] {
			wasted[i] = true
			redundant++
		}
	}
	errored := 0
	for i, tc := range c.ToolCalls {
		if tc.Errored && !wasted[i+1] {
			wasted[i+1] = true
			errored++
		}
	}
	unrec := map[int]bool{}
	for _, s := range reply.Unrecovered {
		if i := int(s.v); s.ok && i >= 1 && i <= n && c.ToolCalls[i-1].Errored {
			unrec[i] = true
		}
	}
	useful := n - len(wasted)
	score := float64(useful)/float64(n) - 0.2*float64(len(unrec))
	summary := fmt.Sprintf("%d of %s useful (%d redundant, %d errored", useful, plural(n, "step"), redundant, errored)
	if len(unrec) > 0 {
		summary += fmt.Sprintf(", %d not recovered: -%s", len(unrec), fmtNum(0.2*float64(len(unrec))))
	}
	summary += ")"
	return Scored(max(0, score), judgeReason(summary, reply.Reason), map[string]float64{
		"steps": float64(n), "useful": float64(useful), "redundant": float64(redundant),
		"errored": float64(errored), "unrecovered_errors": float64(len(unrec))})
}

// agent_memory: remembered facts (eval.context) the agent used correctly /
// facts relevant to this run.
func runAgentMemory(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	var facts []string
	switch {
	case c.Expected.HasContext && len(c.Expected.Context) > 0:
		facts = c.Expected.Context
	case len(e.o.agentMemory.Context) > 0:
		facts = e.o.agentMemory.Context
	default:
		return Skipped("no prior context: set eval.context (what the agent should remember) or the evaluator's `context` option")
	}
	if r := needInput(c, "agent_memory"); r != nil {
		return *r
	}
	if strings.TrimSpace(c.Output) == "" && len(c.ToolCalls) == 0 {
		return Skipped("no output or tool calls to judge the agent's memory by")
	}
	data := make([]map[string]any, len(facts))
	for i, f := range facts {
		data[i] = map[string]any{"fact": i + 1, "text": clipText(f, limit)}
	}
	fields := []field{{"prior_context", data}, {"input", clipText(c.Input, limit)}}
	if len(c.ToolCalls) > 0 {
		fields = append(fields, field{"tool_calls", toolCallsData(c.ToolCalls, limit, false)})
	}
	fields = append(fields, field{"output", clipText(c.Output, limit)})
	var reply factsReply
	byIdx, r := askVerdicts(e.judgeBase, ctx, agentMemoryPrompt, fields, &reply, len(facts), "fact")
	if r != nil {
		return *r
	}
	n := map[label]int{}
	var missed []string
	for i := 1; i <= len(facts); i++ {
		v := byIdx[i].Verdict
		switch v {
		case "used", "not_relevant":
		case "contradicted":
		default:
			v = "ignored"
		}
		n[v]++
		if (v == "ignored" || v == "contradicted") && len(missed) < 2 {
			missed = append(missed, fmt.Sprintf("%s %q", v, clipText(facts[i-1], 100)))
		}
	}
	relevant := n["used"] + n["ignored"] + n["contradicted"]
	m := map[string]float64{"facts": float64(len(facts)), "relevant": float64(relevant), "used": float64(n["used"]),
		"ignored": float64(n["ignored"]), "contradicted": float64(n["contradicted"])}
	if relevant == 0 {
		return Scored(1, judgeReason("none of the remembered facts bears on this request", reply.Reason), m)
	}
	summary := fmt.Sprintf("%d of %d relevant remembered facts used", n["used"], relevant)
	if len(missed) > 0 {
		summary += "; " + strings.Join(missed, "; ")
	}
	return Scored(float64(n["used"])/float64(relevant), judgeReason(summary, reply.Reason), m)
}

// task_completion: with tasks (eval.tasks or `tasks`), completed tasks /
// tasks, and 0 when the constraints (eval.constraints or `constraints`) were
// violated; without tasks, three questions (accomplished, complete,
// grounded) averaged, and 0 when the agent failed or errored.
func runTaskCompletion(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	tasks := e.o.taskCompletion.Tasks
	if c.Expected.HasTasks {
		tasks = c.Expected.Tasks
	}
	constraints := e.o.taskCompletion.Constraints
	if c.Expected.Constraints != "" {
		constraints = c.Expected.Constraints
	}
	if len(tasks) == 0 && strings.TrimSpace(c.Input) == "" {
		return Skipped("no tasks (eval.tasks or the `tasks` option) and no input to infer the task from")
	}
	if strings.TrimSpace(c.Output) == "" && len(c.ToolCalls) == 0 {
		return Skipped("no output or tool calls: nothing the agent did to judge")
	}
	var fields []field
	if c.Input != "" {
		fields = append(fields, field{"input", clipText(c.Input, limit)})
	}
	if len(tasks) > 0 {
		td := make([]map[string]any, len(tasks))
		for i, t := range tasks {
			td[i] = map[string]any{"task": i + 1, "text": clipText(t, limit)}
		}
		fields = append(fields, field{"tasks", td})
	}
	if constraints != "" {
		fields = append(fields, field{"constraints", clipText(constraints, limit)})
	}
	fields = append(fields, field{"tool_calls", toolCallsData(c.ToolCalls, limit, true)}, field{"output", clipText(c.Output, limit)})

	if len(tasks) > 0 {
		p := taskCompletionTasksPrompt
		if constraints != "" {
			p = taskCompletionConstraintsPrompt
		}
		var reply tasksReply
		byIdx, r := askVerdicts(e.judgeBase, ctx, p, fields, &reply, len(tasks), "task")
		if r != nil {
			return *r
		}
		done := tally{max: 3}
		for i := 1; i <= len(tasks); i++ {
			done.add(byIdx[i].Completed.v, func() string { return fmt.Sprintf("%q", clipText(tasks[i-1], 100)) })
		}
		m := map[string]float64{"tasks": float64(len(tasks)), "tasks_completed": float64(done.passed)}
		score := float64(done.passed) / float64(len(tasks))
		summary := fmt.Sprintf("%d of %s completed", done.passed, plural(len(tasks), "task")) + done.note("not completed", ", ")
		if constraints != "" {
			if !reply.Constraints.ok {
				return Errored("the judge's reply has no `constraints_honoured`")
			}
			m["constraints_honoured"] = flagValue(reply.Constraints.v)
			if !reply.Constraints.v {
				score = 0
				summary = "constraints violated (score 0); " + summary
			}
		}
		return Scored(score, judgeReason(summary, reply.Reason), m)
	}

	var reply completionReply
	if r := e.ask(ctx, taskCompletionPrompt, fields, &reply); r != nil {
		return *r
	}
	for name, f := range map[string]flag{"accomplished": reply.Accomplished, "complete": reply.Complete, "grounded": reply.Grounded, "failed_or_errored": reply.Failed} {
		if !f.ok {
			return Errored("the judge's reply has no `%s`", name)
		}
	}
	yes := flagValue(reply.Accomplished.v) + flagValue(reply.Complete.v) + flagValue(reply.Grounded.v)
	m := map[string]float64{"accomplished": flagValue(reply.Accomplished.v), "complete": flagValue(reply.Complete.v),
		"grounded": flagValue(reply.Grounded.v), "failed_or_errored": flagValue(reply.Failed.v)}
	var no []string
	for _, k := range []string{"accomplished", "complete", "grounded"} {
		if m[k] == 0 {
			no = append(no, "not "+k)
		}
	}
	if reply.Failed.v {
		return Scored(0, judgeReason("the agent failed or errored", reply.Reason), m)
	}
	summary := fmt.Sprintf("%s of 3 checks passed", fmtNum(yes))
	if len(no) > 0 {
		summary += ": " + strings.Join(no, ", ")
	}
	return Scored(yes/3, judgeReason(summary, reply.Reason), m)
}

func flagValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// toolDefsData lists the definitions of the tools the agent called.
func toolDefsData(c *adapter.Case, limit int) []map[string]any {
	used := map[string]bool{}
	for _, tc := range c.ToolCalls {
		used[tc.Name] = true
	}
	var out []map[string]any
	for _, d := range c.ToolDefinitions {
		if !used[d.Name] {
			continue
		}
		m := map[string]any{"name": d.Name, "description": clipText(d.Description, limit)}
		if d.Parameters != nil {
			m["parameters"] = d.Parameters
		}
		out = append(out, m)
	}
	return out
}

// agentNotes are the assistant's intermediate messages (its stated plan or
// reasoning), without the final output.
func agentNotes(c *adapter.Case, limit int) []string {
	var out []string
	for _, m := range c.Messages {
		if m.Role == "assistant" && strings.TrimSpace(m.Content) != "" && m.Content != c.Output {
			out = append(out, clipText(m.Content, limit))
		}
	}
	return out
}
