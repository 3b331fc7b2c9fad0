package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// spellingProbes are what must not leave the collector, whatever the
// spelling it was planted in: digit runs are looked for with separators
// squeezed out (kind "digits"), the rest with escapes decoded.
var spellingProbes = []struct{ kind, value string }{
	{"digits", "4111111111111111"},          // Card:4111111111111111, card:4111 1111 1111 1111
	{"digits", "15551234567"},               // tel:+15551234567, tel:+1-555-123-4567
	{"digits", "18005551234"},               // 1-800-555-1234, 1 (800) 555-1234
	{"digits", "442079460958"},              // +44 20 7946 0958
	{"digits", "03012345678"},               // 030 12345678
	{"digits", "0612345678"},                // 06 12 34 56 78
	{"digits", "919876543210"},              // +91 98765 43210
	{"digits", "4155550123"},                // "phone":4155550123 in tool arguments
	{"digits", "DE89370400440532013000"},    // IBAN:DE89370400440532013000
	{"digits", "GB82WEST12345698765432"},    // GB82 WEST 1234 5698 7654 32
	{"text", "192.168.1.10"},                // ip:192.168.1.10
	{"text", "10.9.8.7"},                    // host=10.9.8.7
	{"text", "bob@example.com"},             // ?email=bob%40example.com
	{"text", "kim@example.org"},             // kim\\u0040example.org, serialised twice
	{"text", "abc123DEF456ghi789JKL012mno"}, // api_key_sk-…
	{"text", "Zx9Yw8Vu7Ts6Rq5Po4Nm"},        // Authorization: Bearer%20…
}

var (
	escapeRE  = regexp.MustCompile(`\\+u0040|%40|%2[bB]|%20|\\+u002[bB]`)
	squeezeRE = regexp.MustCompile(`[\s\-().\\"/]+`)
)

// spellingLeaks lists the probes found in s.
func spellingLeaks(s string) []string {
	decoded := escapeRE.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case strings.HasSuffix(m, "0040") || m == "%40":
			return "@"
		case m == "%20":
			return " "
		}
		return "+"
	})
	squeezed := squeezeRE.ReplaceAllString(decoded, "")
	var out []string
	for _, p := range spellingProbes {
		if (p.kind == "digits" && strings.Contains(squeezed, p.value)) || (p.kind == "text" && strings.Contains(decoded, p.value)) {
			out = append(out, p.value)
		}
	}
	return out
}

// TestEndToEndRedactionOfSpellings plants personal data and keys in the
// spellings people type (after labels, URL-encoded, JSON-escaped, in tool
// arguments serialised twice, phone numbers in several countries' forms)
// in an agent run sent to the built collector (the distribution's
// factories, testdata/redaction.yaml: a judge, a remote evaluator, a
// webhook, sessions). The judge quotes its whole prompt back in its
// explanation, after values of its own in those spellings; the remote
// evaluator does the same in its reason. None of the planted values is in
// a judge request, a remote body, a webhook payload, or anything written
// back (eval.<name>.reason, gen_ai.evaluation.explanation, the session
// span).
func TestEndToEndRedactionOfSpellings(t *testing.T) {
	judgeSrv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		var prompt strings.Builder
		for _, m := range r.Messages {
			prompt.WriteString(m.Content)
		}
		reply, _ := json.Marshal(map[string]any{"score": 0.1,
			"reason": "Card:4111111111111111 tel:+15551234567 ?email=bob%40example.com. You sent: " + prompt.String()})
		return judgetest.Reply{Content: string(reply)}
	})
	remote, hook, be, grpcAddr := startRedactionCollector(t, judgeSrv, `{"score": 0.2, "reason": "saw tel:+1-555-123-4567, ip:192.168.1.10 and IBAN:DE89370400440532013000"}`)

	input := "Card:4111111111111111 (or card:4111 1111 1111 1111). Reach me tel:+15551234567 or tel:+1-555-123-4567, " +
		"toll free 1-800-555-1234 / 1 (800) 555-1234, London +44 20 7946 0958, Berlin 030 12345678, Paris 06 12 34 56 78, " +
		"Delhi +91 98765 43210. IBAN:DE89370400440532013000 or GB82 WEST 1234 5698 7654 32. I was on ip:192.168.1.10, " +
		"host=10.9.8.7. Link: https://shop.example.com/account?email=bob%40example.com&tab=2. " +
		"Config api_key_sk-abc123DEF456ghi789JKL012mno and header Authorization: Bearer%20Zx9Yw8Vu7Ts6Rq5Po4Nm. " +
		"Order ORD-2024-001234 of 2024-03-18, build 1.28.4."
	// tool arguments serialised twice: a JSON string holding JSON
	inner := `{"email":"kim\u0040example.org","card":4111111111111111,"phone":4155550123}`
	args, _ := json.Marshal(map[string]any{"request": inner})
	sendConciergeRun(t, grpcAddr, conciergeRun{service: "redaction-spellings-e2e", agent: "concierge",
		conversation: "conv-spellings", tool: "crm_update", args: string(args),
		result: `{"ok":true,"echo":"` + strings.ReplaceAll(inner, `"`, `\"`) + `"}`,
		input:  input, output: "Done: card:4111 1111 1111 1111 charged, receipt to bob%40example.com."})

	require.Eventually(t, func() bool {
		_, ok := be.Span("evaluate_session")
		return ok && be.SpanCount() >= 4 && len(hook.all()) > 0 && len(remote.all()) > 0
	}, 30*time.Second, 20*time.Millisecond)

	// What left the collector: every judge request (raw and as read), the
	// remote bodies, the webhook payloads.
	reqs := judgeSrv.Requests()
	require.NotEmpty(t, reqs)
	var sent []string
	for _, r := range reqs {
		sent = append(sent, string(r.Raw))
		for _, m := range r.Messages {
			sent = append(sent, m.Content)
		}
	}
	sent = append(sent, remote.all()...)
	sent = append(sent, hook.all()...)
	for _, body := range sent {
		assert.Empty(t, spellingLeaks(body), "a planted value left the collector in %s", body)
	}
	// The judge still reads the content, masked; the look-alikes stay.
	user := reqs[0].User()
	for _, want := range []string{"Card:[REDACTED:credit_card#1]", "tel:[REDACTED:phone#", "ip:[REDACTED:ip_address#",
		"api_key_[REDACTED:secret#", "Bearer%20[REDACTED:secret#", "ORD-2024-001234", "2024-03-18", "1.28.4"} {
		assert.Contains(t, user, want)
	}
	block := user[strings.Index(user, "<data>\n")+len("<data>\n") : strings.LastIndex(user, "\n</data>")]
	assert.True(t, json.Valid([]byte(block)), "the data block is JSON: %s", block)

	// What was written back, on every span the backend received.
	written := writtenBack(be, func(where, value string) {
		assert.Empty(t, spellingLeaks(value), "%s: %s", where, value)
	})
	assert.Greater(t, written, 10)
	ag, _ := be.Span("invoke_agent concierge")
	v, _ := ag.Attributes().Get("eval.helpful.reason")
	assert.Contains(t, v.Str(), "Card:[REDACTED:credit_card#1] tel:[REDACTED:phone#1]", "the judge's own spellings, masked")
	assert.Contains(t, v.Str(), "You sent:", "the judge quoted its prompt")
	v, _ = ag.Attributes().Get("eval.far.reason")
	assert.Contains(t, v.Str(), "tel:[REDACTED:phone#1]")
	// The evaluated spans' own attributes are as they were sent.
	tl, _ := be.Span("execute_tool crm_update")
	v, _ = tl.Attributes().Get("gen_ai.tool.call.arguments")
	assert.Equal(t, string(args), v.Str())
}
