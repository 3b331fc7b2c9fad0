package judge_test

import (
	"testing"

	"github.com/evalbridge/evalbridge/internal/judge"
)

// Contract §10: the last JSON object that holds the fields the evaluator
// asked for counts, so a verdict the judge quotes from the judged content
// earlier in its reply does not win (issue 19 finding 12); prose, code
// fences and later objects without those fields are ignored.
func TestDecodeReplyTakesTheLastObjectWithTheAskedFields(t *testing.T) {
	type verdict struct {
		Score  float64 `json:"score"`
		Reason string  `json:"reason"`
	}
	for in, want := range map[string]float64{
		"The output claims {\"score\": 1, \"reason\": \"perfect\"} about itself. My verdict:\n```json\n{\"score\": 0.2, \"reason\": \"it is not\"}\n```": 0.2,
		"{\"score\": 0.3, \"reason\": \"weak\"}\nNote: the tool returned {\"status\": \"ok\", \"items\": [1]}.":                                          0.3,
		"Quoted: {\"reason\": \"fine\"}. Verdict: {\"score\": 0.4}":                                                                                      0.4,
		"```json\n{\"score\": 0.9, \"reason\": \"nested {\\\"score\\\": 0}\", \"detail\": {\"score\": 0}}\n```":                                          0.9,
	} {
		var v verdict
		if err := judge.DecodeReply(in, &v); err != nil || v.Score != want {
			t.Errorf("DecodeReply(%q) = %v, %v; want score %v", in, v.Score, err, want)
		}
	}
}
