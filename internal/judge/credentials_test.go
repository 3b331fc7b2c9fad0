package judge_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/internal/httpclient/httpclienttest"
)

// A judge endpoint that answers with a cross-host 307 does not get the
// request re-sent there: the other host receives nothing (no Authorization,
// no api-key header, no prompt), the error names the target host, and it is
// not retried.
func TestJudgeCrossHostRedirectNotFollowed(t *testing.T) {
	rd := httpclienttest.NewRedirect(t)
	cfg := testConfig(rd.Origin.URL + "/v1")
	cfg.Headers = configopaque.MapList{{Name: "api-key", Value: "azure-key-value-1"}}
	c := start(t, cfg)
	_, err := c.Complete(context.Background(), msgs)
	if err == nil {
		t.Fatal("want an error")
	}
	rd.Refused(t, err.Error())
}

// The endpoint's userinfo and query (a proxy's ?code=…) never appear in the
// error (the evaluation's reason) nor in the log.
func TestJudgeEndpointQueryAndUserinfoNeverQuoted(t *testing.T) {
	addr := httpclienttest.ClosedAddr(t)
	const code, user, password = "gw-code-51d9e0a7", "judge-u7x9q2", "pw-3c8b1f66"
	set, logs := observed(zapcore.DebugLevel)
	cfg := testConfig("http://" + user + ":" + password + "@" + addr + "/v1?code=" + code)
	cfg.Retry.MaxAttempts = 1
	c := startWith(t, cfg, set)
	_, err := c.Complete(context.Background(), msgs)
	if err == nil || !strings.Contains(err.Error(), addr+"/v1/chat/completions") {
		t.Fatalf("want an error naming the endpoint's host and path, got %v", err)
	}
	httpclienttest.NoLeak(t, "error", err.Error(), code, user, password)
	if logs.Len() == 0 {
		t.Fatal("nothing logged")
	}
	for _, line := range logLines(logs) {
		httpclienttest.NoLeak(t, "log", line, code, user, password)
	}
	// A config error names the endpoint without them too.
	bad := testConfig("ftp://" + user + ":" + password + "@host/v1?code=" + code)
	verr := bad.Validate()
	if verr == nil || !strings.Contains(verr.Error(), "ftp://host/v1") {
		t.Fatalf("validate: %v", verr)
	}
	httpclienttest.NoLeak(t, "config error", verr.Error(), code, user, password)
}
