package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// A late result is redacted like one on time: the judge that answers after
// the trace's timeout quotes a planted e-mail address and IBAN; the
// late-result span's reason and explanation carry placeholders.
func TestLateResultIsRedacted(t *testing.T) {
	release := make(chan struct{})
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		<-release
		return judgetest.Reply{Content: `{"score": 0.25, "reason": "refund to jane.doe@example.com, IBAN DE89 3704 0044 0532 0130 00"}`}
	})
	y := judgeYAML(srv.Endpoint(), 2, map[string]any{"type": "llm_judge", "name": "helpful", "judge": "default", "criteria": "x"})
	y["timeout"] = "5s"
	e := newEngine(t, y)
	sink := startWithLateSink(t, e, 1)
	defer func() { _ = e.Shutdown(context.Background()) }()

	spans := loadTrace(t, "../../examples/traces/travel-agent-semconv.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { done <- r })
	cancel()
	require.Equal(t, evaluators.StatusTimeout, results(<-done)["helpful"].Status)
	close(release)
	sp := sink.firstSpan(t)
	const want = "judge scored 0.25 on [0, 1]; judge: refund to [REDACTED:email#1], IBAN [REDACTED:iban#1]"
	v, _ := sp.Attributes().Get("eval.helpful.reason")
	assert.Equal(t, want, v.Str())
	ex, _ := sp.Events().At(0).Attributes().Get("gen_ai.evaluation.explanation")
	assert.Equal(t, want, ex.Str())
}

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
