package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/evalbridge/evalbridge/internal/textutil"
)

// thinkBlock is the reasoning some models (DeepSeek-R1, Qwen3 …) print
// before their answer; a JSON object in it is not the verdict.
var thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)

// ExtractJSON returns the first JSON object in a reply's content (docs/contract.md
// §10): prose and code fences around it are ignored. Errors quote at
// most a short excerpt of the content; Client.Complete returns content
// already redacted, so the excerpt holds no key.
func ExtractJSON(content string) (json.RawMessage, error) {
	s := thinkBlock.ReplaceAllString(content, "")
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the judge's reply is empty")
	}
	tries := 0
	for i := 0; i < len(s) && tries < 64; i++ {
		if s[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			continue
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			return raw, nil
		}
	}
	return nil, fmt.Errorf("the judge's reply holds no JSON object (%d bytes, beginning %q)", len(content), clip(content, excerptBytes))
}

// DecodeReply extracts the first JSON object of content into out. Only the
// fields out declares are read; anything else in the object is ignored.
func DecodeReply(content string, out any) error {
	raw, err := ExtractJSON(content)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the judge's JSON reply does not have the requested shape: %s (%d bytes, beginning %q)", clip(err.Error(), excerptBytes), len(raw), clip(string(raw), excerptBytes))
	}
	return nil
}

func clip(s string, n int) string { return textutil.Ellipsis(s, n) }
