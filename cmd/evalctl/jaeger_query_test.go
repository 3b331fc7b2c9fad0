package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// fakeJaeger serves /api/services and /api/traces from a fixed set of
// traces (one span each, at the given µs start times), answering at most
// `limit` matches per request in its own order (newest stored first), as
// Jaeger's memory store does.
type fakeJaeger struct {
	mu       sync.Mutex
	starts   map[string]int64 // trace id -> span start, µs
	order    []string         // storage order
	requests []string         // query strings asked
}

func (f *fakeJaeger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.RawQuery)
	switch r.URL.Path {
	case "/api/services":
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []string{"svc"}})
	case "/api/traces":
		q := r.URL.Query()
		if q.Get("service") != "svc" {
			_ = json.NewEncoder(w).Encode(map[string]any{"data": []any{}})
			return
		}
		start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
		end, _ := strconv.ParseInt(q.Get("end"), 10, 64)
		limit, _ := strconv.Atoi(q.Get("limit"))
		var data []map[string]any
		for i := len(f.order) - 1; i >= 0 && len(data) < limit; i-- {
			id := f.order[i]
			if s := f.starts[id]; s >= start && s <= end {
				data = append(data, map[string]any{
					"traceID": id,
					"spans": []any{map[string]any{"traceID": id, "spanID": "00000000000000a1", "operationName": "invoke_agent",
						"startTime": s, "duration": 1000, "processID": "p1",
						"tags": []any{map[string]any{"key": "gen_ai.operation.name", "type": "string", "value": "invoke_agent"}}}},
					"processes": map[string]any{"p1": map[string]any{"serviceName": "svc"}},
				})
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	default:
		http.NotFound(w, r)
	}
}

func newFakeJaeger(n int, now time.Time) *fakeJaeger {
	f := &fakeJaeger{starts: map[string]int64{}}
	for i := 0; i < n; i++ {
		id := strings.Repeat("0", 28) + strconv.FormatInt(int64(0x1000+i), 16)
		// Stored in an order unrelated to time: every third one is older.
		f.starts[id] = now.Add(-time.Duration((i*7919)%n) * time.Minute).UnixMicro()
		f.order = append(f.order, id)
	}
	return f
}

func TestJaegerSourcePagesEveryTraceOnce(t *testing.T) {
	now := time.Now()
	fj := newFakeJaeger(97, now)
	srv := httptest.NewServer(fj)
	defer srv.Close()
	src := &jaegerSource{url: srv.URL, lookback: 3 * time.Hour, limit: 1000, pageSize: 10, progressEvery: 50,
		now: func() time.Time { return now }}
	var stderr bytes.Buffer
	docs, err := src.pull(context.Background(), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, d := range docs {
		ids[d.traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()] = true
	}
	if len(docs) != 97 || len(ids) != 97 {
		t.Fatalf("pulled %d documents, %d distinct; want 97 (pages of 10 over 97 traces)", len(docs), len(ids))
	}
	if !strings.Contains(stderr.String(), "traces read (") || !strings.Contains(stderr.String(), "read 97 traces") {
		t.Errorf("progress lines: %q", stderr.String())
	}
	// The whole list fits in a page: one request per service plus the
	// service list.
	fj.requests = nil
	src.pageSize = 200
	if docs, err = src.pull(context.Background(), &bytes.Buffer{}); err != nil || len(docs) != 97 {
		t.Fatalf("one page: %d, %v", len(docs), err)
	}
	if len(fj.requests) != 2 {
		t.Errorf("%d requests for a pull that fits in one page, want 2 (services, traces)", len(fj.requests))
	}
	// --limit keeps the most recent.
	src.pageSize, src.limit = 10, 5
	if docs, err = src.pull(context.Background(), &bytes.Buffer{}); err != nil || len(docs) != 5 {
		t.Fatalf("--limit 5: %d, %v", len(docs), err)
	}
}

func TestJaegerSourceSendsTheQuery(t *testing.T) {
	fj := newFakeJaeger(3, time.Now())
	srv := httptest.NewServer(fj)
	defer srv.Close()
	src := &jaegerSource{url: srv.URL + "/api/traces", service: "svc", operation: "invoke_agent",
		tags: tagFlags{"eval.x.passed=false", "service.version=1.2"}, lookback: time.Hour, limit: 10, pageSize: 200, now: time.Now}
	if _, err := src.pull(context.Background(), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	q := fj.requests[0]
	for _, want := range []string{"service=svc", "operation=invoke_agent", "limit=200",
		"tags=%7B%22eval.x.passed%22%3A%22false%22%2C%22service.version%22%3A%221.2%22%7D"} {
		if !strings.Contains(q, want) {
			t.Errorf("query %q lacks %q", q, want)
		}
	}
}

func TestJaegerRunErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("evaluators:\n  - type: tool_error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	downURL := testkit.DownURL(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>not jaeger</html>"))
	}))
	defer html.Close()
	empty := httptest.NewServer(newFakeJaeger(0, time.Now()))
	defer empty.Close()
	withSecrets := func(u string) string {
		return strings.Replace(u, "http://", "http://admin:pa55word@", 1) + "/?api_key=s3cret"
	}

	for _, tc := range []struct {
		name, url string
		extra     []string
		want      string
	}{
		{"backend down", withSecrets(downURL), nil, "not reachable"},
		{"bad URL", "localhost:16686", nil, "want an http:// or https:// URL"},
		{"not Jaeger", withSecrets(html.URL), nil, "not Jaeger's JSON"},
		{"no traces", withSecrets(empty.URL), []string{"--service", "svc"}, "no traces found (service svc"},
		{"bad limit", empty.URL, []string{"--limit", "0"}, "--limit 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"run", "--config", cfg, "--jaeger", tc.url}, tc.extra...)
			code := run(context.Background(), args, nil, &bytes.Buffer{}, &stderr)
			msg := stderr.String()
			if code != exitUsage || !strings.Contains(msg, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, msg, tc.want)
			}
			if strings.Contains(msg, "pa55word") || strings.Contains(msg, "s3cret") {
				t.Fatalf("the message quotes a credential of the URL: %q", msg)
			}
		})
	}
	// Files and --jaeger together are a usage error.
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", "--config", cfg, "--jaeger", empty.URL, "x.json"}, nil, &bytes.Buffer{}, &stderr); code != exitUsage {
		t.Fatalf("INPUT and --jaeger: exit %d, want 2", code)
	}
}
