package judge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const secret = "sk-test-SECRET-0123456789"

func testConfig(endpoint string) judge.Config {
	cfg := judge.NewDefaultConfig()
	cfg.Endpoint = endpoint
	cfg.Model = "judge-model"
	cfg.APIKey = configopaque.String(secret)
	cfg.Timeout = 2 * time.Second
	cfg.Retry = judge.RetryConfig{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	return cfg
}

func start(t *testing.T, cfg judge.Config) *judge.Client {
	t.Helper()
	return startWith(t, cfg, componenttest.NewNopTelemetrySettings())
}

func startWith(t *testing.T, cfg judge.Config, set component.TelemetrySettings) *judge.Client {
	t.Helper()
	return judgetest.StartClient(t, cfg, set)
}

var msgs = []judge.Message{{Role: "system", Content: "rules"}, {Role: "user", Content: "data"}}

func TestJudgeRequestShape(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{"score": 1}`))
	cfg := testConfig(srv.Endpoint())
	cfg.JSONResponse = true
	cfg.MaxTokens = 300
	c := start(t, cfg)
	got, err := c.Complete(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"score": 1}` {
		t.Fatalf("content %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path %q", r.Path)
	}
	if r.Header.Get("Authorization") != "Bearer "+secret {
		t.Errorf("authorization %q", r.Header.Get("Authorization"))
	}
	if r.Model != "judge-model" || r.Temperature == nil || *r.Temperature != 0 || r.MaxTokens != 300 {
		t.Errorf("model %q temperature %v max_tokens %d", r.Model, r.Temperature, r.MaxTokens)
	}
	if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_object" {
		t.Errorf("response_format %+v", r.ResponseFormat)
	}
	if len(r.Messages) != 2 || r.Messages[1].Content != "data" {
		t.Errorf("messages %+v", r.Messages)
	}
}

func TestJudgeNoAPIKeyNoHeaderAndAzureHeaders(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{}`))
	cfg := testConfig(srv.Endpoint() + "/")
	cfg.APIKey = ""
	cfg.Headers = configopaque.MapList{{Name: "api-key", Value: "azure-key-123"}}
	c := start(t, cfg)
	if _, err := c.Complete(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("Authorization") != "" {
		t.Errorf("authorization sent without api_key: %q", r.Header.Get("Authorization"))
	}
	if r.Header.Get("api-key") != "azure-key-123" {
		t.Errorf("api-key header %q", r.Header.Get("api-key"))
	}
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path %q", r.Path)
	}
}

func TestJudgeExtractJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"score": 0.5}`, `{"score": 0.5}`},
		{"Sure! Here is my verdict:\n```json\n{\"score\": 0.5, \"reason\": \"ok\"}\n```\nHope this helps.", `{"score": 0.5, "reason": "ok"}`},
		{"I think {score} is... anyway {\"score\": 2}", `{"score": 2}`},
		{"<think>maybe {\"score\": 0}</think>{\"score\": 1}", `{"score": 1}`},
		{`{"score": 0.1} and later {"score": 1}`, `{"score": 1}`},
		{`{"outer": {"score": 0.1}} then`, `{"outer": {"score": 0.1}}`},
	} {
		got, err := judge.ExtractJSON(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("ExtractJSON(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "   ", "no json here", "{not json", "[1,2,3]"} {
		if _, err := judge.ExtractJSON(bad); err == nil {
			t.Errorf("ExtractJSON(%q): want error", bad)
		}
	}
}

func TestJudgeRetriesHonourRetryAfter(t *testing.T) {
	srv := judgetest.New(t, func(n int, _ judgetest.Request) judgetest.Reply {
		if n == 1 {
			return judgetest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}}
		}
		return judgetest.Reply{Content: `{"ok": true}`}
	})
	cfg := testConfig(srv.Endpoint())
	c := start(t, cfg)
	t0 := time.Now()
	if _, err := c.Complete(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond {
		t.Errorf("retried after %v; Retry-After said 1s", d)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestJudgeRetryAfterPastDeadlineFailsFast(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Status: 503, Header: map[string]string{"Retry-After": "120"}}
	})
	c := start(t, testConfig(srv.Endpoint()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err := c.Complete(ctx, msgs)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(t0) > time.Second {
		t.Errorf("waited %v for a retry it could not make", time.Since(t0))
	}
}

func TestJudge500RetriedThenFails(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 500} })
	c := start(t, testConfig(srv.Endpoint()))
	_, err := c.Complete(context.Background(), msgs)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "attempt 3 of 3") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestJudge400NotRetried(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 400} })
	c := start(t, testConfig(srv.Endpoint()))
	if _, err := c.Complete(context.Background(), msgs); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestJudgeGarbageBody(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Body: "<html>oops</html>"} })
	c := start(t, testConfig(srv.Endpoint()))
	if _, err := c.Complete(context.Background(), msgs); err == nil || !strings.Contains(err.Error(), "not a chat completion") {
		t.Fatalf("err = %v", err)
	}
}

func TestJudgeAttemptTimeout(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 5 * time.Second, Content: `{}`}
	})
	cfg := testConfig(srv.Endpoint())
	cfg.Timeout = 100 * time.Millisecond
	cfg.Retry.MaxAttempts = 2
	c := start(t, cfg)
	t0 := time.Now()
	_, err := c.Complete(context.Background(), msgs)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestJudgeCallerDeadline(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 5 * time.Second, Content: `{}`}
	})
	c := start(t, testConfig(srv.Endpoint()))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, msgs)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

func TestJudgeCacheHits(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always("verdict: {\"score\": 0.7}"))
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	c := startWith(t, testConfig(srv.Endpoint()), tel.NewTelemetrySettings())
	for range 3 {
		if _, err := c.Complete(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (two cache hits)", n)
	}
	if v := testkit.IntSum(t, tel, "otelcol_processor_eval_judge_cache_hits"); v != 2 {
		t.Errorf("cache hits metric %v, want 2", v)
	}
	if v := testkit.IntSum(t, tel, "otelcol_processor_eval_judge_requests"); v != 1 {
		t.Errorf("requests metric %v, want 1", v)
	}
	if v := testkit.IntSum(t, tel, "otelcol_processor_eval_judge_tokens"); v != 15 {
		t.Errorf("tokens metric %v, want 15", v)
	}
}

func TestJudgeUnparseableRepliesAreNotCached(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always("I cannot judge this."))
	c := start(t, testConfig(srv.Endpoint()))
	for range 2 {
		if _, err := c.Complete(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestJudgeConcurrencyBound(t *testing.T) {
	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 30 * time.Millisecond, Content: `{"score": 1}`}
	})
	cfg := testConfig(srv.Endpoint())
	cfg.MaxConcurrency = 3
	cfg.CacheSize = 0
	c := start(t, cfg)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: strings.Repeat("x", i)}})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := srv.MaxInFlight(); m > 3 || m < 2 {
		t.Errorf("max in flight %d, want <= 3 (and parallel)", m)
	}
}

func TestJudgeRequestsPerMinute(t *testing.T) {
	srv := judgetest.New(t, judgetest.Always(`{}`))
	cfg := testConfig(srv.Endpoint())
	cfg.RequestsPerMinute = 600 // 10/s, burst 10
	cfg.CacheSize = 0
	c := start(t, cfg)
	t0 := time.Now()
	for i := range 13 {
		if _, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: strings.Repeat("y", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Errorf("13 requests at 10/s (burst 10) took %v", d)
	}
}

func TestJudgeAPIKeyNeverLoggedOrInErrors(t *testing.T) {
	// The server echoes the Authorization header in its error body.
	srv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Status: 401, Body: `{"error":"bad key ` + r.Header.Get("Authorization") + `"}`}
	})
	set, logs := observed(zapcore.DebugLevel)
	cfg := testConfig(srv.Endpoint())
	set.Logger.Info("judge config", zap.Any("config", cfg))
	c := startWith(t, cfg, set)
	_, err := c.Complete(context.Background(), msgs)
	if err == nil {
		t.Fatal("want error")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error contains the API key: %v", err)
	}
	if !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v", err)
	}
	for _, line := range logLines(logs) {
		if strings.Contains(line, secret) {
			t.Errorf("log contains the API key: %s", line)
		}
	}
}

func TestJudgeNotStarted(t *testing.T) {
	c, err := judge.New("x", testConfig("http://127.0.0.1:1"), componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), msgs); !errors.Is(err, judge.ErrNotStarted) {
		t.Fatalf("err = %v", err)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestJudgeConfigValidate(t *testing.T) {
	cfg := judge.NewDefaultConfig()
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "endpoint") || !strings.Contains(err.Error(), "model") {
		t.Fatalf("err = %v", err)
	}
	cfg = testConfig("ftp://x")
	cfg.MaxConcurrency = -1
	cfg.Budget.TokensPerDay = -5
	err = cfg.Validate()
	for _, want := range []string{"endpoint", "max_concurrency", "budget.tokens_per_day"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to name %s", err, want)
		}
	}
}

func TestJudgeConfigUnmarshalAppliesDefaults(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{
		"judges": map[string]any{
			"default": map[string]any{"endpoint": "http://localhost:11434/v1", "model": "llama3.1", "max_concurrency": 2,
				"budget": map[string]any{"tokens_per_hour": 5000}},
		},
	})
	var out struct {
		Judges map[string]judge.Config `mapstructure:"judges"`
	}
	if err := conf.Unmarshal(&out); err != nil {
		t.Fatal(err)
	}
	j := out.Judges["default"]
	if j.Model != "llama3.1" || j.MaxConcurrency != 2 || j.Budget.TokensPerHour != 5000 {
		t.Fatalf("decoded %+v", j)
	}
	def := judge.NewDefaultConfig()
	if j.Timeout != def.Timeout || j.Retry != def.Retry || j.CacheSize != def.CacheSize || j.MaxFieldBytes != def.MaxFieldBytes {
		t.Fatalf("defaults not applied: timeout %v retry %+v cache %d fields %d", j.Timeout, j.Retry, j.CacheSize, j.MaxFieldBytes)
	}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}

// An endpoint with a query (Azure OpenAI's api-version) passed Validate and
// then had /chat/completions appended to its query: the path must go on the
// path and the query stay a query.
func TestJudgeEndpointQueryKept(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + "?" + r.URL.RawQuery
		_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"{}"}}]}`)
	}))
	defer srv.Close()
	c := start(t, testConfig(srv.URL+"/openai/deployments/judge/?api-version=2024-10-21"))
	if _, err := c.Complete(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != "/openai/deployments/judge/chat/completions?api-version=2024-10-21" {
		t.Fatalf("requested %q", p)
	}
}

// A NaN temperature (YAML `.nan`) passed Validate, and then every request
// failed: encoding/json cannot encode NaN.
func TestJudgeConfigValidateNaNTemperature(t *testing.T) {
	cfg := testConfig("http://localhost:1/v1")
	cfg.Temperature = math.NaN()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Fatalf("err = %v", err)
	}
}

// A judge that fails or answers garbage gets a clear log line — a few a
// minute, not one per span — while the metrics count every call.
func TestJudgeFailuresAreLoggedAndSampled(t *testing.T) {
	srv := judgetest.New(t, func(_ int, r judgetest.Request) judgetest.Reply {
		if strings.Contains(r.User(), "garbage") {
			return judgetest.Reply{Content: "I would rather not say."}
		}
		return judgetest.Reply{Status: 400, Body: `{"error":"bad request"}`}
	})
	set, logs := observed(zapcore.WarnLevel)
	c := startWith(t, testConfig(srv.Endpoint()), set)
	for i := range 10 {
		if _, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: fmt.Sprintf("fail %d", i)}}); err == nil {
			t.Fatal("want an error for HTTP 400")
		}
		if _, err := c.Complete(context.Background(), []judge.Message{{Role: "user", Content: fmt.Sprintf("garbage %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	failed := logs.FilterMessageSnippet("judge request failed").All()
	garbage := logs.FilterMessageSnippet("holds no JSON object").All()
	if len(failed) != 3 || len(garbage) != 3 {
		t.Fatalf("warnings: %d failed, %d garbage; want 3 of each (sampled per minute)", len(failed), len(garbage))
	}
	if e := failed[0]; !strings.Contains(e.ContextMap()["error"].(string), "HTTP 400") || e.ContextMap()["judge"] != "default" {
		t.Errorf("failure log lacks the judge or the cause: %v", e.ContextMap())
	}
}
