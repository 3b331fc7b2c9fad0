// Package judgetest is an OpenAI-compatible chat-completions server for
// tests: it records every request and answers with scripted replies and
// faults (status codes, Retry-After, delays, garbage).
package judgetest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/evalbridge/evalbridge/internal/judge"
)

// Request is one request the server received.
type Request struct {
	Path           string
	Header         http.Header
	Model          string          `json:"model"`
	Messages       []judge.Message `json:"messages"`
	Temperature    *float64        `json:"temperature"`
	MaxTokens      int             `json:"max_tokens"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Raw []byte
}

// System and User return the content of the first message with that role.
func (r Request) System() string { return r.role("system") }
func (r Request) User() string   { return r.role("user") }

func (r Request) role(role string) string {
	for _, m := range r.Messages {
		if m.Role == role {
			return m.Content
		}
	}
	return ""
}

// Reply is what the server answers. The zero Status is 200; Content becomes
// choices[0].message.content unless Body is set, which is sent as is.
type Reply struct {
	Status  int
	Content string
	Body    string
	Header  map[string]string
	Delay   time.Duration
	// InputTokens and OutputTokens are reported in `usage` (defaults 10 and 5).
	InputTokens, OutputTokens int64
	// NoUsage leaves `usage` out of the reply (some servers do).
	NoUsage bool
}

// Server is a scripted chat-completions endpoint.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Request
	answer   func(n int, r Request) Reply

	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

// New starts a server that answers request number n (from 1) with answer(n, request).
// It is closed when the test ends.
func New(t testing.TB, answer func(n int, r Request) Reply) *Server {
	s := &Server{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// NewHeld starts a server that answers every request with content, but
// only once release is called: a judge that hangs until the test lets it
// answer. release may be called more than once; it is called when the test
// ends, before the server closes.
func NewHeld(t testing.TB, content string) (s *Server, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	s = New(t, func(int, Request) Reply {
		<-ch
		return Reply{Content: content}
	})
	t.Cleanup(release)
	return s, release
}

// Endpoint is the API base to configure (`endpoint:`).
func (s *Server) Endpoint() string { return s.URL + "/v1" }

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MaxInFlight is the most requests the server was serving at once.
func (s *Server) MaxInFlight() int { return int(s.maxInFlight.Load()) }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	body, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: body}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	idx := len(s.requests)
	s.mu.Unlock()

	rep := s.answer(idx, req)
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if rep.Body != "" {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	if status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"scripted failure"}}`)
		return
	}
	in, out := rep.InputTokens, rep.OutputTokens
	if in == 0 && out == 0 {
		in, out = 10, 5
	}
	resp := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.Content}}},
	}
	if !rep.NoUsage {
		resp["usage"] = map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Always answers every request with the same content.
func Always(content string) func(int, Request) Reply {
	return func(int, Request) Reply { return Reply{Content: content} }
}

// tokenPattern splits text the way BPE tokenizers roughly do: runs of
// letters, runs of digits, and every other non-space character alone.
var tokenPattern = regexp.MustCompile(`[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]`)

// CountTokens counts a text's tokens by tokenPattern: an honest count by
// another method than the client's estimate (bytes/4), so tests can
// measure the estimate's error.
func CountTokens(s string) int64 { return int64(len(tokenPattern.FindAllStringIndex(s, -1))) }

// PromptTokens counts a request's input tokens: CountTokens of each
// message's content plus 4 per message (role and framing, as OpenAI's
// chat format counts them).
func (r Request) PromptTokens() int64 {
	var n int64
	for _, m := range r.Messages {
		n += CountTokens(m.Content) + 4
	}
	return n
}

// Counting answers every request with content and reports the usage the
// server counted: PromptTokens of the request, CountTokens of content.
func Counting(content string) func(int, Request) Reply {
	return func(_ int, r Request) Reply {
		return Reply{Content: content, InputTokens: r.PromptTokens(), OutputTokens: CountTokens(content)}
	}
}

// StartClient validates cfg and starts a judge client named "default" with
// it; the client is shut down when the test ends.
func StartClient(t testing.TB, cfg judge.Config, set component.TelemetrySettings) *judge.Client {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	c, err := judge.New("default", cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c
}
