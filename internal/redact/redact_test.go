package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// defaultRedactor is a Redactor with the default config.
func defaultRedactor(t testing.TB) *Redactor {
	t.Helper()
	r, err := New(NewDefaultConfig(), nil)
	require.NoError(t, err)
	return r
}

func decode(t *testing.T, raw map[string]any) (Config, error) {
	t.Helper()
	cfg := NewDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(&cfg))
	return cfg, confmap.Validate(&cfg)
}

func TestConfigDecodeAndValidate(t *testing.T) {
	cfg, err := decode(t, map[string]any{})
	require.NoError(t, err)
	assert.Equal(t, Builtins(), cfg.Detectors, "default: every built-in")
	assert.Equal(t, DefaultReplacement, cfg.Replacement)

	cfg, err = decode(t, map[string]any{"detectors": []any{}})
	require.NoError(t, err)
	assert.Empty(t, cfg.Detectors, "detectors: [] turns the built-ins off")
	r, err := New(cfg, nil)
	require.NoError(t, err)
	assert.Nil(t, r, "nothing configured: no redactor")
	assert.Equal(t, "mail alice@example.com", r.Text("mail alice@example.com"), "a nil redactor changes nothing")

	cfg, err = decode(t, map[string]any{"detectors": []any{"email"}, "patterns": []any{map[string]any{"name": "customer_id", "regex": `CUST-\d{8}`}}})
	require.NoError(t, err)
	r, err = New(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"email", "customer_id"}, r.Names())
	assert.Equal(t, "[REDACTED:customer_id#1] is [REDACTED:email#1], call +1 415 555 0132",
		r.Text("CUST-12345678 is a@example.com, call +1 415 555 0132"))

	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"detectors": []any{"emails"}}, `detectors[0]: "emails" is not a built-in detector (built-ins: secret, email, credit_card, iban, ip_address, phone)`},
		{map[string]any{"patterns": []any{map[string]any{"name": "order", "regex": `ORD-(\d+`}}}, `patterns[0] (order): regex "ORD-(\\d+" is not valid RE2: error parsing regexp: missing closing ): ` + "`ORD-(\\d+`"},
		{map[string]any{"patterns": []any{map[string]any{"name": "x", "regex": `a*`}}}, `patterns[0] (x): regex "a*" matches the empty string`},
		{map[string]any{"patterns": []any{map[string]any{"regex": `a`}}}, `patterns[0]: name is required`},
		{map[string]any{"patterns": []any{map[string]any{"name": "Bad Name", "regex": `a`}}}, `must match [a-z0-9_]+`},
		{map[string]any{"patterns": []any{map[string]any{"name": "email", "regex": `a`}}}, `is a built-in detector's`},
		{map[string]any{"replacement": ""}, `replacement must not be empty`},
	} {
		_, err := decode(t, tc.raw)
		require.Error(t, err, "%v", tc.raw)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// Within one session the same value gets the same placeholder, distinct
// values distinct numbers; spellings of one value (case, separators) are
// one value. A new session numbers from 1 again.
func TestSessionNumbering(t *testing.T) {
	counts := map[string]int{}
	r, err := New(NewDefaultConfig(), func(d string) { counts[d]++ })
	require.NoError(t, err)
	s := r.NewSession()
	assert.Equal(t, "[REDACTED:email#1] wrote to [REDACTED:email#2]", s.Text("alice@example.com wrote to bob@example.org"))
	assert.Equal(t, "again [REDACTED:email#1], card [REDACTED:credit_card#1] = [REDACTED:credit_card#1]",
		s.Text("again Alice@Example.com, card 4111 1111 1111 1111 = 4111-1111-1111-1111"))
	assert.Equal(t, "[REDACTED:email#1]", r.Text("bob@example.org"))
	assert.Equal(t, map[string]int{"email": 4, "credit_card": 2}, counts)

	cfg := NewDefaultConfig()
	cfg.Replacement = "<{name}:{n}>"
	r, err = New(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, "<phone:1> or <phone:1>, <secret:1>", r.Text("+44 20 7946 0958 or +442079460958, AKIAIOSFODNN7EXAMPLE"))
}

// JSON keeps its structure and layout: only strings (and numbers that are
// card or phone numbers) change, and the result decodes to the same shape.
func TestJSON(t *testing.T) {
	r := defaultRedactor(t)
	in := []byte("{\n  \"input\": \"I am alice@example.com\\nmy card: 4111111111111111\",\n  \"n\": 4111111111111111,\n" +
		"  \"ok\": 12345, \"tool\": {\"args\": \"{\\\"to\\\":\\\"alice@example.com\\\"}\"},\n  \"alice@example.com\": [\"<b>\"]\n}")
	out := r.JSON(in)
	require.True(t, json.Valid(out), "%s", out)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	assert.Equal(t, "I am [REDACTED:email#1]\nmy card: [REDACTED:credit_card#1]", v["input"])
	assert.Equal(t, "[REDACTED:credit_card#1]", v["n"])
	assert.Equal(t, float64(12345), v["ok"])
	assert.Equal(t, `{"to":"[REDACTED:email#1]"}`, v["tool"].(map[string]any)["args"])
	assert.Contains(t, v, "[REDACTED:email#1]")
	assert.Contains(t, string(out), `["<b>"]`, "strings not redacted are left as written")

	// not JSON: redacted as text
	assert.Equal(t, "x [REDACTED:email#1] {", string(r.JSON([]byte("x a@example.com {"))))
	// nothing to redact: the same bytes
	same := []byte(`{"a": "b"}`)
	assert.Same(t, &same[0], &r.JSON(same)[0])
}

// Spot checks of the detectors on text; and of a field cut to
// max_field_bytes, which may end in part of a value that no detector
// recognises any more: the partial tokens before the cut marker go when
// they hold a digit or an '@'; prose stays.
func TestSpotChecks(t *testing.T) {
	r := defaultRedactor(t)
	text := r.Text
	cut := func(s string) string { return string(r.JSON([]byte(s))) }
	for _, tc := range []struct {
		redact   func(string) string
		in, want string
	}{
		{text, "Authorization: Bearer abc123DEF456ghi789", "Authorization: Bearer [REDACTED:secret#1]"},
		{text, "Bearer tokens are fine", "Bearer tokens are fine"},
		{text, "4111 1111 1111 1112 fails Luhn", "4111 1111 1111 1112 fails Luhn"},
		{text, "GB29 NWBK 6016 1331 9268 19 and more", "[REDACTED:iban#1] and more"},
		{text, "GB29 NWBK 6016 1331 9268 18", "GB29 NWBK 6016 1331 9268 18"},
		{text, "from 10.0.0.1 at 2024-01-15 10:30:00", "from [REDACTED:ip_address#1] at 2024-01-15 10:30:00"},
		{text, "550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-a716-446655440000"},
		{text, "v1.2.3.4 and 1.2.3", "v1.2.3.4 and 1.2.3"},
		{text, "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "[REDACTED:secret#1]"},
		{cut, "pay with 4111 1111 11… [truncated: 6 more bytes]", "pay with … [truncated: 6 more bytes]"},
		{cut, "write to jane.doe@exa… [truncated: 8 more bytes]", "write to … [truncated: 8 more bytes]"},
		{cut, "key sk-proj-Q7vX2m… [truncated: 30 more bytes]", "key … [truncated: 30 more bytes]"},
		{cut, "the customer said hello… [truncated: 99 more bytes]", "the customer said hello… [truncated: 99 more bytes]"},
		{cut, "a@example.com wrote: fine… [truncated: 3 more bytes]", "[REDACTED:email#1] wrote: fine… [truncated: 3 more bytes]"},
		{cut, `{"input": "IBAN DE89 3704 00… [truncated: 9 more bytes]"}`, `{"input": "IBAN … [truncated: 9 more bytes]"}`},
	} {
		assert.Equal(t, tc.want, tc.redact(tc.in), tc.in)
	}
}

// A text that already holds placeholders (a judge's reason quoting its
// prompt) gets new values numbered after them: a different address is not
// made to look like the prompt's email#1.
func TestNumberingAfterExistingPlaceholders(t *testing.T) {
	r := defaultRedactor(t)
	assert.Equal(t, "[REDACTED:email#1] and [REDACTED:email#3] wrote to [REDACTED:email#4]",
		r.Text("[REDACTED:email#1] and [REDACTED:email#3] wrote to bob@example.org"))
	cfg := NewDefaultConfig()
	cfg.Replacement = "<{name}:{n}>"
	r, err := New(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, "<phone:2> then <phone:3>", r.Text("<phone:2> then +44 20 7946 0958"))
	cfg.Replacement = "***"
	r, err = New(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, "*** and ***", r.Text("a@example.com and b@example.com"))
}

// Trace and span ids are hex: a run of decimal digits inside one is no card
// number, however it checks out, in text and in JSON; a card written next
// to one still is.
func TestCardNotInHexIDs(t *testing.T) {
	r, err := New(NewDefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := "2504e4111111111111111fa0ff66f035" // 32 hex digits, a Luhn-valid 4111… run inside
	for _, in := range []string{
		id,
		`{"trace_id":"` + id + `","span_id":"3babca309401826e"}`,
		"https://jaeger.example.com/trace/" + id + "?uiFind=3babca309401826e",
		"sha256:4111111111111111abcdef0123",
	} {
		if got := r.Text(in); got != in {
			t.Errorf("Text(%q) = %q: an id is not a card", in, got)
		}
	}
	for _, in := range []string{"Card:4111111111111111", "card 4111 1111 1111 1111 for " + id, "4111111111111111"} {
		if got := r.Text(in); !strings.Contains(got, "[REDACTED:credit_card") {
			t.Errorf("Text(%q) = %q: the card was not masked", in, got)
		}
	}
}
