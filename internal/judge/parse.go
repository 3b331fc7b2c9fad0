package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/evalbridge/evalbridge/internal/textutil"
)

// thinkBlock is the reasoning some models (DeepSeek-R1, Qwen3 …) print
// before their answer; a JSON object in it is not the verdict.
var thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)

// maxFailedStarts bounds the '{' that do not begin a JSON object a reply
// may hold before the search stops: each costs a decode of the rest.
const maxFailedStarts = 64

// objects returns the top-level JSON objects of a reply's content, in
// order: prose and code fences around them are ignored, and an object
// nested in another is part of it, not one of its own.
func objects(content string) ([]json.RawMessage, error) {
	s := thinkBlock.ReplaceAllString(content, "")
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the judge's reply is empty")
	}
	var out []json.RawMessage
	failed := 0
	for i := 0; i < len(s) && failed < maxFailedStarts; i++ {
		if s[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			failed++
			continue
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			out = append(out, raw)
			i += int(dec.InputOffset()) - 1
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the judge's reply holds no JSON object (%d bytes, beginning %q)", len(content), clip(content, excerptBytes))
	}
	return out, nil
}

// ExtractJSON returns the last JSON object in a reply's content
// (docs/contract.md §10); prose and code fences around it are ignored.
// Errors quote at most a short excerpt of the content; Client.Complete
// returns content already redacted, so the excerpt holds no key.
func ExtractJSON(content string) (json.RawMessage, error) {
	objs, err := objects(content)
	if err != nil {
		return nil, err
	}
	return objs[len(objs)-1], nil
}

// DecodeReply decodes into out (a pointer to a struct) the verdict of a
// reply (docs/contract.md §10): the last JSON object in the content that
// holds the fields out asks for (its JSON field names but `reason`, which
// every prompt asks for as an explanation), so that an object the judge
// quotes from the judged content earlier in its reply does not count.
// When no object holds them all, the last one holding the most counts.
// Only the fields out declares are read.
func DecodeReply(content string, out any) error {
	objs, err := objects(content)
	if err != nil {
		return err
	}
	asked := askedFields(out)
	best, bestN := len(objs)-1, -1
	for i, raw := range objs {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		n := 0
		for _, f := range asked {
			if _, ok := m[f]; ok {
				n++
			}
		}
		if n >= bestN {
			best, bestN = i, n
		}
	}
	raw := objs[best]
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the judge's JSON reply does not have the requested shape: %s (%d bytes, beginning %q)", clip(err.Error(), excerptBytes), len(raw), clip(string(raw), excerptBytes))
	}
	return nil
}

// askedFields are the JSON names of the fields of the struct out points to,
// but `reason`.
func askedFields(out any) []string {
	t := reflect.TypeOf(out)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-", "reason":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

func clip(s string, n int) string { return textutil.Ellipsis(s, n) }
