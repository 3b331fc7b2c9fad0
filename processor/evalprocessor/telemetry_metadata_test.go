package evalprocessor

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/judge/judgetest"
	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

// The instruments the processor registers (its own, its judges', its
// engine's and its remote evaluators', all through builders generated from
// metadata.yaml) are declared there and record only the attributes
// declared there. The configuration turns on every optional
// part: a judge with a budget and a price, a remote evaluator, sessions,
// logs.
func TestTelemetryMatchesMetadata(t *testing.T) {
	md, err := telemetrydoc.Load("metadata.yaml")
	require.NoError(t, err)

	srv := judgetest.New(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: `{"score": 0.9, "reason": "fine"}`}
	})
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"score": 1, "passed": true}`))
	}))
	defer remote.Close()

	cfg := createDefaultConfig()
	cfg.Wait = time.Second
	cfg.Workers = 2
	cfg.Sessions.Idle = time.Minute
	jc := judge.NewDefaultConfig()
	jc.Endpoint = srv.Endpoint()
	jc.Model = "judge"
	jc.Budget.TokensPerHour = 1_000_000
	jc.Budget.TokensPerDay = 10_000_000
	jc.Budget.CostPerHour = 100
	jc.Price = judge.PriceConfig{InputPerMillionTokens: 0.15, OutputPerMillionTokens: 0.6, Currency: "USD"}
	cfg.Judges = map[string]judge.Config{"default": jc}
	cfg.Evaluators = []evaluators.Config{
		{Type: "tool_error"},
		{Type: "llm_judge", Name: "helpful", Judge: "default", Options: map[string]any{"criteria": "Is the answer helpful?"}},
		{Type: "remote", Name: "far", Options: map[string]any{"endpoint": remote.URL}},
		{Type: "tool_error", Name: "session_errors", Case: adapter.LevelSession},
	}
	rec := telemetrydoc.NewRecorder()
	b := newBatch()
	agentTrace(b, 1, true)
	agentTrace(b, 2, false)
	scoreOnce(t, cfg, rec, true, b.td)
	rec.Collect()

	// The HTTP clients' own instrumentation (http.client.*) is theirs,
	// not the component's.
	var insts []telemetrydoc.Instrument
	for _, i := range rec.Instruments() {
		if !strings.HasPrefix(i.Name, "otelcol_") {
			continue
		}
		insts = append(insts, i)
		require.True(t, strings.HasPrefix(i.Name, "otelcol_processor_eval_"), "%s is outside the processor's family", i.Name)
	}
	problems := telemetrydoc.Compare(md, insts, false)
	require.Empty(t, problems, "metadata.yaml and the registered instruments disagree:\n%s", strings.Join(problems, "\n"))
}

// documentation.md and internal/metadata/generated_telemetry.go are what
// `go generate` makes of metadata.yaml.
func TestDocumentationIsGenerated(t *testing.T) {
	require.NoError(t, telemetrydoc.CheckDocumentation("."))
}
