package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// The personal data and secrets planted in the spans, as written there.
var planted = map[string]string{
	"email": "jane.doe@example.com",
	"phone": "+44 20 7946 0958",
	"card":  "4111 1111 1111 1111",
	"iban":  "DE89 3704 0044 0532 0130 00",
	"key":   "sk-proj-Q7vX2mB9kL4pR8tW1yZ6nC3dF5gH0jKa",
	"jwt":   "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
}

// leaks lists the planted values (and their compact spellings) found in s.
func leaks(s string) []string {
	var out []string
	for k, v := range planted {
		for _, form := range []string{v, strings.ReplaceAll(v, " ", "")} {
			if strings.Contains(s, form) {
				out = append(out, k+"="+form)
				break
			}
		}
	}
	return out
}

// recorder is an HTTP endpoint that keeps every body it is sent and
// answers with reply.
type recorder struct {
	mu     sync.Mutex
	bodies []string
	reply  string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	if r.reply == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, r.reply)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// TestEndToEndRedaction plants an e-mail address, a phone number, a card
// number, an IBAN, an API key and a JWT in the spans of an agent run and
// runs the distribution with the default `redaction:` (every built-in
// detector): a judge, a remote evaluator and a webhook receiver record all
// they are sent, and none of it holds a planted value; nor does any result
// written back (reasons, explanations, on the evaluated spans and on the
// session span), though the judge and the remote evaluator answer with
// reasons that quote planted values. The `cel` evaluator saw the original
// text, and the spans' own attributes are untouched.
func TestEndToEndRedaction(t *testing.T) {
	// The judge quotes a planted value back: its explanation must be
	// masked before it is written.
	judgeSrv := judgetest.New(t, judgetest.Always(`{"score": 0.1, "reason": "the agent read the card to `+planted["phone"]+` and mailed [REDACTED:email#1]"}`))
	remote, hook, be, grpcAddr := startRedactionCollector(t, judgeSrv, `{"score": 0.2, "reason": "customer IBAN `+planted["iban"]+` seen"}`)

	input := fmt.Sprintf("I am %s, call me on %s. Charge %s or wire from %s. My OpenAI key is %s, session token %s. Again: %s",
		planted["email"], planted["phone"], planted["card"], planted["iban"], planted["key"], planted["jwt"], planted["email"])
	output := fmt.Sprintf("Booked. Confirmation sent to %s; we will call %s.", planted["email"], planted["phone"])
	args := fmt.Sprintf(`{"email":%q,"card":%q}`, planted["email"], planted["card"])
	inMsgs, outMsgs := sendConciergeRun(t, grpcAddr, conciergeRun{service: "redaction-e2e", agent: "concierge for " + planted["email"],
		conversation: "conv-redaction", tool: "charge_card", args: args,
		result: `{"status":"ok","receipt_to":"` + planted["email"] + `"}`, input: input, output: output})

	// The run's three spans, then the session's evaluate_session span.
	require.Eventually(t, func() bool {
		_, ok := be.Span("evaluate_session")
		return ok && be.SpanCount() >= 4 && len(hook.all()) > 0
	}, 30*time.Second, 20*time.Millisecond)

	// What left the collector.
	reqs := judgeSrv.Requests()
	require.NotEmpty(t, reqs)
	var sent []string
	for _, r := range reqs {
		sent = append(sent, string(r.Raw))
	}
	require.NotEmpty(t, remote.all(), "the remote evaluator was called")
	sent = append(sent, remote.all()...)
	sent = append(sent, hook.all()...)
	for _, body := range sent {
		assert.Empty(t, leaks(body), "a planted value left the collector in %s", body)
	}
	// The judge still reads the content: masked, numbered, the JSON block
	// valid, both mentions of the e-mail address one placeholder.
	user := reqs[0].User()
	assert.Contains(t, user, "[REDACTED:email#1]")
	assert.Contains(t, user, "[REDACTED:credit_card#1]")
	assert.Contains(t, user, "[REDACTED:iban#1]")
	assert.Contains(t, user, "[REDACTED:phone#1]")
	assert.Contains(t, user, "[REDACTED:secret#1]")
	assert.Contains(t, user, "[REDACTED:secret#2]")
	assert.NotContains(t, user, "email#2")
	block := user[strings.Index(user, "<data>\n")+len("<data>\n") : strings.LastIndex(user, "\n</data>")]
	assert.True(t, json.Valid([]byte(block)), "the data block is JSON: %s", block)
	var remoteBody map[string]any
	require.NoError(t, json.Unmarshal([]byte(remote.all()[0]), &remoteBody), "the remote body is JSON")
	assert.Contains(t, remote.all()[0], "[REDACTED:email#1]")

	// What was written back, on every span the backend received.
	written := writtenBack(be, func(where, value string) {
		assert.Empty(t, leaks(value), "%s: %s", where, value)
	})
	assert.Greater(t, written, 10)
	ag, _ := be.Span("invoke_agent concierge")
	reason := func(name string) string { v, _ := ag.Attributes().Get("eval." + name + ".reason"); return v.Str() }
	assert.Contains(t, reason("helpful"), "[REDACTED:phone#1]", "the judge's explanation, masked")
	assert.Contains(t, reason("far"), "[REDACTED:iban#1]", "the remote evaluator's reason, masked")
	assert.Contains(t, reason("saw_original"), "[REDACTED:email#1]")
	sess, _ := be.Span("evaluate_session")
	v, _ := sess.Attributes().Get("eval.session_echo.reason")
	assert.Contains(t, v.Str(), "[REDACTED:credit_card#1]")
	v, _ = sess.Attributes().Get("gen_ai.agent.name")
	assert.Equal(t, "concierge for [REDACTED:email#1]", v.Str(), "what the session span copies is masked too")

	// The result log records copy the agent's name masked, as the result
	// events do.
	require.Eventually(t, func() bool { return len(be.Logs()) > 0 }, 10*time.Second, 20*time.Millisecond)
	records := 0
	for _, ld := range be.Logs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					records++
					for k, v := range lr.Attributes().All() {
						assert.Empty(t, leaks(v.AsString()), "result record attribute %s: %s", k, v.AsString())
					}
					if v, ok := lr.Attributes().Get("gen_ai.agent.name"); ok {
						assert.Equal(t, "concierge for [REDACTED:email#1]", v.Str())
					}
				}
			}
		}
	}
	assert.Positive(t, records, "result log records")

	// cel read the original text (score 1 needs the raw e-mail and card).
	v, _ = ag.Attributes().Get("eval.saw_original.score")
	assert.Equal(t, 1.0, v.Double(), "cel sees the original text")

	// The evaluated spans' own attributes are as they were sent.
	v, _ = ag.Attributes().Get("gen_ai.input.messages")
	assert.Equal(t, string(inMsgs), v.Str())
	v, _ = ag.Attributes().Get("gen_ai.agent.name")
	assert.Equal(t, "concierge for "+planted["email"], v.Str())
	ch, _ := be.Span("chat gpt-4o")
	v, _ = ch.Attributes().Get("gen_ai.output.messages")
	assert.Equal(t, string(outMsgs), v.Str())
	tl, _ := be.Span("execute_tool charge_card")
	v, _ = tl.Attributes().Get("gen_ai.tool.call.arguments")
	assert.Equal(t, args, v.Str())
}

// startRedactionCollector runs the distribution with
// testdata/redaction.yaml: judgeSrv as the judge, a remote evaluator
// answering remoteReply and a webhook receiver (both recording what they
// are sent), and a backend.
func startRedactionCollector(t *testing.T, judgeSrv *judgetest.Server, remoteReply string) (remote, hook *recorder, be *testkit.Sink, grpcAddr string) {
	remote, hook = &recorder{reply: remoteReply}, &recorder{}
	remoteSrv := httptest.NewServer(remote)
	t.Cleanup(remoteSrv.Close)
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	be = testkit.NewSink(t)
	grpcAddr = freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/redaction.yaml", map[string]string{"OTLP": grpcAddr, "Backend": be.URL, "Judge": judgeSrv.Endpoint(), "Remote": remoteSrv.URL, "Webhook": hookSrv.URL}))
	return remote, hook, be, grpcAddr
}

// writtenBack calls check with every text evalbridge wrote on the spans
// the backend received: the eval.* attributes, every attribute of the
// spans it made (evaluate_session), the attributes of span events (the
// evaluation results' explanations). It returns how many.
func writtenBack(be *testkit.Sink, check func(where, value string)) int {
	n := 0
	for _, s := range be.Spans() {
		_, generated := s.Attributes().Get("eval.generated")
		s.Attributes().Range(func(k string, v pcommon.Value) bool {
			if generated || strings.HasPrefix(k, "eval.") {
				n++
				check(k+" on "+s.Name(), v.AsString())
			}
			return true
		})
		for i := 0; i < s.Events().Len(); i++ {
			s.Events().At(i).Attributes().Range(func(k string, v pcommon.Value) bool {
				n++
				check("event "+k+" on "+s.Name(), v.AsString())
				return true
			})
		}
	}
	return n
}

// conciergeRun is the agent run the redaction tests send through the Go
// OTel SDK: an agent span of a conversation, one tool call and one chat
// call, with the user's input and the assistant's output as messages.
type conciergeRun struct {
	service, agent, conversation string
	tool, args, result           string
	input, output                string
}

// sendConciergeRun sends r to the collector at grpcAddr and returns the
// input and output messages as sent.
func sendConciergeRun(t *testing.T, grpcAddr string, r conciergeRun) (inMsgs, outMsgs []byte) {
	t.Helper()
	inMsgs, _ = json.Marshal([]any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": r.input}}}})
	outMsgs, _ = json.Marshal([]any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": r.output}}}})
	ctx := context.Background()
	tp := newSDK(t, grpcAddr, r.service)
	tr := tp.Tracer("e2e")
	actx, agent := tr.Start(ctx, "invoke_agent concierge", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", r.agent),
		attribute.String("gen_ai.conversation.id", r.conversation),
		attribute.String("gen_ai.input.messages", string(inMsgs))))
	_, tool := tr.Start(actx, "execute_tool "+r.tool, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", r.tool),
		attribute.String("gen_ai.tool.call.arguments", r.args),
		attribute.String("gen_ai.tool.call.result", r.result)))
	tool.End()
	_, chat := tr.Start(actx, "chat gpt-4o", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.input.messages", string(inMsgs)),
		attribute.String("gen_ai.output.messages", string(outMsgs))))
	chat.End()
	agent.End()
	require.NoError(t, tp.Shutdown(ctx))
	return inMsgs, outMsgs
}
