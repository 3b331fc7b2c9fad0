package evaluators

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fast path may only say "valid" where the general validator does: over
// schemas of its shape and of others, and values valid and invalid.
func TestFastSchemaAgreesWithValidator(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"q":{"type":"string","description":"query"}},"required":["q"]}`,
		`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"}},"required":["q","n"],"additionalProperties":false}`,
		`{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]},"tags":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"]},"b":{"type":"boolean"}}}`,
		`{"type":"object","properties":{"q":{"type":"string","pattern":"^p"}}}`, // not of the shape: never fast
		`{"type":"object","properties":{"q":{"type":"string","format":"date"}}}`,
		`{"type":"object","properties":{"q":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":1.5}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","maximum":1.0}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1.00000000000000000001}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","multipleOf":2}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object"}`,
		`{}`,
		// integer bounds and lengths
		`{"type":"object","properties":{"q":{"type":"string","minLength":3,"maxLength":5},"n":{"type":"integer","minimum":1,"maximum":2},"x":{"type":"number","exclusiveMinimum":-3,"exclusiveMaximum":2}}}`,
		`{"type":"object","properties":{"tags":{"type":"array","minItems":1,"maxItems":1,"items":{"type":"string","maxLength":1}},"x":{"minimum":0}}}`,
		`{"type":"object","properties":{"q":{"type":"string","maxLength":0},"n":{"exclusiveMaximum":0,"exclusiveMinimum":-9007199254740992}}}`,
	}
	const bounded = 3 // the last schemas, with bounds
	pool := []any{nil, true, false, "", "c", "f", "paris", "pär", "日本語", "日本語です", "é", 0.0, 1.0, 2.0, 2.5, -3.0, -2.999999, -9007199254740992.0,
		-9007199254740993.0, 0.9999999999999999, 1.0000000000000002, 1e300, -1e300, []any{}, []any{"a"}, []any{"日"}, []any{"ab"},
		[]any{"a", "b"}, []any{1.0, "a"},
		map[string]any{}, map[string]any{"a": nil}, map[string]any{"a": "x"}, map[string]any{"a": 1.0}}
	keys := []string{"q", "n", "x", "unit", "tags", "o", "b", "a", "extra"}
	rng := rand.New(rand.NewPCG(1, 2))
	randomArgs := func() map[string]any {
		m := map[string]any{}
		for _, k := range keys {
			if rng.IntN(3) == 0 {
				m[k] = pool[rng.IntN(len(pool))]
			}
		}
		return m
	}
	fastValid := 0
	for n, text := range schemas {
		cs := compileSchema([]byte(text))
		require.NoError(t, cs.err, text)
		fast, invalid := 0, 0 // of this schema: said valid by the fast path; invalid by the validator
		defer func() {
			if n >= len(schemas)-bounded { // answered fast, and not vacuously
				assert.Greater(t, fast, 100, text)
				assert.Greater(t, invalid, 100, text)
			}
		}()
		for i := 0; i < 3000; i++ {
			args := randomArgs()
			if i < 3 { // and the typical valid calls
				args = map[string]any{"q": "paris", "n": 2.0, "unit": "c", "tags": []any{"a"}, "o": map[string]any{"a": nil}, "b": true}
			}
			if cs.schema.Validate(args) != nil {
				invalid++
			}
			if cs.fast == nil || !cs.fast.valid(args) {
				continue
			}
			fastValid++
			fast++
			b, _ := json.Marshal(args)
			require.NoError(t, cs.schema.Validate(args), "fast path says valid: schema %s, arguments %s", text, b)
		}
	}
	assert.Greater(t, fastValid, 1000, "the fast path answers for the common shapes")
	for _, text := range schemas[4:11] {
		assert.Nil(t, compileSchema([]byte(text)).fast, text)
	}
}

// A call the fast path does not pass gets the general validator's message.
func TestFastSchemaFallsBackWithMessage(t *testing.T) {
	cs := compileSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`))
	require.NotNil(t, cs.fast)
	for args, want := range map[string]string{
		`{"n":1.5}`:         "at /n: expected integer, but got number",
		`{}`:                "at /: missing properties: 'n'",
		`{"n":1,"extra":1}`: "at /: additionalProperties 'extra' not allowed",
	} {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &m))
		assert.False(t, cs.fast.valid(m), args)
		assert.Equal(t, want, validateArgs(cs.schema, m), fmt.Sprint(args))
	}
}
