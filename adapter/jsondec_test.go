package adapter

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var jsonSeeds = []string{
	`{"a":1,"b":[true,false,null,"x"],"c":{"d":-1.5e3}}`, `[]`, `{}`, ` [ 1 , 2 ] `, `"\u00e9\ud83d\ude00\ud800x\n\"\\\/"`,
	`"caf\xc3\xa9"`, "\"\xff\xfe\"", `{"a":1,"a":2}`, `1e999`, `-0`, `01`, `[1,]`, `{"a" 1}`, `"\u12"`, `"\'"`, `tru`,
	`[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`, "\"a\tb\"", `"\ud800\u0041"`, `"\udc00"`, `{"k":"v"} x`,
	`[[[[]]]]`, strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), `1.`, `.5`, `-`, `2E+3`, `"` + "\xed\xa0\x80" + `"`,
}

// checkDecode compares decodeFast with json.Unmarshal: the same value when
// decodeFast succeeds, and an error from json.Unmarshal when it refuses.
func checkDecode(t *testing.T, s string) {
	if jsonTooDeep(s, maxDepth) {
		if _, ok := decodeFast(s); ok {
			t.Fatalf("%q: decodeFast accepted JSON nested deeper than %d", s, maxDepth)
		}
		return
	}
	var want any
	err := json.Unmarshal([]byte(s), &want)
	got, ok := decodeFast(s)
	if ok {
		if err != nil {
			t.Fatalf("%q: decodeFast accepted what json.Unmarshal rejects: %v", s, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v want %#v", s, got, want)
		}
		return
	}
	if err == nil {
		t.Fatalf("%q: decodeFast refused valid JSON (%#v)", s, want)
	}
}

func TestDecodeFast(t *testing.T) {
	for _, s := range jsonSeeds {
		checkDecode(t, s)
	}
	for _, tc := range []struct {
		s    string
		want any
	}{{`"\ud800\u0041"`, "\uFFFDA"}, {"\"\xff\"", "\uFFFD"}, {`{"a":1,"a":2}`, map[string]any{"a": 2.0}}} {
		if got, ok := decodeFast(tc.s); !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %#v %v", tc.s, got, ok)
		}
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(checkDecode)
}
