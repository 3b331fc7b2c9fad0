package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Scenarios of issue 19 on the shapes users build: a webhook exporter
// beside the backend with its alert endpoint down, monitor slots under a
// stream of new groups, and sessions at shutdown with a slow remote
// session evaluator. Each brings its side services (an alert endpoint, a
// remote evaluator), edits the generated config and checks its own
// promise; runSuite reports those beside the usual ones.

// topology is a scenario's additions. A nil *topology adds nothing.
type topology struct {
	// webhook adds a webhook exporter beside otlp_http; webhookDown points it
	// at a closed port (with a queue of one request), else at alerts.
	webhook, webhookDown bool
	webhookExtra         string        // more keys of the webhook exporter (monitors)
	remoteDelay          time.Duration // >0: a remote evaluator service answering after this long; {{remote}} in evals
	noDuplicates         bool          // a span arriving twice is a broken promise
	wantDropped          bool          // the webhook must have dropped (and counted) alerts
	wantEvicted          bool          // monitor slots must have turned over
	wantSessions         int           // evaluate_session spans expected (at shutdown)

	metrics    map[string]float64 // the collector's own, scraped before it stops
	closedAddr string
	alerts     *alertEndpoint
	remote     *http.Server
	remoteAddr string
}

// topologyResult is what a topology's checks found.
type topologyResult struct {
	Notes  []string
	Broken []string
}

func topologyScenarios() []scenario {
	base := loadConfig{rate: 50, duration: 3 * time.Second, plainShare: 0.2, failShare: 0.2, parts: 3,
		gap: 100 * time.Millisecond, retryFor: 60 * time.Second, conns: 4, scale: 1}
	with := func(f func(*loadConfig)) loadConfig {
		c := base
		f(&c)
		return c
	}
	const holdEval = "wait: 1s\n    timeout: 5s"
	return []scenario{
		{
			name: "alert_down_fanout", about: "eval -> [otlp_http, webhook], the alert endpoint down and the webhook's queue one request deep, 50 traces/s",
			eval: holdEval, evals: normalEvaluators, load: with(func(c *loadConfig) { c.seed = 11 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			extra: &topology{webhook: true, webhookDown: true, noDuplicates: true, wantDropped: true},
		},
		{
			name: "monitor_slots", about: "a monitor per run (group_by the prompt), max_groups 3, window 1s, half the runs failing, 50 traces/s for 5 s",
			eval: holdEval, evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.failShare = 0.5; c.duration = 5 * time.Second; c.seed = 12 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			extra: &topology{webhook: true, wantEvicted: true, webhookExtra: `
    per_trace_alerts: false
    monitors:
      - name: per_run
        evaluator: tool_trajectory
        group_by: [gen_ai.input.messages]
        window: 1s
        min_cases: 1
        pass_rate_below: 1.0
        max_groups: 3`},
		},
		{
			name: "sessions_shutdown", about: "20 conversations, a remote session evaluator taking 2 s, idle 1m, SIGTERM at t=3s: every session scored at shutdown",
			eval: "wait: 1s\n    timeout: 10s\n    sessions:\n      idle: 1m",
			evals: normalEvaluators + `
      - type: remote
        name: session_remote
        case: session
        endpoint: http://{{remote}}/score
        timeout: 10s
        max_concurrency: 10`,
			load: with(func(c *loadConfig) {
				c.conversations = 20
				c.retryFor = time.Second
				c.seed = 13
			}),
			sigterm: 3 * time.Second, drain: 30 * time.Second, scoreWait: time.Second,
			extra: &topology{remoteDelay: 2 * time.Second, wantSessions: 20},
		},
	}
}

func (t *topology) start() error {
	if t == nil {
		return nil
	}
	if t.webhookDown {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		t.closedAddr = ln.Addr().String()
		_ = ln.Close() // refused from now on
	} else if t.webhook {
		a, err := newAlertEndpoint()
		if err != nil {
			return err
		}
		t.alerts = a
	}
	if t.remoteDelay > 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		t.remoteAddr = ln.Addr().String()
		delay := t.remoteDelay
		t.remote = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-time.After(delay):
				_, _ = io.WriteString(w, `{"score": 1, "reason": "ok"}`)
			case <-r.Context().Done():
			}
		})}
		go func() { _ = t.remote.Serve(ln) }()
	}
	return nil
}

func (t *topology) close() {
	if t == nil {
		return
	}
	if t.alerts != nil {
		t.alerts.close()
	}
	if t.remote != nil {
		_ = t.remote.Close()
	}
}

// config edits the generated collector config.
func (t *topology) config(cfg string) string {
	if t == nil {
		return cfg
	}
	cfg = strings.ReplaceAll(cfg, "{{remote}}", t.remoteAddr)
	if !t.webhook {
		return cfg
	}
	hook := "\n  webhook:\n    endpoint: http://%s/alerts" + t.webhookExtra + "\n"
	addr := ""
	if t.webhookDown {
		addr = t.closedAddr
		hook += "    sending_queue: {num_consumers: 1, queue_size: 1}\n    retry_on_failure: {initial_interval: 5s, max_elapsed_time: 10m}\n"
	} else {
		addr = t.alerts.addr
	}
	cfg = strings.Replace(cfg, "\nexporters:\n", "\nexporters:"+fmt.Sprintf(hook, addr), 1)
	return strings.Replace(cfg, "      exporters: [otlp_http]\n", "      exporters: [otlp_http, webhook]\n", 1)
}

// scrape reads the collector metrics the checks use, while it runs.
func (t *topology) scrape(col *collector) {
	if t == nil {
		return
	}
	t.metrics = map[string]float64{}
	for _, m := range []string{"otelcol_exporter_webhook_alerts_dropped", "otelcol_exporter_webhook_monitor_groups_evicted",
		"otelcol_exporter_webhook_monitor_cases_untracked"} {
		t.metrics[m] = max(col.metric(m), 0)
	}
}

// finish checks the topology's promises once the scenario ran.
func (t *topology) finish(s *sink, r report) topologyResult {
	var out topologyResult
	if t == nil {
		return out
	}
	if t.noDuplicates && r.Duplicated > 0 {
		out.Broken = append(out.Broken, fmt.Sprintf("%d span copies arrived twice beside a down alert endpoint", r.Duplicated))
	}
	if t.webhook {
		dropped := t.metrics["otelcol_exporter_webhook_alerts_dropped"]
		out.Notes = append(out.Notes, fmt.Sprintf("webhook alerts dropped (queue full) %.0f", dropped))
		if t.wantDropped && dropped == 0 {
			out.Broken = append(out.Broken, "the alert endpoint was down but no alert was counted dropped")
		}
	}
	if t.alerts != nil {
		firing, forgotten := t.alerts.counts()
		evicted := t.metrics["otelcol_exporter_webhook_monitor_groups_evicted"]
		untracked := t.metrics["otelcol_exporter_webhook_monitor_cases_untracked"]
		out.Notes = append(out.Notes, fmt.Sprintf("monitor notifications: %d firing, %d forgotten; groups evicted %.0f, cases untracked %.0f",
			firing, forgotten, evicted, untracked))
		if t.wantEvicted && (evicted == 0 || firing <= 3) {
			out.Broken = append(out.Broken, fmt.Sprintf("monitor slots did not turn over: %d groups fired with max_groups 3, %.0f evicted", firing, evicted))
		}
	}
	if t.wantSessions > 0 {
		_, _, foreign, _, _ := s.snapshot()
		out.Notes = append(out.Notes, fmt.Sprintf("evaluate_session spans at the backend %d of %d conversations", foreign, t.wantSessions))
		if foreign < t.wantSessions {
			out.Broken = append(out.Broken, fmt.Sprintf("%d of %d sessions scored at shutdown", foreign, t.wantSessions))
		}
	}
	return out
}

// alertEndpoint is a webhook endpoint that counts monitor notifications.
type alertEndpoint struct {
	addr string
	srv  *http.Server

	mu                sync.Mutex
	firing, forgotten int
}

func newAlertEndpoint() (*alertEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &alertEndpoint{addr: ln.Addr().String()}
	a.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: a}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return a, nil
}

func (a *alertEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Monitors []struct {
			State     string `json:"state"`
			Forgotten bool   `json:"forgotten"`
		} `json:"monitors"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&p)
	a.mu.Lock()
	for _, n := range p.Monitors {
		switch {
		case n.Forgotten:
			a.forgotten++
		case n.State == "firing":
			a.firing++
		}
	}
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (a *alertEndpoint) counts() (firing, forgotten int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.firing, a.forgotten
}

func (a *alertEndpoint) close() { _ = a.srv.Close() }
