package redact

import (
	"flag"
	"strconv"
	"strings"
	"testing"
)

// benchBytes is the size of the texts of BenchmarkDetectorAdversarial and
// BenchmarkRedactText (1 MB: docs/contract.md §20); smaller sizes are for
// comparing with a version whose cost grows faster than the input.
var benchBytes = flag.Int("redact.bytes", 1<<20, "size of the benchmarks' texts")

// adversarial are texts made to cost the detectors the most: runs of digit
// groups (cards, phones), of '@' (e-mail), of key-like tokens (secrets), of
// dots, colons and digits (IP addresses), of IBAN-like codes, of escapes
// (the decoded view) and of brackets (JSON in text).
var adversarial = []struct{ name, unit string }{
	{"digits_dash1", "1-"},
	{"digits_space4", "1234 "},
	{"digits_cards", "4111 1111 1111 1111 "},
	{"digits_plain", "4111111111111111"},
	{"digits_paren", "(800) "},
	{"digits_plus", "+1 "},
	{"phone_cue", "tel:5551234567 "},
	{"at_runs", "a@"},
	{"at_dots", "a.b@c.d"},
	{"at_long_domain", "a@b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z."},
	{"keys_sk", "sk-"},
	{"keys_bearer", "Bearer "},
	{"keys_jwt", "eyJ"},
	{"keys_pem", "-----BEGIN PRIVATE KEY-----"},
	{"keys_mixed", "api_key_sk-AKIAghp_xox-"},
	{"dots_digits", "1."},
	{"dots_quads", "10.0.0.1."},
	{"colons_hex", "1:"},
	{"iban_like", "GB82 "},
	{"escapes_percent", "%40%"},
	{"escapes_backslash", "\\\\u0040"},
	{"json_open", "{\"a\":["},
	{"json_nested_string", "\"{\\\""},
}

// repeatTo repeats unit to n bytes.
func repeatTo(unit string, n int) string {
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// BenchmarkDetectorAdversarial runs each built-in detector alone on each
// adversarial text, then all of them together (all): every detector
// must be linear in its input (100 ms per MB on one core, docs/redaction.md).
// Run with -cpu 1; cpu-ms/op is the figure to read on a shared machine.
func BenchmarkDetectorAdversarial(b *testing.B) {
	n := *benchBytes
	for _, det := range append(Builtins(), "all") {
		cfg := NewDefaultConfig()
		if det != "all" {
			cfg.Detectors = []string{det}
		}
		r, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range adversarial {
			text := repeatTo(in.unit, n)
			b.Run(det+"/"+in.name, func(b *testing.B) {
				b.SetBytes(int64(n))
				reportCPU(b, func() { _ = r.Text(text) })
			})
		}
	}
}

// realistic is one agent run's worth of text: chat, tool arguments
// serialised twice, URLs and log lines, with values to mask and
// look-alikes to keep.
const realistic = `user: Hi, I'm Jane (jane.doe@example.com), card:4111 1111 1111 1111, call me on +44 20 7946 0958 or tel:5551234567.
assistant: Thanks! Order ORD-2024-001234 placed 2024-03-18T09:41:07Z, version 1.28.4, id 6ba7b810-9dad-11d1-80b4-00c04fd430c8.
tool: {"name":"lookup","arguments":"{\"email\":\"bob\\u0040example.com\",\"phone\":\"+1-555-123-4567\",\"ip\":\"10.0.0.1\"}"}
GET /api/users?email=bob%40example.com&iban=DE89370400440532013000 HTTP/1.1 200 1234 0.023
2024-03-18 09:41:07.123 INFO host=10.0.0.1 latency_ms=1234 Authorization: Bearer%20abc123DEF456ghi789 api_key_sk-proj-Q7vX2mB9kL4pR8tW1yZ6nC3dF5gH0jKa
`

// BenchmarkRedactText is the whole redaction (every built-in) of 1 MB of
// realistic text (the must: 300 ms on one core) and of the adversarial
// texts mixed.
func BenchmarkRedactText(b *testing.B) {
	n := *benchBytes
	r, err := New(NewDefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var mixed strings.Builder
	for mixed.Len() < n {
		for _, in := range adversarial {
			mixed.WriteString(repeatTo(in.unit, 4096))
			mixed.WriteByte(' ')
		}
	}
	for _, tc := range []struct{ name, text string }{
		{"realistic", repeatTo(realistic, n)},
		{"adversarial_mixed", mixed.String()[:n]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			reportCPU(b, func() { _ = r.Text(tc.text) })
		})
	}
}

// BenchmarkReason is redacting a typical reason with every built-in: no
// value in it, numbers among the words.
func BenchmarkReason(b *testing.B) {
	r, err := New(NewDefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	reasons := []string{
		"4 of 4 calls in expected order (LCS / longer length)",
		"3 of 4 tool calls succeeded; failed: call #4 book_hotel: span status ERROR",
		"within the limits: total tokens 3060 <= 100000",
		"the answer cites the order ORD-2024-001234 placed on 2026-06-12 at 10:45",
	}
	for i, s := range reasons {
		b.Run(strconv.Itoa(i), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r.Text(s) != s {
					b.Fatal("changed")
				}
			}
		})
	}
}
