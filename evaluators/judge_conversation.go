package evaluators

import (
	"context"
	"fmt"
	"strings"

	"github.com/evalbridge/evalbridge/adapter"
)

// conversationCompletenessOptions: Goal when the spans carry no
// eval.conversation_goal.
type conversationCompletenessOptions struct {
	Goal string `mapstructure:"goal"`
}

func conversationCompletenessOpts(o *agentOptions) any {
	return &o.conversationCompleteness
}

// Judge evaluators of a conversation (the case's messages, with the final
// output as the last assistant turn): knowledge_retention,
// conversation_completeness, turn_relevancy.

type turnData struct {
	Turn    int    `json:"turn"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// conversationData is the user and assistant turns in order, numbered from
// 1, with the final output appended when the messages do not end with it.
func conversationData(c *adapter.Case, limit int, withOutput bool) []turnData {
	var out []turnData
	for _, m := range c.Messages {
		if (m.Role != "user" && m.Role != "assistant") || strings.TrimSpace(m.Content) == "" {
			continue
		}
		out = append(out, turnData{Turn: len(out) + 1, Role: m.Role, Content: clipText(m.Content, limit)})
	}
	if len(out) == 0 && strings.TrimSpace(c.Input) != "" {
		out = append(out, turnData{Turn: 1, Role: "user", Content: clipText(c.Input, limit)})
	}
	if withOutput && strings.TrimSpace(c.Output) != "" {
		if n := len(out); n == 0 || out[n-1].Role != "assistant" || out[n-1].Content != clipText(c.Output, limit) {
			out = append(out, turnData{Turn: len(out) + 1, Role: "assistant", Content: clipText(c.Output, limit)})
		}
	}
	return out
}

func assistantTurns(turns []turnData) []int {
	var out []int
	for _, t := range turns {
		if t.Role == "assistant" {
			out = append(out, t.Turn)
		}
	}
	return out
}

// perTurn asks a yes/no question about each assistant turn; ok / turns.
func (e *agentJudge) perTurn(ctx context.Context, c *adapter.Case, typ string, p judgePrompt, what string, extra ...field) Result {
	turns := conversationData(c, e.limit(), true)
	asst := assistantTurns(turns)
	users := len(turns) - len(asst)
	if users == 0 || len(asst) == 0 || len(turns) < 2 {
		return Skipped("%s needs a conversation with user and assistant turns; this case has %s and %s",
			typ, plural(users, "user turn"), plural(len(asst), "assistant turn"))
	}
	fields := append(extra, field{"conversation", turns})
	var reply turnsReply
	if r := e.ask(ctx, p, fields, &reply); r != nil {
		return *r
	}
	byTurn := map[int]turnVerdict{}
	for _, v := range reply.Turns {
		if v.Turn.ok {
			byTurn[int(v.Turn.v)] = v
		}
	}
	good := tally{max: 3}
	for _, t := range asst {
		v, found := byTurn[t]
		if !found {
			return Errored("the judge gave no verdict for assistant turn %d", t)
		}
		good.add(v.OK.v, func() string { return withReason(fmt.Sprintf("turn %d", t), v.Reason) })
	}
	summary := fmt.Sprintf("%d of %s %s", good.passed, plural(len(asst), "assistant turn"), what) + good.note("not "+what, "; ")
	return Scored(float64(good.passed)/float64(len(asst)), judgeReason(summary, reply.Reason),
		map[string]float64{"turns": float64(len(asst)), what: float64(good.passed)})
}

// knowledge_retention: assistant turns that do not forget what the user said
// earlier / assistant turns.
func runKnowledgeRetention(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	return e.perTurn(ctx, c, "knowledge_retention", knowledgeRetentionPrompt, "retaining")
}

// turn_relevancy: assistant turns relevant to the conversation so far /
// assistant turns.
func runTurnRelevancy(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	return e.perTurn(ctx, c, "turn_relevancy", turnRelevancyPrompt, "relevant")
}

// conversation_completeness: user intentions satisfied / intentions; the
// goal (eval.conversation_goal or `goal`) is one of them when given.
func runConversationCompleteness(e *agentJudge, ctx context.Context, c *adapter.Case) Result {
	turns := conversationData(c, e.limit(), true)
	asst := assistantTurns(turns)
	if len(asst) == 0 || len(asst) == len(turns) {
		return Skipped("conversation_completeness needs a conversation with user and assistant turns")
	}
	goal := c.Expected.ConversationGoal
	if goal == "" {
		goal = e.o.conversationCompleteness.Goal
	}
	var fields []field
	if goal != "" {
		fields = append(fields, field{"conversation_goal", clipText(goal, e.limit())})
	}
	fields = append(fields, field{"conversation", turns})
	var reply intentionsReply
	if r := e.ask(ctx, conversationCompletenessPrompt(goal != ""), fields, &reply); r != nil {
		return *r
	}
	total := len(reply.Intentions)
	if total == 0 {
		return Errored("the judge listed no user intentions")
	}
	sat := tally{max: 3}
	for _, in := range reply.Intentions {
		sat.add(in.Satisfied.v, func() string { return fmt.Sprintf("%q", clipText(in.Intention, 100)) })
	}
	m := map[string]float64{"intentions": float64(total), "satisfied": float64(sat.passed)}
	if goal != "" {
		m["goal_satisfied"] = flagValue(reply.Intentions[0].Satisfied.v)
	}
	summary := fmt.Sprintf("%d of %s satisfied", sat.passed, plural(total, "user intention")) + sat.note("unsatisfied", ", ")
	return Scored(float64(sat.passed)/float64(total), judgeReason(summary, reply.Reason), m)
}
