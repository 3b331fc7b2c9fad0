package evaluators

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/internal/httpclient/httpclienttest"
)

// startRemoteLogged is startRemote with an observed logger.
func startRemoteLogged(t *testing.T, opts map[string]any) (*Instance, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	set := componenttest.NewNopTelemetrySettings()
	set.Logger = zap.New(core)
	cfg := Config{Type: "remote", Name: "my_remote", Options: opts}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	insts, err := Build([]Config{cfg}, Deps{Telemetry: set})
	if err != nil {
		t.Fatal(err)
	}
	lc := insts[0].Evaluator.(Lifecycle)
	if err := lc.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Shutdown(context.Background()) })
	return insts[0], logs
}

func logText(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		out = append(out, line)
	}
	return out
}

// A 401 echoing the request's key, wherever the echo falls around the
// 300-byte clip of the reason: no piece of the key nor of a header value
// gets into the reason or the log (issue 19 finding 5: 30 of 50 key
// bytes leaked when the body was clipped before it was redacted).
func TestRemote401EchoRedactedBeforeClipping(t *testing.T) {
	const key = "sk-remote-Zq8vN3xR7tL2mK9pW4cB6yH1dF5gJ0aE-0123456" // 50 bytes
	const headerValue = "hv-9f8e7d6c5b4a39281706"
	srv := httpclienttest.NewEcho(t, http.StatusUnauthorized, func(r *http.Request) string {
		return "bad key " + r.Header.Get("Authorization") + " with " + r.Header.Get("X-Api-Key")
	})
	in, logs := startRemoteLogged(t, obj("endpoint", srv.URL, "api_key", key, "headers", obj("X-Api-Key", headerValue),
		"retry", obj("max_attempts", 1)))
	for o := 0; o <= 320; o++ {
		srv.SetPad(o)
		r := in.Evaluate(context.Background(), testCELCase())
		if r.Status != StatusError || !strings.Contains(r.Reason, "HTTP 401") {
			t.Fatalf("offset %d: %v %q", o, r.Status, r.Reason)
		}
		httpclienttest.NoLeak(t, fmt.Sprintf("reason at offset %d", o), r.Reason, key, headerValue)
	}
	for _, l := range logText(logs) {
		httpclienttest.NoLeak(t, "log", l, key, headerValue)
	}
}

// The endpoint's query (Azure Functions' ?code=…) and userinfo are
// credentials: a failure names the endpoint without them, in the reason
// and in the log.
func TestRemoteEndpointQueryAndUserinfoNeverQuoted(t *testing.T) {
	addr := httpclienttest.ClosedAddr(t)
	const code = "AzFuncCode-7f3e9a1b2c4d"
	const user, password = "svc-u7x9q2kk", "pa55-w0rd-xyz"
	in, logs := startRemoteLogged(t, obj("endpoint", "http://"+user+":"+password+"@"+addr+"/api/score?code="+code,
		"retry", obj("max_attempts", 1)))
	r := in.Evaluate(context.Background(), testCELCase())
	if r.Status != StatusError || !strings.Contains(r.Reason, addr+"/api/score") {
		t.Fatalf("want an error naming the endpoint's host and path: %v %q", r.Status, r.Reason)
	}
	httpclienttest.NoLeak(t, "reason", r.Reason, code, user, password)
	lines := logText(logs)
	if len(lines) == 0 {
		t.Fatal("nothing logged")
	}
	for _, l := range lines {
		httpclienttest.NoLeak(t, "log", l, code, user, password)
	}
}

// A cross-host 307 is not followed: the other host receives neither the
// configured headers nor the Authorization nor the case; the reason names
// the target host.
func TestRemoteCrossHostRedirectNotFollowed(t *testing.T) {
	rd := httpclienttest.NewRedirect(t)
	in, _ := startRemoteLogged(t, obj("endpoint", rd.Origin.URL, "api_key", "sk-redirect-key-1",
		"headers", obj("X-Api-Key", "xk-redirect-value"), "retry", obj("max_attempts", 3, "initial_backoff", "1ms", "max_backoff", "1ms")))
	r := in.Evaluate(context.Background(), testCELCase())
	rd.Refused(t, r.Reason)
	if r.Status != StatusError || !strings.Contains(r.Reason, "attempt 1 of 3") {
		t.Fatalf("want an error, not retried: %v %q", r.Status, r.Reason)
	}
}
