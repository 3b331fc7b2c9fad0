package httpclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.uber.org/goleak"

	"github.com/evalbridge/evalbridge/internal/httpclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRedact(t *testing.T) {
	s := httpclient.NewSecrets("https://bob:pa55-w0rd@fn.example.net/api/score?code=az-func-key%2F42&x=1",
		configopaque.MapList{{Name: "X-Api-Key", Value: "xk-header-value"}, {Name: "X-Short", Value: "on"}},
		"sk-api-key-123456", "whsec_signing")
	for in, want := range map[string]string{
		`Post "https://bob:***@fn.example.net/api/score?code=az-func-key%2F42&x=1": dial tcp: refused`: `Post "https://fn.example.net/api/score": dial tcp: refused`,
		`{"echo":"Bearer sk-api-key-123456, xk-header-value"}`:                                         `{"echo":"Bearer [REDACTED], [REDACTED]"}`,
		`the code was az-func-key/42 and whsec_signing`:                                                `the code was [REDACTED] and [REDACTED]`,
		`escaped: az-func-key\/42`:                                                                     `escaped: [REDACTED]`,
		`user bob:pa55-w0rd`:                                                                           `user [REDACTED]`,
		`see http://other.example/p?token=abc#frag and ftp://u:p@h/x`:                                  `see http://other.example/p and ftp://h/x`,
		`turned on, not a secret`:                                                                      `turned on, not a secret`,
	} {
		if got := s.Redact(in); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	if got := httpclient.StripURL("user:pw@host.example:8080/p?q=1"); got != "host.example:8080/p" {
		t.Errorf("StripURL without a scheme: %q", got)
	}
	var none *httpclient.Secrets
	if got := none.Redact("http://u:p@h/x?y=1"); got != "http://h/x" {
		t.Errorf("nil Secrets: %q", got)
	}
}

// A redirect to another port (another host for the credentials' purpose)
// is not followed: the other server receives nothing, neither the
// configured headers nor Authorization nor the body; the error names the
// target. A redirect on the same host is followed, with the headers.
func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	var otherGot atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		otherGot.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	var newGot atomic.Value
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cross":
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		case "/same":
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
		case "/chain":
			http.Redirect(w, r, "/cross", http.StatusTemporaryRedirect)
		default:
			body, _ := io.ReadAll(r.Body)
			newGot.Store(r.Header.Get("X-Api-Key") + " " + string(body))
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer origin.Close()

	cc := confighttp.NewDefaultClientConfig()
	cc.Headers = configopaque.MapList{{Name: "X-Api-Key", Value: "xk-secret-value"}}
	var c httpclient.Client
	if err := c.Start(context.Background(), &cc, nil, componenttest.NewNopTelemetrySettings(), nil); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	post := func(path string) error {
		req, _ := http.NewRequest(http.MethodPost, origin.URL+path, strings.NewReader("the case"))
		req.Header.Set("Authorization", "Bearer sk-secret")
		resp, err := c.Get().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, path := range []string{"/cross", "/chain"} {
		err := post(path)
		var re *httpclient.RedirectError
		if !errors.As(err, &re) || !httpclient.IsRedirect(err) {
			t.Fatalf("%s: want a RedirectError, got %v", path, err)
		}
		if host := strings.TrimPrefix(other.URL, "http://"); !strings.Contains(err.Error(), host) {
			t.Fatalf("%s: the error does not name the target %s: %v", path, host, err)
		}
	}
	if n := otherGot.Load(); n != 0 {
		t.Fatalf("the other host received %d requests", n)
	}
	if err := post("/same"); err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	if got, _ := newGot.Load().(string); got != "xk-secret-value the case" {
		t.Fatalf("same-host redirect delivered %q", got)
	}
}
