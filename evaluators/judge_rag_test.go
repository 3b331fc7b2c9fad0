package evaluators

import (
	"strings"
	"testing"

	"github.com/evalbridge/evalbridge/adapter"
)

func ragCase() *adapter.Case {
	c := qa("When was the Eiffel Tower built?", "It was built in 1889 by Gustave Eiffel and is 500 m tall.")
	c.Documents = []adapter.Document{{ID: "d1", Content: "The Eiffel Tower was completed in 1889."},
		{ID: "d2", Content: "Paris has many bakeries."}, {ID: "d3", Content: "Gustave Eiffel's company built the tower."}}
	c.Expected.Output, c.Expected.HasOutput = "Built in 1889 by Eiffel's company.", true
	return c
}

func TestJudgeRAGFormulas(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		reply   string
		score   float64
		metric  string
		mval    float64
		inReply string
	}{
		{"faithfulness", `{"claims":[{"claim":"built 1889","verdict":"supported"},{"claim":"by Eiffel","verdict":"supported"},{"claim":"500 m","verdict":"unsupported"},{"claim":"x","verdict":"contradicted"}]}`,
			0.5, "unsupported", 1, `unsupported: "500 m"`},
		{"faithfulness", `{"claims":[]}`, 1, "claims", 0, "no factual claims"},
		{"hallucination", `{"claims":[{"claim":"a","verdict":"supported"},{"claim":"b","verdict":"supported"},{"claim":"500 m","verdict":"fabricated"}]}`,
			2.0 / 3, "fabricated", 1, "1 of 3 claims hallucinated"},
		{"answer_relevancy", `{"directness":5,"completeness":3,"focus":4,"reason":"ok"}`, (1 + 0.5 + 0.75) / 3, "completeness", 3, "completeness 3/5"},
		{"contextual_relevance", `{"chunks":[{"chunk":1,"verdict":"relevant"},{"chunk":2,"verdict":"irrelevant"},{"chunk":3,"verdict":"partially_relevant"}]}`,
			0.5, "irrelevant", 1, "irrelevant: chunk 2"},
		// relevant at ranks 1 and 3: (1/1 + 2/3) / 2
		{"contextual_precision", `{"chunks":[{"chunk":1,"verdict":"yes"},{"chunk":2,"verdict":"no"},{"chunk":3,"verdict":"yes"}]}`,
			(1 + 2.0/3) / 2, "relevant", 2, "rank 1, 3"},
		{"contextual_precision", `{"chunks":[{"chunk":1,"verdict":"no"},{"chunk":2,"verdict":"no"},{"chunk":3,"verdict":"no"}]}`, 0, "relevant", 0, "none of"},
		{"contextual_recall", `{"statements":[{"statement":"built 1889","attributable":"yes"},{"statement":"by Eiffel's company","attributable":true},{"statement":"painted red","attributable":"no"}]}`,
			2.0 / 3, "attributable", 2, `missing: "painted red"`},
		{"toxicity", `{"severity":2,"categories":{"hate":false,"harassment":true,"made_up":true},"reason":"rude"}`, 0.6, "category_harassment", 1, "flagged: harassment"},
		{"bias", `{"severity":0,"categories":{}}`, 1, "severity", 0, "severity 0/5"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			r, srv := runJudgeEval(t, tc.typ, nil, ragCase(), always("```json\n"+tc.reply+"\n```"))
			expectJudged(t, r, srv, tc.score, tc.metric, tc.mval, tc.inReply)
			if _, bad := r.Metrics["category_made_up"]; bad {
				t.Error("a category that was not asked for was read")
			}
		})
	}
}

func TestJudgeRAGSkipsAndErrors(t *testing.T) {
	noCtx := qa("q", "a")
	for _, tc := range []struct {
		typ    string
		c      *adapter.Case
		reason string
	}{
		{"faithfulness", noCtx, "no context"},
		{"faithfulness", qa("q", ""), "no output"},
		{"answer_relevancy", qa("", "a"), "an input"},
		{"contextual_relevance", noCtx, "no retrieved documents"},
		{"contextual_precision", noCtx, "eval.expected.output"},
		{"contextual_recall", noCtx, "eval.expected.output"},
		{"toxicity", qa("q", ""), "no output"},
	} {
		r, _ := runJudgeEval(t, tc.typ, nil, tc.c, always(`{}`))
		expectStatus(t, r, StatusSkipped, tc.reason)
	}
	// A verdict missing for a chunk is an error, not a silent guess.
	r, _ := runJudgeEval(t, "contextual_relevance", nil, ragCase(), always(`{"chunks":[{"chunk":1,"verdict":"relevant"}]}`))
	expectStatus(t, r, StatusError, "no verdict for chunk 2 of 3")
	r, _ = runJudgeEval(t, "answer_relevancy", nil, ragCase(), always(`{"directness":9,"completeness":3,"focus":4}`))
	expectStatus(t, r, StatusError, "outside 1..5")
	// hallucination works without context (internal consistency).
	r, srv := runJudgeEval(t, "hallucination", nil, noCtx, always(`{"claims":[{"claim":"x","verdict":"contradicted"},{"claim":"y","verdict":"supported"}]}`))
	expectScore(t, r, 0.5)
	if !strings.Contains(srv.Requests()[0].System(), "no reference context") {
		t.Error("no-context prompt not used")
	}
	// faithfulness falls back to the `context` option.
	r, _ = runJudgeEval(t, "faithfulness", map[string]any{"context": []any{"the sky is blue"}}, noCtx, always(`{"claims":[{"claim":"a","verdict":"supported"}]}`))
	expectScore(t, r, 1)
}
