package judge_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
)

// A judge (or a proxy in front of it) that echoes the request's headers must
// not get the key into a reason or a log line, wherever the echo falls: the
// key is placed at every offset around the cuts (the excerpt of a reply, the
// 300 bytes of an error body), so a redaction done after clipping would
// leave part of it. No 8-byte piece of the key may appear.
func TestJudgeEchoedKeyRedactedAtEveryCut(t *testing.T) {
	const key = "sk-proj-Zq8vN3xR7tL2mK9pW4cB6yH1dF5gJ0aE" // 40 bytes, like a real one
	const header = "X-Custom-Token"
	const headerValue = "hv-9f8e7d6c5b4a39281706"
	type mode int
	const (
		nonJSONContent mode = iota // 200, a chat completion whose content holds no JSON
		shapeContent               // 200, content whose JSON has the wrong shape
		rawBody                    // 200, a body that is not a chat completion
		status401                  // 401 with the echo in the body
	)
	pad := func(n int) string { return strings.Repeat("x", n) }
	var offset int
	var m mode
	srv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		echo := pad(offset) + "Authorization: " + r.Header.Get("Authorization") + " " + header + ": " + r.Header.Get(header) + " end"
		switch m {
		case nonJSONContent:
			return judgetest.Reply{Content: echo}
		case shapeContent:
			return judgetest.Reply{Content: `{"score": "` + echo + `"}`}
		case rawBody:
			return judgetest.Reply{Body: echo}
		default:
			return judgetest.Reply{Status: 401, Body: `{"error":"` + echo + `"}`}
		}
	})
	set, logs := observed(zapcore.DebugLevel)
	cfg := testConfig(srv.Endpoint())
	cfg.APIKey = configopaque.String(key)
	cfg.Headers = configopaque.MapList{{Name: header, Value: configopaque.String(headerValue)}}
	cfg.Retry.MaxAttempts = 1
	cfg.CacheSize = 0
	c := startWith(t, cfg, set)

	var pieces []string
	for _, s := range []string{key, headerValue} {
		for i := 0; i+8 <= len(s); i++ {
			pieces = append(pieces, s[i:i+8])
		}
	}
	leak := func(where, text string) {
		t.Helper()
		for _, p := range pieces {
			if strings.Contains(text, p) {
				t.Fatalf("%s (offset %d, mode %d) holds %q of a secret: %s", where, offset, m, p, text)
			}
		}
	}
	var out struct {
		Score float64 `json:"score"`
	}
	for m = nonJSONContent; m <= status401; m++ {
		for offset = 0; offset <= 340; offset++ {
			content, err := c.Complete(context.Background(), msgs)
			if m >= rawBody {
				if err == nil {
					t.Fatalf("mode %d: want an error", m)
				}
				leak("error", err.Error())
				continue
			}
			if err != nil {
				t.Fatalf("mode %d offset %d: %v", m, offset, err)
			}
			leak("content", content)
			// What a judge evaluator puts into eval.<name>.reason.
			derr := judge.DecodeReply(content, &out)
			if derr == nil {
				t.Fatalf("mode %d: want a decode error", m)
			}
			leak("reason", derr.Error())
			if len(derr.Error()) > 400 {
				t.Fatalf("reason not clipped (%d bytes): %s", len(derr.Error()), derr.Error())
			}
		}
	}
	if logs.Len() == 0 {
		t.Fatal("no log line for the failures")
	}
	for _, line := range logLines(logs) {
		leak("log", line)
	}
}
