package redact

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The spellings people write (docs/contract.md §20, issue 34): after any
// punctuation or label, URL-encoded, JSON-escaped, in JSON serialised
// twice, phone numbers in national and international forms; and the
// look-alikes that stay.
func TestFormsPeopleWrite(t *testing.T) {
	r := defaultRedactor(t)
	for _, tc := range []struct{ in, want string }{
		// after a label or punctuation
		{"Card:4111111111111111", "Card:[REDACTED:credit_card#1]"},
		{"card:4111 1111 1111 1111", "card:[REDACTED:credit_card#1]"},
		{"cc=4111-1111-1111-1111&x=1", "cc=[REDACTED:credit_card#1]&x=1"},
		{"tel:+15551234567", "tel:[REDACTED:phone#1]"},
		{"tel:+1-555-123-4567", "tel:[REDACTED:phone#1]"},
		{"ip:192.168.1.10", "ip:[REDACTED:ip_address#1]"},
		{"host=10.0.0.1", "host=[REDACTED:ip_address#1]"},
		{"host:10.0.0.1:8080", "host:[REDACTED:ip_address#1]:8080"},
		{"addr:fe80::1ff:fe23:4567:890a", "addr:[REDACTED:ip_address#1]"},
		{"api_key_sk-abc123DEF456ghi789JKL012", "api_key_[REDACTED:secret#1]"},
		{"token_AKIAIOSFODNN7EXAMPLE.", "token_[REDACTED:secret#1]."},
		{`"email":"bob@example.com"`, `"email":"[REDACTED:email#1]"`},
		{"IBAN:DE89370400440532013000", "IBAN:[REDACTED:iban#1]"},
		// URL-encoded
		{"?email=bob%40example.com&x=1", "?email=[REDACTED:email#1]&x=1"},
		{"?e=bob%2540example.com", "?e=[REDACTED:email#1]"},
		{"Authorization: Bearer%20abc123DEF456ghi789", "Authorization: Bearer%20[REDACTED:secret#1]"},
		{"?phone=%2B14155550123&ok=1", "?phone=[REDACTED:phone#1]&ok=1"},
		// JSON-escaped, HTML character references
		{`bob\u0040example.com`, "[REDACTED:email#1]"},
		{`bob&#64;example.com`, "[REDACTED:email#1]"},
		{`line\nCard: 4111111111111111\n`, `line\nCard: [REDACTED:credit_card#1]\n`},
		// phones, national and international
		{"call 1-800-555-1234 now", "call [REDACTED:phone#1] now"},
		{"1 (800) 555-1234", "[REDACTED:phone#1]"},
		{"+44 20 7946 0958", "[REDACTED:phone#1]"},
		{"+1-555-123-4567", "[REDACTED:phone#1]"},
		{"UK 020 7946 0958, mobile 07700 900123", "UK [REDACTED:phone#1], mobile [REDACTED:phone#2]"},
		{"DE 030 12345678, 030/1234567, +49 (0)30 1234567", "DE [REDACTED:phone#1], [REDACTED:phone#2], [REDACTED:phone#3]"},
		{"FR 06 12 34 56 78, 01.42.68.53.00, +33 6 12 34 56 78", "FR [REDACTED:phone#1], [REDACTED:phone#2], [REDACTED:phone#3]"},
		{"IN +91 98765 43210, 98765 43210, 098765 43210", "IN [REDACTED:phone#1], [REDACTED:phone#2], [REDACTED:phone#3]"},
		// bare digit runs: only right after a phone cue
		{"tel:5551234567", "tel:[REDACTED:phone#1]"},
		{"phone=5551234567", "phone=[REDACTED:phone#1]"},
		{"mobile: 07700900123", "mobile: [REDACTED:phone#1]"},
		{"fax 0301234567", "fax [REDACTED:phone#1]"},
		{"call me at 5551234567", "call me at [REDACTED:phone#1]"},
		{"phone number is 5551234567", "phone number is [REDACTED:phone#1]"},
		{`"contactPhone":"5551234567"`, `"contactPhone":"[REDACTED:phone#1]"`},
		{"id 5551234567, order #2352023392, ts 1710755267123", "id 5551234567, order #2352023392, ts 1710755267123"},
		{`"call_id":"call_5551234567","count":5551234567`, `"call_id":"call_5551234567","count":5551234567`},
		{"hotel_id=55512345678", "hotel_id=55512345678"},
		// look-alikes kept
		{"ORD-2024-001234 on 2024-03-18T09:41:07Z", "ORD-2024-001234 on 2024-03-18T09:41:07Z"},
		{"4111 1111 1111 1112 fails Luhn", "4111 1111 1111 1112 fails Luhn"},
		{"v1.2.3.4, version 3.10.12.1, go1.22.4", "v1.2.3.4, version 3.10.12.1, go1.22.4"},
		{"uuid 123e4567-e89b-12d3-a456-426614174000", "uuid 123e4567-e89b-12d3-a456-426614174000"},
		{"score 0.4111111111111111", "score 0.4111111111111111"},
		{"logo@2x.png user@localhost pkg@1.2.3", "logo@2x.png user@localhost pkg@1.2.3"},
		{"Seats 12 14 16 18 20 22 24; 4,294,967,296 bytes; 10:30:00", "Seats 12 14 16 18 20 22 24; 4,294,967,296 bytes; 10:30:00"},
		{"SKU 0012345678905, ISBN 978-0-306-40615-7", "SKU 0012345678905, ISBN 978-0-306-40615-7"},
	} {
		assert.Equal(t, tc.want, r.Text(tc.in), "%s", tc.in)
	}
}

// Tool arguments serialised twice (and three times): the value is found at
// every depth, each level stays valid JSON with its structure, and a
// number that is a card or phone becomes a string.
func TestJSONInJSONStrings(t *testing.T) {
	r := defaultRedactor(t)
	inner := `{"email":"bob\u0040example.com","card":4111111111111111,"mobile":4155550123,"n":1710755267123}`
	once, _ := json.Marshal(map[string]any{"arguments": inner})
	twice, _ := json.Marshal(map[string]any{"call": string(once)})

	out := r.Text(string(twice))
	require.True(t, json.Valid([]byte(out)), out)
	var lvl1 map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &lvl1))
	var lvl2 map[string]string
	require.NoError(t, json.Unmarshal([]byte(lvl1["call"]), &lvl2))
	var lvl3 map[string]any
	require.NoError(t, json.Unmarshal([]byte(lvl2["arguments"]), &lvl3))
	assert.Equal(t, map[string]any{
		"email":  "[REDACTED:email#1]",
		"card":   "[REDACTED:credit_card#1]",
		"mobile": "[REDACTED:phone#1]",
		"n":      float64(1710755267123),
	}, lvl3)

	// in prose around it, too, and the numbering holds across
	s := r.NewSession()
	text := "args: " + string(once) + " then bob@example.com and tel:4155550123"
	out = s.Text(text)
	assert.Equal(t, `args: {"arguments":"{\"email\":\"[REDACTED:email#1]\",\"card\":\"[REDACTED:credit_card#1]\",\"mobile\":\"[REDACTED:phone#1]\",\"n\":1710755267123}"} then [REDACTED:email#1] and tel:[REDACTED:phone#1]`, out)
	// escaped JSON that is not parsed as JSON (in prose, not a document)
	// is still read through its escapes
	assert.Equal(t, `say "{\"to\":\"[REDACTED:email#1]\"}`, r.Text(`say "{\"to\":\"kim\\u0040example.org\"}`))
}

// Redacting twice changes nothing more; a value found only once its
// neighbour is masked is found in the first call.
func TestIdempotent(t *testing.T) {
	r := defaultRedactor(t)
	for _, in := range []string{
		"a@b.co4111111111111111",
		"mail jane@example.com, card 4111 1111 1111 1111, tel:5551234567, ip 10.0.0.1",
		`{"a":"[REDACTED:email#1] and x@example.com","b":[4111111111111111]}`,
		"[REDACTED:phone#2] then +44 20 7946 0958",
		// values glued to each other: deciding on a neighbour that is masked
		// later would find one more per call
		"+15551234567+15551234567+15551234567+15551234567+15551234567+15551234567",
		"4111 1111 1111 1111A4111 1111 1111 1111A4111 1111 1111 1111A4111 1111 1111 1111A4111 1111 1111 1111A 4111 1111 1111 1111",
		"a@b.co4111111111111111a@b.co4111111111111111a@b.co4111111111111111a@b.co4111111111111111a@b.co",
		"AKIAIOSFODNN7EXAMPLEAKIAIOSFODNN7EXAMPLE DE89370400440532013000DE89370400440532013000",
	} {
		once := r.Text(in)
		assert.Equal(t, once, r.Text(once), "%s", in)
	}
}
