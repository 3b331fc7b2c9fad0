package evaluators

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startRemote validates, builds and starts a remote evaluator instance.
func startRemote(t *testing.T, opts map[string]any) *Instance {
	t.Helper()
	in, _ := startRemoteLogged(t, opts)
	return in
}

func TestRemoteSendsTheCaseAndReadsTheReply(t *testing.T) {
	var got struct {
		Evaluator string         `json:"evaluator"`
		Case      map[string]any `json:"case"`
	}
	var auth, custom string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, custom = r.Header.Get("Authorization"), r.Header.Get("X-Team")
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = io.WriteString(w, `{"score": 0.8, "reason": "looks fine"}`)
	}))
	defer srv.Close()
	c := testCELCase()
	c.Output = strings.Repeat("x", 5000)
	in := startRemote(t, obj("endpoint", srv.URL, "api_key", "sk-secret-1", "headers", obj("X-Team", "t1-secret"), "max_field_bytes", 100))
	check(t, in.Evaluate(context.Background(), c), scored(0.8, 0.5, "looks fine"))
	if got.Evaluator != "my_remote" || auth != "Bearer sk-secret-1" || custom != "t1-secret" {
		t.Fatalf("evaluator %q auth %q header %q", got.Evaluator, auth, custom)
	}
	calls := got.Case["tool_calls"].([]any)
	if len(calls) != 2 || calls[1].(map[string]any)["arguments"].(map[string]any)["nights"] != 5.0 ||
		got.Case["llm_calls"] != 2.0 || got.Case["usage"].(map[string]any)["total_tokens"] != 1200.0 ||
		got.Case["attributes"].(map[string]any)["app.user.tier"] != "gold" {
		t.Fatalf("case = %v", got.Case)
	}
	// Free text is clipped as for judge prompts.
	if out := got.Case["output"].(string); len(out) > 200 || !strings.Contains(out, "truncated") {
		t.Fatalf("output not clipped: %d bytes", len(out))
	}
}

func TestRemoteSkippedAndBadReplies(t *testing.T) {
	reply := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, <-reply)
	}))
	defer srv.Close()
	in := startRemote(t, obj("endpoint", srv.URL, "retry", obj("max_attempts", 1)))
	for body, w := range map[string]want{
		`{"skipped": "no refund in this run"}`: skipped("no refund in this run"),
		`{"score": "0.9"}`:                     scored(0.9, 0.5),
		`{"skipped": ""}`:                      skipped("the remote evaluator skipped the case"),
		`{"score": 1.7, "reason": "x"}`:        {status: StatusError, reason: "outside [0, 1]"},
		`<html>oops</html>`:                    {status: StatusError, reason: "not {\"score\""},
		`{"reason": "forgot the score"}`:       {status: StatusError, reason: "neither \"score\" nor \"skipped\""},
	} {
		reply <- body
		check(t, in.Evaluate(context.Background(), testCELCase()), w)
	}
}

func TestRemoteErrorsNeverCarrySecrets(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		// A server that echoes the request's credentials in its error page.
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "internal error; auth was "+r.Header.Get("Authorization")+" team "+r.Header.Get("X-Team"))
	}))
	defer srv.Close()
	in := startRemote(t, obj("endpoint", srv.URL, "api_key", "sk-secret-2", "headers", obj("X-Team", "team-secret"),
		"retry", obj("max_attempts", 2, "initial_backoff", "1ms", "max_backoff", "1ms")))
	r := in.Evaluate(context.Background(), testCELCase())
	check(t, r, want{status: StatusError, reason: "HTTP 500"})
	if strings.Contains(r.Reason, "sk-secret-2") || strings.Contains(r.Reason, "team-secret") || !strings.Contains(r.Reason, "[REDACTED]") {
		t.Fatalf("reason leaks or is not redacted: %q", r.Reason)
	}
	if n.Load() != 2 || !strings.Contains(r.Reason, "attempt 2 of 2") {
		t.Fatalf("attempts %d, reason %q", n.Load(), r.Reason)
	}
}

func TestRemoteHangIsATimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	in := startRemote(t, obj("endpoint", srv.URL, "timeout", "50ms", "retry", obj("max_attempts", 1)))
	check(t, in.Evaluate(context.Background(), testCELCase()), want{status: StatusTimeout, reason: "within the `timeout` of 50ms"})
	// The trace's deadline ends a hung request too.
	in = startRemote(t, obj("endpoint", srv.URL, "timeout", "1h"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	check(t, in.Evaluate(ctx, testCELCase()), want{status: StatusTimeout, reason: "did not answer in time"})
}

func TestRemoteHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		first := len(at) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, `{"score": 1}`)
	}))
	defer srv.Close()
	// The backoff alone would retry after 1ms: the wait is Retry-After's.
	in := startRemote(t, obj("endpoint", srv.URL, "retry", obj("max_attempts", 2, "initial_backoff", "1ms", "max_backoff", "1ms")))
	check(t, in.Evaluate(context.Background(), testCELCase()), scored(1, 0.5))
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 || at[1].Sub(at[0]) < 900*time.Millisecond {
		t.Fatalf("attempts at %v: the retry did not wait for Retry-After", at)
	}
}

func TestRemoteRetryAfterPastTheDeadlineGivesUp(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	in := startRemote(t, obj("endpoint", srv.URL))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check(t, in.Evaluate(ctx, testCELCase()), want{status: StatusError, reason: "past the evaluation's deadline"})
	if n.Load() != 1 {
		t.Fatalf("attempts = %d", n.Load())
	}
}

func TestRemoteConfigErrors(t *testing.T) {
	for opts, wantErr := range map[string]string{
		`{}`:                      "`endpoint` is required",
		`{"endpoint": "ftp://x"}`: "not an http(s) URL",
		`{"endpoint": "http://x", "timeout": "0s"}`:       "`timeout`",
		`{"endpoint": "http://x", "max_concurrency": -1}`: "max_concurrency",
		`{"endpoint": "http://x", "endpint": "y"}`:        "endpint",
	} {
		var o map[string]any
		if err := json.Unmarshal([]byte(opts), &o); err != nil {
			t.Fatal(err)
		}
		err := (&Config{Type: "remote", Name: "r", Options: o}).Validate()
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), `evaluator "r"`) {
			t.Errorf("%s: err = %v, want %q", opts, err, wantErr)
		}
	}
	// Not started: an error result, not a panic.
	insts, err := Build([]Config{{Type: "remote", Options: obj("endpoint", "http://localhost:1")}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, insts[0].Evaluate(context.Background(), testCELCase()), want{status: StatusError, reason: "not started"})
}
