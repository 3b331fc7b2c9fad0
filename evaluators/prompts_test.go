package evaluators

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var formatKey = regexp.MustCompile(`"([a-z_]+)":`)

// replyTags are the JSON names a reply type reads, through nested structs
// and slices of structs.
func replyTags(t reflect.Type, into map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		into[name] = true
		replyTags(f.Type, into)
	}
}

// TestPromptFormatsMatchReplies checks each reply format against the type
// its reply is decoded into: every key the format asks for is read, and
// every field the type reads is asked for by one of its formats.
func TestPromptFormatsMatchReplies(t *testing.T) {
	keysOf := func(checks []judgeCheck) []string {
		var out []string
		for _, c := range checks {
			out = append(out, c.key)
		}
		return out
	}
	cases := []struct {
		name    string
		reply   any
		prompts []judgePrompt
		// dynamic are keys read outside the struct tags (map keys, entries
		// decoded by hand).
		dynamic []string
	}{
		{"claims", claimsReply{}, []judgePrompt{faithfulnessPrompt, hallucinationPrompt, hallucinationNoContextPrompt}, nil},
		{"answer_relevancy", answerRelevancyReply{}, []judgePrompt{answerRelevancyPrompt}, nil},
		{"chunks", chunksReply{}, []judgePrompt{contextualRelevancePrompt, contextualPrecisionPrompt}, nil},
		{"contextual_recall", statementsReply{}, []judgePrompt{contextualRecallPrompt}, nil},
		{"toxicity", safetyReply{}, []judgePrompt{safetyPrompt("toxic", toxicityCategories)}, toxicityCategories},
		{"bias", safetyReply{}, []judgePrompt{safetyPrompt("biased", biasCategories)}, biasCategories},
		{"llm_judge", scoreReply{}, []judgePrompt{llmJudgePrompt("be right", 1, 5)}, nil},
		{"steps", stepsReply{}, []judgePrompt{toolArgHallucinationPrompt, toolArgAccuracyPrompt, toolCallNecessityPrompt, stepFaithfulnessPrompt}, nil},
		{"plan_quality", planQualityReply{}, []judgePrompt{planQualityPrompt}, nil},
		{"trajectory_efficiency", trajectoryReply{}, []judgePrompt{trajectoryEfficiencyPrompt}, nil},
		{"agent_memory", factsReply{}, []judgePrompt{agentMemoryPrompt}, nil},
		{"task_completion tasks", tasksReply{}, []judgePrompt{taskCompletionTasksPrompt, taskCompletionConstraintsPrompt}, nil},
		{"task_completion", completionReply{}, []judgePrompt{taskCompletionPrompt}, nil},
		{"turns", turnsReply{}, []judgePrompt{knowledgeRetentionPrompt, turnRelevancyPrompt}, nil},
		{"conversation_completeness", intentionsReply{}, []judgePrompt{conversationCompletenessPrompt(false), conversationCompletenessPrompt(true)}, nil},
		{"tool_name_reliability", toolChecksReply{}, []judgePrompt{toolChecksPrompt("name", nameJudgeChecks)},
			append([]string{"tool", "checks", "reasons"}, keysOf(nameJudgeChecks)...)},
		{"tool_description_reliability", toolChecksReply{}, []judgePrompt{toolChecksPrompt("description", descriptionJudgeChecks)},
			append([]string{"tool", "checks", "reasons"}, keysOf(descriptionJudgeChecks)...)},
	}
	for _, tc := range cases {
		read := map[string]bool{}
		replyTags(reflect.TypeOf(tc.reply), read)
		for _, k := range tc.dynamic {
			read[k] = true
		}
		asked := map[string]bool{}
		for _, p := range tc.prompts {
			if strings.TrimSpace(p.task) == "" {
				t.Errorf("%s: a prompt without a task", tc.name)
			}
			for _, m := range formatKey.FindAllStringSubmatch(p.format, -1) {
				asked[m[1]] = true
				if !read[m[1]] {
					t.Errorf("%s: the format asks for %q, which %T does not read: %s", tc.name, m[1], tc.reply, p.format)
				}
			}
		}
		for k := range read {
			if !asked[k] {
				t.Errorf("%s: %T reads %q, which no format asks for", tc.name, tc.reply, k)
			}
		}
	}
}
