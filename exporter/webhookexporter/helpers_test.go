package webhookexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

var (
	testTraceID = pcommon.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	testSpanID  = pcommon.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}
	testEnd     = time.Date(2026, 3, 14, 15, 9, 26, 535000000, time.UTC)
)

// evaluatorsResult is what the engine hands the annotator.
type evaluatorsResult = evaluators.Result

// failed and passed build evaluator results as the engine does.
func failed(name string, score, threshold float64, reason string) evaluatorsResult {
	return evaluatorsResult{Name: name, Status: evaluators.StatusFailed, Score: score, Threshold: threshold, Reason: reason}
}

func passed(name string, score, threshold float64) evaluatorsResult {
	return evaluatorsResult{Name: name, Status: evaluators.StatusPassed, Score: score, Threshold: threshold}
}

// annotate writes results onto span with the real annotator, so these tests
// read exactly what the eval processor writes.
func annotate(span ptrace.Span, results []evaluatorsResult, ts pcommon.Timestamp) {
	annotator.Annotate(span, results, ts)
}

// agentTraces is one agent span annotated by the annotator with results.
func agentTraces(results ...evaluatorsResult) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "travel-svc")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetTraceID(testTraceID)
	span.SetSpanID(testSpanID)
	span.SetName("invoke_agent travel_agent")
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(testEnd.Add(-3 * time.Second)))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(testEnd))
	span.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	span.Attributes().PutStr("gen_ai.agent.name", "travel_agent")
	annotate(span, results, pcommon.NewTimestampFromTime(testEnd.Add(time.Second)))
	return td
}

// received is one request the test server saw.
type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

// recorder is an httptest server answering with the statuses in script
// (then 200), recording every request.
type recorder struct {
	srv *httptest.Server

	mu     sync.Mutex
	reqs   []received
	script []func(w http.ResponseWriter)
}

func newRecorder(t *testing.T, script ...func(w http.ResponseWriter)) *recorder {
	r := &recorder{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{at: time.Now(), header: req.Header.Clone(), body: body})
		var answer func(w http.ResponseWriter)
		if len(r.script) > 0 {
			answer, r.script = r.script[0], r.script[1:]
		}
		r.mu.Unlock()
		if answer != nil {
			answer(w)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// answer scripts the answers to the next requests.
func (r *recorder) answer(script ...func(w http.ResponseWriter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script = append(r.script, script...)
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	}
}

func statusBody(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func (r *recorder) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

func (r *recorder) payload(t *testing.T, i int) Payload {
	t.Helper()
	reqs := r.requests()
	require.Greater(t, len(reqs), i, "request %d not received", i)
	var p Payload
	require.NoError(t, json.Unmarshal(reqs[i].body, &p), string(reqs[i].body))
	return p
}

// syncConfig is a config without a queue (ConsumeTraces returns the push
// result) and with fast retries.
func syncConfig(endpoint string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = endpoint
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.inline = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 10 * time.Second
	cfg.RetryConfig.RandomizationFactor = 0
	return cfg
}

// fakeClock is an injectable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 14, 16, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	stopped bool
	exp     exporter.Traces
	inner   exporter.Traces // exporterhelper's, under the never-refusing wrapper: the push's errors
	logs    *observer.ObservedLogs
	tel     *componenttest.Telemetry
}

// start creates and starts an exporter with an observed logger and
// telemetry; now may be nil (time.Now).
func start(t *testing.T, cfg *Config, now func() time.Time) *harness {
	t.Helper()
	return startTicking(t, cfg, now, nil)
}

// startTicking is start with monitors evaluated on each send to tick (nil:
// never) instead of a real ticker.
func startTicking(t *testing.T, cfg *Config, now func() time.Time, tick chan time.Time) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	if now == nil {
		now = time.Now
	}
	core, logs := observer.New(zapcore.DebugLevel)
	tel := componenttest.NewTelemetry()
	set := exportertest.NewNopSettings(Type)
	set.Logger = zap.New(core)
	set.TelemetrySettings.MeterProvider = tel.NewTelemetrySettings().MeterProvider
	exp, err := newTracesExporterWithTicker(context.Background(), set, cfg, now,
		func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} })
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	h := &harness{exp: exp, inner: exp.(*tracesExporter).Traces, logs: logs, tel: tel}
	t.Cleanup(func() {
		if !h.stopped {
			require.NoError(t, exp.Shutdown(context.Background()))
		}
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	return h
}

// counter sums an int64 counter's data points, optionally filtered by the
// `kind` attribute.
func (h *harness) counter(t *testing.T, name, kind string) int64 {
	t.Helper()
	if kind == "" {
		return testkit.IntSumOrZero(t, h.tel, name)
	}
	return testkit.IntSumOrZero(t, h.tel, name, "kind", kind)
}

func fmtAny(v any) string { return fmt.Sprintf("%+v", v) }

func zapInt(key string, v int) zap.Field { return zap.Int(key, v) }

func (h *harness) shutdown(t *testing.T) {
	t.Helper()
	h.stopped = true
	require.NoError(t, h.exp.Shutdown(context.Background()))
}
