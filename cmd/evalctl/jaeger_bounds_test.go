package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fullPageTrace is one trace of a misbehaving server's answers.
func fullPageTrace(i int) string {
	id := fmt.Sprintf("%032x", i+1)
	return `{"traceID":"` + id + `","spans":[{"traceID":"` + id + `","spanID":"00000000000000a1","operationName":"invoke_agent",` +
		`"startTime":1700000000000000,"duration":1000,"processID":"p1","tags":[]}],"processes":{"p1":{"serviceName":"svc"}}}`
}

func jaegerConfig(t *testing.T) string {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("evaluators:\n  - type: tool_error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A server that ignores start and end answers a full page for every
// window: evalctl stops at one-second windows and says so (exit 2), after
// at most 2·log2(lookback in seconds) + 10 requests (§23), with progress
// on stderr meanwhile.
func TestJaegerWindowIgnoringServer(t *testing.T) {
	var mu sync.Mutex
	var narrowest int64 = math.MaxInt64
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/services" {
			_, _ = w.Write([]byte(`{"data":["svc"]}`))
			return
		}
		q := r.URL.Query()
		start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
		end, _ := strconv.ParseInt(q.Get("end"), 10, 64)
		limit, _ := strconv.Atoi(q.Get("limit"))
		mu.Lock()
		requests++
		narrowest = min(narrowest, end-start+1)
		mu.Unlock()
		var parts []string
		for i := 0; i < limit; i++ {
			parts = append(parts, fullPageTrace(i))
		}
		_, _ = w.Write([]byte(`{"data":[` + strings.Join(parts, ",") + `]}`))
	}))
	defer srv.Close()

	for _, lookback := range []time.Duration{24 * time.Hour, 30 * 24 * time.Hour, 3 * time.Second} {
		requests, narrowest = 0, math.MaxInt64
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"run", "--config", jaegerConfig(t), "--jaeger", srv.URL,
			"--lookback", lookback.String()}, nil, &bytes.Buffer{}, &stderr)
		bound := int(2*math.Log2(lookback.Seconds())) + 10
		t.Logf("lookback %s: exit %d after %d requests (bound %d), narrowest window %d µs", lookback, code, requests, bound, narrowest)
		if code != exitUsage || !strings.Contains(stderr.String(), "ignores the time window") {
			t.Fatalf("exit %d, stderr %q; want 2 and the window ignored", code, stderr.String())
		}
		if requests > bound {
			t.Errorf("%d requests, want at most %d", requests, bound)
		}
		if narrowest < time.Second.Microseconds() {
			t.Errorf("a window of %d µs was asked: want none below one second", narrowest)
		}
	}
}

// Progress: a line on stderr at least every progressPeriod while paging,
// even when no trace has been read yet.
func TestJaegerProgressWhilePaging(t *testing.T) {
	fj := newFakeJaeger(97, time.Now())
	srv := httptest.NewServer(fj)
	defer srv.Close()
	clock := time.Now()
	src := &jaegerSource{url: srv.URL, lookback: 3 * time.Hour, limit: 1000, pageSize: 10, progressEvery: 1000,
		progressPeriod: 5 * time.Second, now: func() time.Time { clock = clock.Add(3 * time.Second); return clock }}
	var stderr bytes.Buffer
	if _, err := src.pull(context.Background(), &stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(stderr.String(), " requests, ")
	if lines < len(fj.requests)/3 {
		t.Fatalf("%d progress lines for %d requests 3 s apart: %q", lines, len(fj.requests), stderr.String())
	}
}

// An answer larger than --max-answer-bytes is refused with a message
// after reading at most that much, whether it says its length or streams.
func TestJaegerAnswerTooLarge(t *testing.T) {
	var sent atomic.Int64
	huge := func(withLength bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/services" {
				_, _ = w.Write([]byte(`{"data":["svc"]}`))
				return
			}
			const total = 256 << 20
			if withLength {
				w.Header().Set("Content-Length", strconv.Itoa(total))
			}
			n, _ := w.Write([]byte(`{"data":[`))
			sent.Add(int64(n))
			tr := []byte(fullPageTrace(0) + ",")
			for written := n; written < total-len(tr); written += len(tr) {
				n, err := w.Write(tr)
				sent.Add(int64(n))
				if err != nil {
					return // the client hung up
				}
			}
		}
	}
	for _, withLength := range []bool{false, true} {
		sent.Store(0)
		srv := httptest.NewServer(huge(withLength))
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"run", "--config", jaegerConfig(t), "--jaeger", srv.URL,
			"--max-answer-bytes", strconv.Itoa(1 << 20)}, nil, &bytes.Buffer{}, &stderr)
		srv.Close()
		t.Logf("Content-Length %v: exit %d, the server wrote %d bytes of 256 MiB", withLength, code, sent.Load())
		if code != exitUsage || !strings.Contains(stderr.String(), "larger than --max-answer-bytes (1048576 bytes); refused") {
			t.Fatalf("exit %d, stderr %q; want 2 and the answer refused", code, stderr.String())
		}
		if sent.Load() > 64<<20 {
			t.Errorf("the server wrote %d bytes before evalctl hung up: it read far past the limit", sent.Load())
		}
	}
	// Within the limit, the same kind of answer is read.
	srv := httptest.NewServer(newFakeJaeger(5, time.Now()))
	defer srv.Close()
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", "--config", jaegerConfig(t), "--jaeger", srv.URL,
		"--max-answer-bytes", "100000", "--allow-unscored"}, nil, &bytes.Buffer{}, &stderr); code != exitOK {
		t.Fatalf("within the limit: exit %d, %s", code, stderr.String())
	}
	if code := run(context.Background(), []string{"run", "--config", jaegerConfig(t), "--jaeger", srv.URL,
		"--max-answer-bytes", "0"}, nil, &bytes.Buffer{}, &stderr); code != exitUsage {
		t.Fatalf("--max-answer-bytes 0: exit %d, want 2", code)
	}
}
