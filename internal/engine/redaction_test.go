package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// Every message of one judge request is masked with one numbering, and the
// data block stays valid JSON with its fields in order.
func TestRedactedJudgeNumbersAcrossMessages(t *testing.T) {
	var got []judge.Message
	j := redactedJudge{Judge: judgeFunc(func(msgs []judge.Message) { got = msgs }), r: mustRedactor(t)}
	_, err := j.Complete(context.Background(), []judge.Message{
		{Role: "system", Content: "Known customer: bob@example.org"},
		{Role: "user", Content: "Evaluate.\n<data>\n{\n  \"input\": \"from alice@example.com\",\n  \"output\": \"mailed bob@example.org\"\n}\n</data>\nReply."},
	})
	require.NoError(t, err)
	assert.Equal(t, "Known customer: [REDACTED:email#1]", got[0].Content)
	assert.Equal(t, "Evaluate.\n<data>\n{\n  \"input\": \"from [REDACTED:email#2]\",\n  \"output\": \"mailed [REDACTED:email#1]\"\n}\n</data>\nReply.", got[1].Content)
	assert.True(t, strings.HasPrefix(got[1].Content, "Evaluate."))
}

type judgeFunc func([]judge.Message)

func (f judgeFunc) Complete(_ context.Context, msgs []judge.Message) (string, error) {
	f(msgs)
	return "{}", nil
}
func (judgeFunc) MaxFieldBytes() int { return 8192 }

func mustRedactor(t *testing.T) *redact.Redactor {
	r, err := redact.New(redact.NewDefaultConfig(), nil)
	require.NoError(t, err)
	return r
}

// The agent and model names copied onto result events are masked on every
// case: a clean pair remembered from an earlier case does not let a later
// case's address through, and each masked value is counted every time.
func TestRedactInfoAfterACleanPair(t *testing.T) {
	counted := 0
	r, err := redact.New(redact.NewDefaultConfig(), func(string) { counted++ })
	require.NoError(t, err)
	e := &Engine{redactor: r}
	clean := annotator.CaseInfo{AgentName: "travel_agent", Model: "gpt-4o"}
	dirty := annotator.CaseInfo{AgentName: "agent for bob@example.org", Model: "gpt-4o"}
	for range 2 {
		assert.Equal(t, clean, e.redactInfo(clean))
		assert.Equal(t, annotator.CaseInfo{AgentName: "agent for [REDACTED:email#1]", Model: "gpt-4o"}, e.redactInfo(dirty))
	}
	assert.Equal(t, 2, counted)
	// The same agent with another model is read again.
	assert.Equal(t, annotator.CaseInfo{AgentName: "travel_agent", Model: "[REDACTED:email#1]"},
		e.redactInfo(annotator.CaseInfo{AgentName: "travel_agent", Model: "bob@example.org"}))
	assert.Equal(t, 3, counted)
}
