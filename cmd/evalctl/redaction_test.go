package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// evalctl redacts like the processor (the same `redaction:` block): the
// judge gets masked prompts, the results written to --out and --junit hold
// no planted value, cel reads the original and the input attributes are
// written out unchanged.
func TestRunRedacts(t *testing.T) {
	const email, card, key = "jane.doe@example.com", "4111-1111-1111-1111", "AKIAIOSFODNN7EXAMPLE"
	srv := judgetest.New(t, judgetest.Always(`{"score": 0.2, "reason": "the user `+email+` gave a card"}`))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := "judges:\n  default:\n    endpoint: " + srv.Endpoint() + "\n    model: judge-model\n" +
		"redaction:\n  patterns:\n    - {name: customer_id, regex: 'CUST-\\d{8}'}\n" +
		"evaluators:\n  - type: llm_judge\n    name: helpful\n    judge: default\n    criteria: Is the answer helpful?\n" +
		"  - type: cel\n    name: echo\n    case: llm\n    threshold: 1.0\n" +
		"    expression: '{\"score\": case.input.contains(\"" + email + "\") ? 0.5 : 0.0, \"reason\": \"input: \" + case.input}'\n"
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	input := "I am " + email + " (CUST-12345678), card " + card + ", key " + key
	msgs, _ := json.Marshal([]any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": input}}}})
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetName("chat gpt-4o")
	sp.Attributes().PutStr("gen_ai.operation.name", "chat")
	sp.Attributes().PutStr("gen_ai.input.messages", string(msgs))
	sp.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Noted, `+email+`."}]}]`)
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	inPath, outPath, junitPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "junit.xml")
	require.NoError(t, os.WriteFile(inPath, raw, 0o600))

	code, out, stderr := runEvalctl(t, "", "run", "--config", cfgPath, "--out", outPath, "--junit", junitPath, inPath)
	require.Equal(t, exitFailed, code, "%s\n%s", out, stderr)

	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		for _, v := range []string{email, card, key, "CUST-12345678"} {
			assert.NotContains(t, string(r.Raw), v)
		}
	}
	assert.Contains(t, reqs[0].User(), "[REDACTED:customer_id#1]")

	written, err := os.ReadFile(outPath)
	require.NoError(t, err)
	got, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(strings.TrimSpace(string(written))))
	require.NoError(t, err)
	s := got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	reason := func(n string) string { v, _ := s.Attributes().Get("eval." + n + ".reason"); return v.Str() }
	assert.Equal(t, "judge scored 0.2 on [0, 1]; judge: the user [REDACTED:email#1] gave a card", reason("helpful"))
	assert.Equal(t, "input: I am [REDACTED:email#1] ([REDACTED:customer_id#1]), card [REDACTED:credit_card#1], key [REDACTED:secret#1]", reason("echo"))
	v, _ := s.Attributes().Get("eval.echo.score")
	assert.Equal(t, 0.5, v.Double(), "cel read the original input")
	v, _ = s.Attributes().Get("gen_ai.input.messages")
	assert.Equal(t, string(msgs), v.Str(), "the span's own attributes are unchanged")

	junit, err := os.ReadFile(junitPath)
	require.NoError(t, err)
	for _, leak := range []string{email, card, key, "CUST-12345678"} {
		assert.NotContains(t, string(junit), leak)
		assert.NotContains(t, out+stderr, leak)
	}

	// A bad pattern is a config error naming it.
	require.NoError(t, os.WriteFile(cfgPath, []byte("redaction:\n  patterns:\n    - {name: order, regex: 'ORD-(\\d+'}\nevaluators:\n  - type: tool_error\n"), 0o600))
	code, _, stderr = runEvalctl(t, "", "validate", "--config", cfgPath)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `patterns[0] (order): regex "ORD-(\\d+" is not valid RE2`)
}
