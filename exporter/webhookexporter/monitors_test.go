package webhookexporter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// monitorPayload is the body of a notifications-only request.
type monitorPayload struct {
	Monitors []MonitorNotification `json:"monitors"`
}

func (r *recorder) monitors(t *testing.T) []MonitorNotification {
	t.Helper()
	var out []MonitorNotification
	for _, req := range r.requests() {
		var p monitorPayload
		require.NoError(t, json.Unmarshal(req.body, &p), string(req.body))
		out = append(out, p.Monitors...)
	}
	return out
}

// A burst of failures for one agent: one signed notification whose body is
// exactly docs/contract.md §13's; per_trace_alerts: false sends no alert.
func TestMonitorNotificationPayload(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Secret = "monitor-secret"
	cfg.TraceURL = "https://ui.example/t/{trace_id}"
	cfg.PerTraceAlerts = false
	cfg.Monitors = []MonitorConfig{passRateMonitor()}
	clock := newFakeClock()
	tick := make(chan time.Time)
	h := startTicking(t, cfg, clock.Now, tick)
	ctx := context.Background()

	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("travel_agent", repeat(3, fail)...)))
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("other_agent", repeat(3, fail)...)))
	assert.Empty(t, rec.requests(), "below min_cases; no per-trace alerts")
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("travel_agent", pass)))

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	ts := reqs[0].header.Get(HeaderTimestamp)
	assert.Equal(t, strconv.FormatInt(clock.Now().Unix(), 10), ts)
	assert.Equal(t, Sign([]byte("monitor-secret"), ts, reqs[0].body), reqs[0].header.Get(HeaderSignature))

	var raw map[string][]map[string]any
	require.NoError(t, json.Unmarshal(reqs[0].body, &raw), string(reqs[0].body))
	assert.Equal(t, []string{"monitors"}, keys(map[string]any{"monitors": raw["monitors"]}))
	assert.Len(t, raw, 1, "only `monitors`")
	require.Len(t, raw["monitors"], 1)
	n := raw["monitors"][0]
	assert.ElementsMatch(t, []string{"monitor", "state", "evaluator", "evaluator_version", "group", "window", "cases", "failed", "pass_rate",
		"mean_score", "threshold", "since", "time", "sample_trace_ids", "sample_trace_urls"}, keys(n))
	assert.Equal(t, "flow_rate", n["monitor"])
	assert.Equal(t, "firing", n["state"])
	assert.Equal(t, map[string]any{"gen_ai.agent.name": "travel_agent"}, n["group"])
	assert.Equal(t, "10m", n["window"])
	assert.EqualValues(t, 4, n["cases"])
	assert.EqualValues(t, 3, n["failed"])
	assert.InDelta(t, 0.25, n["pass_rate"], 1e-9)
	assert.InDelta(t, 0.4, n["mean_score"], 1e-9)
	assert.InDelta(t, 0.5, n["threshold"], 1e-9)
	_, err := time.Parse(time.RFC3339, n["since"].(string))
	require.NoError(t, err)
	assert.Len(t, n["sample_trace_ids"], 3)
	assert.Len(t, n["sample_trace_urls"], 3)
	assert.EqualValues(t, 1, testkit.IntSumOrZero(t, h.tel, "otelcol_exporter_webhook_monitor_notifications_sent", "monitor", "flow_rate"))

	// Time passes without traffic: the window empties, the state is kept,
	// nothing is sent; passing traffic then resolves.
	clock.Advance(11 * time.Minute)
	tick <- clock.Now()
	tick <- clock.Now() // the first tick has been handled once the second is taken
	assert.Len(t, rec.requests(), 1)
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("travel_agent", repeat(4, pass)...)))
	notes := rec.monitors(t)
	require.Len(t, notes, 2)
	assert.Equal(t, StateResolved, notes[1].State)
	assert.Equal(t, map[string]string{"gen_ai.agent.name": "travel_agent"}, notes[1].Group)
}

// The tick evaluates without traffic: failures left alone in the window
// fire once the passes have slid out, and firing renotifies.
func TestMonitorTickFiresAndRenotifies(t *testing.T) {
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	mc := passRateMonitor()
	mc.Renotify = 2 * time.Minute
	cfg.Monitors = []MonitorConfig{mc}
	clock := newFakeClock()
	tick := make(chan time.Time)
	h := startTicking(t, cfg, clock.Now, tick)
	ctx := context.Background()

	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("a", repeat(10, pass)...)))
	clock.Advance(5 * time.Minute)
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("a", repeat(5, fail)...)))
	alerts := len(rec.requests()) // per_trace_alerts: one request of 5 alerts
	assert.Equal(t, 1, alerts)
	clock.Advance(5 * time.Minute)
	tick <- clock.Now()
	require.Eventually(t, func() bool { return len(rec.requests()) == alerts+1 }, 10*time.Second, 5*time.Millisecond)
	notes := rec.monitors(t)
	require.Len(t, notes, 1)
	assert.Equal(t, StateFiring, notes[0].State)
	clock.Advance(time.Minute)
	tick <- clock.Now()
	clock.Advance(time.Minute) // renotify: 2m after firing, failures still in the window
	tick <- clock.Now()
	require.Eventually(t, func() bool { return len(rec.requests()) == alerts+2 }, 10*time.Second, 5*time.Millisecond)
	notes = rec.monitors(t)
	require.Len(t, notes, 2)
	assert.Equal(t, StateFiring, notes[1].State)
	assert.Equal(t, notes[0].Since, notes[1].Since)
	assert.EqualValues(t, 1, testkit.IntSumOrZero(t, h.tel, "otelcol_exporter_webhook_monitor_renotifications", "monitor", "flow_rate"))
}

func TestMonitorSlackAndTemplate(t *testing.T) {
	note := MonitorNotification{Monitor: "booking_pass_rate", State: StateFiring, Evaluator: "booking_flow",
		Group: map[string]string{"service.name": "travel-agent", "gen_ai.agent.name": "travel_agent"}, Window: "15m",
		Cases: 143, Failed: 40, PassRate: 0.72, MeanScore: ptr(0.81), Threshold: 0.8, Figure: "pass_rate",
		Since: "2026-03-14T16:00:00Z", Time: "2026-03-14T16:05:00Z",
		SampleTraceIDs: []string{"abc", "def"}, SampleTraceURLs: []string{"https://ui.example/t/abc", "https://ui.example/t/def"}}

	body, err := slackEncoder{}.encode(Payload{Monitors: []MonitorNotification{note}})
	require.NoError(t, err)
	var msg struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(body, &msg))
	assert.Equal(t, "booking_pass_rate firing: pass rate 0.72 < 0.8 over 15m for gen_ai.agent.name=travel_agent, service.name=travel-agent (143 cases, 40 failed)", msg.Text)
	assert.Contains(t, string(body), "<https://ui.example/t/abc|abc>, <https://ui.example/t/def|def>")

	resolved := note
	resolved.State, resolved.Figure, resolved.MeanScore = StateResolved, "mean_score", ptr(0.9)
	body, err = slackEncoder{}.encode(Payload{Alerts: []Alert{{Evaluator: "x", TraceID: "t1"}}, Monitors: []MonitorNotification{resolved}})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, &msg))
	assert.Contains(t, msg.Text, "Evaluation x failed")
	assert.Contains(t, msg.Text, "booking_pass_rate resolved: mean score 0.9 >= 0.8 over 15m")
	assert.Contains(t, string(body), ":white_check_mark: Monitor booking_pass_rate resolved")

	tpl, err := parseTemplate(`{{range .Monitors}}{{.Monitor}} {{.State}} {{.Figure}} {{.PassRate}} < {{.Threshold}} {{index .Group "gen_ai.agent.name"}} {{join .SampleTraceIDs ","}}{{end}}`)
	require.NoError(t, err)
	body, err = templateEncoder{t: tpl}.encode(Payload{Monitors: []MonitorNotification{note}})
	require.NoError(t, err)
	assert.Equal(t, "booking_pass_rate firing pass_rate 0.72 < 0.8 travel_agent abc,def", string(body))

	// Through the exporter, the carried Figure survives the queue.
	rec := newRecorder(t)
	cfg := syncConfig(rec.srv.URL)
	cfg.Format = FormatSlack
	cfg.PerTraceAlerts = false
	mc := passRateMonitor()
	mc.PassRateBelow, mc.MeanScoreBelow = nil, ptr(0.5)
	cfg.Monitors = []MonitorConfig{mc}
	h := start(t, cfg, newFakeClock().Now)
	require.NoError(t, h.exp.ConsumeTraces(context.Background(), caseTraces("a", repeat(4, fail)...)))
	require.Len(t, rec.requests(), 1)
	require.NoError(t, json.Unmarshal(rec.requests()[0].body, &msg))
	assert.Equal(t, "flow_rate firing: mean score 0.2 < 0.5 over 10m for gen_ai.agent.name=a (4 cases, 4 failed)", msg.Text)
}

// A notification the endpoint cannot take yet waits in the queue: a firing
// notification queued on file_storage survives a restart like an alert.
func TestMonitorNotificationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rec, recv := newRecorder(t), &downReceiver{}
	srv := recv.start(t, rec)

	exp1, stop1 := monitorOnStorage(t, dir, srv.URL)
	require.NoError(t, exp1.exp.ConsumeTraces(ctx, caseTraces("travel_agent", repeat(4, fail)...)))
	stop1()
	assert.Empty(t, rec.requests())

	recv.setUp()
	_, stop2 := monitorOnStorage(t, dir, srv.URL)
	require.Eventually(t, func() bool { return len(rec.requests()) >= 1 }, 10*time.Second, 10*time.Millisecond)
	stop2()
	notes := rec.monitors(t)
	require.Len(t, notes, 1, "delivered once")
	assert.Equal(t, StateFiring, notes[0].State)
	assert.Equal(t, map[string]string{"gen_ai.agent.name": "travel_agent"}, notes[0].Group)
}

// When the queue refuses a notification (full), the group's state is put
// back and the next evaluation produces it again.
func TestMonitorQueueFullRetriesNextEvaluation(t *testing.T) {
	block := make(chan struct{})
	var once sync.Once
	rec := newRecorder(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
		rec.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { once.Do(func() { close(block) }) })
	cfg := syncConfig(srv.URL)
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers, q.QueueSize = 1, 1
	q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	cfg.QueueConfig = configoptional.Some(q)
	cfg.Monitors = []MonitorConfig{passRateMonitor()}
	clock := newFakeClock()
	tick := make(chan time.Time)
	h := startTicking(t, cfg, clock.Now, tick)
	ctx := context.Background()
	// Fill the consumer and the queue with alerts.
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("x", fail)))
	require.Eventually(t, func() bool {
		// Never refused: the alert the full queue cannot take is dropped
		// and counted instead (docs/contract.md §17).
		require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("y", fail)))
		return testkit.IntSumOrZero(t, h.tel, "otelcol_exporter_webhook_alerts_dropped", "reason", dropQueueFull) > 0
	}, 10*time.Second, 5*time.Millisecond, "the queue fills up")
	// The burst fires; its notification is refused with the data.
	require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("a", repeat(4, fail)...)))
	assert.Positive(t, testkit.IntSumOrZero(t, h.tel, "otelcol_exporter_webhook_monitor_enqueue_failures", "monitor", "flow_rate"))
	once.Do(func() { close(block) })
	require.Eventually(t, func() bool {
		select {
		case tick <- clock.Now():
		default:
		}
		for _, n := range rec.monitors(t) {
			if n.Group["gen_ai.agent.name"] == "a" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the next evaluation sends it")
}
