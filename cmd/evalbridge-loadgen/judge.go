package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// faultyJudge is an OpenAI-compatible endpoint that misbehaves the ways
// judges and the proxies in front of them do, in turn: it hangs, answers 500
// with the request's Authorization header in the body, answers 200 with
// content that holds no JSON but echoes the header, and answers 401 echoing
// it after a long preamble (so a key that crosses a clipping cut is caught).
// Every fifth request gets a valid verdict.
type faultyJudge struct {
	srv   *http.Server
	addr  string
	calls atomic.Int64
	hang  time.Duration
	stop  chan struct{}
	// redirectTo, when set, gets every tenth request redirected to it (307,
	// same path): a client must not follow it to another host or port.
	redirectTo string
	redirects  atomic.Int64
}

func newFaultyJudge(hang time.Duration) (*faultyJudge, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	j := &faultyJudge{addr: ln.Addr().String(), hang: hang, stop: make(chan struct{})}
	j.srv = &http.Server{Handler: j, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = j.srv.Serve(ln) }()
	return j, nil
}

func (j *faultyJudge) close() {
	close(j.stop)
	_ = j.srv.Close()
}

func (j *faultyJudge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	n := j.calls.Add(1)
	auth := r.Header.Get("Authorization")
	// A preamble of 150 to 290 bytes: over the requests, the key straddles
	// every cut a client may make at 200, 256 or 300 bytes.
	pad := strings.Repeat("proxy trace ", 25)[:150+int(n*13%141)]
	if j.redirectTo != "" && n%10 == 9 {
		j.redirects.Add(1)
		http.Redirect(w, r, j.redirectTo+r.URL.Path, http.StatusTemporaryRedirect)
		return
	}
	// Proxies echo the whole request line and headers: the query and every
	// credential header come back too.
	auth += " " + r.URL.RawQuery + " X-Api-Key: " + r.Header.Get("X-Api-Key")
	switch n % 5 {
	case 0: // hang until the client gives up
		select {
		case <-r.Context().Done():
		case <-j.stop:
		case <-time.After(j.hang):
		}
		http.Error(w, "gateway timeout", http.StatusGatewayTimeout)
	case 1:
		http.Error(w, pad+"upstream failed for request with Authorization: "+auth, http.StatusInternalServerError)
	case 2:
		writeChat(w, pad+"echo: Authorization: "+auth+" (no verdict)")
	case 3:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "%sinvalid key %s", pad, strings.TrimPrefix(auth, "Bearer "))
	default:
		writeChat(w, `{"score": 1, "reason": "fine"}`)
	}
}

func writeChat(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-loadgen", "object": "chat.completion", "model": "judge",
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
}

// hitCounter is a server that only counts the requests it gets: the other
// host of a redirect, which must get none.
type hitCounter struct {
	srv  *http.Server
	addr string
	hits atomic.Int64
}

func newHitCounter() (*hitCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hitCounter{addr: ln.Addr().String()}
	h.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		writeChat(w, `{"score": 1, "reason": "a redirected request"}`)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *hitCounter) close() { _ = h.srv.Close() }
