package main

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// scenario is one collector config and one load against it.
type scenario struct {
	name  string
	about string
	eval  string // the eval processor's options, without evaluators
	evals string // the evaluators block
	batch bool   // a batch processor after eval
	// processors, when set, is the pipeline's processors list as written
	// (the cpu command's "[batch]" and "[eval, batch]"); batch is then unused.
	processors string
	load       loadConfig
	outage     [2]time.Duration // backend down from [0] to [1] after the start
	sigterm    time.Duration    // >0: SIGTERM the collector this long after the start
	judge      bool             // a faulty judge and an llm_judge evaluator
	// credentials (with judge): the key is also the endpoint's userinfo
	// password, its ?code= query and an X-Api-Key header, and the judge
	// redirects every tenth request to another port, which must get nothing.
	credentials bool
	// flood: GenAI content log records flooding a few traces' LLM spans
	// beside the load (suite_logflood.go); floodBound bounds how long the
	// flooded traces may wait.
	flood      *logFlood
	floodBound time.Duration
	drain      time.Duration // how long to wait for the spans after the load
	allAcked   bool          // every request must be acknowledged in the end (back-pressure, not refusal)
	allScored  bool          // every normal run must get its results (Unscored fails the scenario)
	scoreWait  time.Duration // the processor's wait, to know when the sink can go quiet
	// topology: "" (one pipeline), "two_pipelines" (a second traces
	// pipeline through the same eval, from a receiver that gets nothing,
	// to a second sink that must get nothing), "alert_down" (the webhook
	// exporter beside the backend, its endpoint down).
	topology string
	// maxHostile bounds the longest forwarding delay of a hostile span
	// (0: no bound), a broken promise beyond it.
	maxHostile time.Duration
	extra      *topology // side services, config changes and checks (suite_topologies.go)
}

func scenarios(short bool) []scenario {
	base := loadConfig{rate: 50, duration: 3 * time.Second, plainShare: 0.2, failShare: 0.2, parts: 3,
		gap: 100 * time.Millisecond, retryFor: 60 * time.Second, conns: 4, seed: 1, scale: 1}
	scale := 1.0
	if short {
		scale = 0.2
	}
	with := func(f func(*loadConfig)) loadConfig {
		c := base
		f(&c)
		return c
	}
	// hostileLoad is the hostile scenarios' load: every hostile kind once
	// at t=0.5s, under 20 normal traces/s for 4 s.
	hostileLoad := func(seed uint64) loadConfig {
		return with(func(c *loadConfig) {
			c.rate = 20
			c.duration = 4 * time.Second
			c.hostileAt = 500 * time.Millisecond
			c.hostileKinds = hostileKinds
			c.scale = scale
			c.seed = seed
		})
	}
	const holdEval = "wait: 1s\n    timeout: 5s"
	all := []scenario{
		{
			name: "baseline", about: "50 traces/s, the normal mix, no batch: the reference for the others",
			eval: holdEval, evals: normalEvaluators, load: base, drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "overload", about: "10x the baseline rate (500 traces/s), max_traces 100, no batch processor",
			eval: holdEval + "\n    max_traces: 100", evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.rate = 500; c.seed = 2 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "outage", about: "the backend is down for 10 s from t=1s, 300 traces/s for 5 s",
			eval: holdEval, evals: normalEvaluators,
			load:   with(func(c *loadConfig) { c.rate = 300; c.duration = 5 * time.Second; c.seed = 3 }),
			outage: [2]time.Duration{time.Second, 11 * time.Second},
			drain:  60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "retries", about: "clients resend 30% of acknowledged requests (a lost response), passing runs only",
			eval: holdEval, evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.resend = 0.3; c.failShare = 0; c.seed = 4 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "hostile", about: "every hostile kind once at t=0.5s, under 20 normal traces/s for 4 s",
			eval: holdEval, evals: hostileEvaluators,
			load:  hostileLoad(5),
			drain: 60 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "shutdown", about: "SIGTERM at t=3s while 50 traces/s are sent, runs are held (wait 2s) and a 50k-call run is being scored",
			eval: "wait: 2s\n    timeout: 5s", evals: normalEvaluators,
			load: with(func(c *loadConfig) {
				c.duration = 5 * time.Second
				c.retryFor = time.Second
				c.hostileAt = 300 * time.Millisecond
				c.hostileKinds = []string{"many_calls_50k"}
				c.scale = scale
				c.seed = 6
			}),
			sigterm: 3 * time.Second, drain: 30 * time.Second, scoreWait: 2 * time.Second,
		},
		{
			name: "two_pipelines", about: "one eval in two traces pipelines (otlp/a -> eval -> backend a, otlp/b -> eval -> backend b); all load through a: nothing may reach b",
			eval: holdEval, evals: normalEvaluators, topology: "two_pipelines",
			load: with(func(c *loadConfig) { c.seed = 8 }), drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "alert_down", about: "eval -> [backend, webhook]: the alert endpoint never answers and the webhook's queue holds 2; the backend must get every span, once, on time",
			eval: holdEval, evals: normalEvaluators, topology: "alert_down",
			load: with(func(c *loadConfig) { c.failShare = 0.5; c.seed = 9 }), drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
		},
		{
			name: "endless_trace", about: "a trace that gets a request every 250 ms for 10 s (wait 1s, max_hold 3s), under 20 normal traces/s",
			eval: holdEval + "\n    max_hold: 3s", evals: normalEvaluators,
			load: with(func(c *loadConfig) {
				c.rate = 20
				c.duration = 4 * time.Second
				c.hostileAt = 200 * time.Millisecond
				c.hostileKinds = []string{"endless_trace"}
				c.seed = 10
			}),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			// its first spans wait at most max_hold (+ a tick and the
			// backend's answer): 3 s, not the 11 s the last request sets
			maxHostile: 5 * time.Second,
		},
		{
			name: "judge", about: "a judge that hangs, 500s and echoes the key (max_concurrency 2), 100 traces/s for 3 s",
			eval: "wait: 500ms\n    timeout: 3s", judge: true,
			load:  with(func(c *loadConfig) { c.rate = 100; c.failShare = 0; c.seed = 7 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: 3 * time.Second,
		},
		{
			name: "stream", about: "mode: stream (§26) under the baseline load: every span goes on at once, unchanged; each normal run's results come on a result span under its agent span",
			eval: "mode: stream\n    " + holdEval, evals: normalEvaluators,
			load: with(func(c *loadConfig) { c.seed = 15 }), drain: 30 * time.Second, allAcked: true, allScored: true, scoreWait: time.Second,
		},
		{
			name: "stream_hostile", about: "mode: stream under the hostile scenario's load: every hostile kind once at t=0.5s, under 20 normal traces/s for 4 s",
			eval: "mode: stream\n    " + holdEval, evals: hostileEvaluators,
			load:  hostileLoad(16),
			drain: 60 * time.Second, allAcked: true, allScored: true, scoreWait: time.Second,
		},
		{
			name: "log_flood", about: "3 traces whose LLM span gets 16,000 GenAI content log records each (a logs pipeline through the same eval), timeout 200ms, under the baseline load",
			eval: "wait: 1s\n    timeout: 200ms", evals: normalEvaluators,
			load:  with(func(c *loadConfig) { c.seed = 14 }),
			drain: 30 * time.Second, allAcked: true, scoreWait: time.Second,
			flood: &logFlood{traces: 3, records: 16000}, floodBound: 4 * time.Second,
		},
		{
			name: "credentials", about: "the judge's key also in its endpoint's userinfo and ?code= and an X-Api-Key header; the judge echoes them and redirects to another port (which must get nothing), 50 traces/s for 3 s",
			eval: "wait: 500ms\n    timeout: 3s", judge: true, credentials: true,
			load:  with(func(c *loadConfig) { c.failShare = 0; c.seed = 12 }),
			drain: 60 * time.Second, allAcked: true, scoreWait: 3 * time.Second,
		},
	}
	all = append(all, topologyScenarios()...)
	if short {
		// CI: a broken promise shows within these bounds as well.
		for i := range all {
			all[i].drain = min(all[i].drain, 20*time.Second)
			all[i].load.retryFor = min(all[i].load.retryFor, 20*time.Second)
		}
	}
	return all
}

// topologyParts are the extra receivers, exporters and pipelines of a
// scenario's topology, and the main pipeline's exporters.
func topologyParts(sc scenario, otherSink string, otherPort int) (receivers, exporters, pipelines, mainExporters string) {
	mainExporters = "[otlp_http]"
	switch sc.topology {
	case "two_pipelines":
		receivers = fmt.Sprintf(`
  otlp/b:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d`, otherPort)
		exporters = fmt.Sprintf(`
  otlp_http/b:
    endpoint: http://%s`, otherSink)
		pipelines = `
    traces/b:
      receivers: [otlp/b]
      processors: [eval]
      exporters: [otlp_http/b]`
	case "alert_down":
		exporters = fmt.Sprintf(`
  webhook:
    endpoint: http://127.0.0.1:%d/alerts
    timeout: 5s
    max_alerts_per_minute: 0
    sending_queue:
      queue_size: 2
      num_consumers: 1
    retry_on_failure:
      enabled: false`, otherPort)
		mainExporters = "[otlp_http, webhook]"
	}
	return receivers, exporters, pipelines, mainExporters
}

func collectorConfig(sc scenario, p ports, sinkAddr, judgeAddr, key string) string {
	return collectorConfigWith(sc, p, sinkAddr, judgeAddr, key, "", 0)
}

func collectorConfigWith(sc scenario, p ports, sinkAddr, judgeAddr, key, otherSink string, otherPort int) string {
	cfg := collectorConfigBase(sc, p, sinkAddr, judgeAddr, key, otherSink, otherPort)
	if sc.flood != nil {
		cfg = logFloodConfig(cfg)
	}
	return cfg
}

func collectorConfigBase(sc scenario, p ports, sinkAddr, judgeAddr, key, otherSink string, otherPort int) string {
	extraRecv, extraExp, extraPipes, mainExp := topologyParts(sc, otherSink, otherPort)
	evals := sc.evals
	judges := ""
	if sc.judge {
		endpoint, headers := "http://"+judgeAddr+"/v1", ""
		if sc.credentials {
			endpoint = fmt.Sprintf("http://evaluser:%s@%s/v1?code=%s", key, judgeAddr, key)
			headers = "\n        headers: {X-Api-Key: " + key + "}"
		}
		judges = fmt.Sprintf(`
    judges:
      default:
        endpoint: %s
        model: judge
        api_key: %s%s
        timeout: 1s
        max_concurrency: 2
        cache_size: 0
        retry: {max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms}`, endpoint, key, headers)
		evals = `
      - type: llm_judge
        name: helpful
        judge: default
        criteria: The answer says what was booked.
        inputs: [input, output]`
	}
	processors := "[eval]"
	batch := ""
	if sc.batch {
		processors = "[eval, batch]"
		batch = "\n  batch: {}"
	}
	if sc.processors != "" {
		processors = sc.processors
		batch = "\n  batch: {}"
		if strings.Contains(processors, "groupbytrace") {
			batch += fmt.Sprintf("\n  groupbytrace: {wait_duration: %s}", cmp.Or(sc.scoreWait, cpuWait))
		}
		if strings.Contains(processors, "resultfloor") {
			batch += "\n  resultfloor: {}"
		}
	}
	return sc.extra.config(fmt.Sprintf(`# generated by evalbridge-loadgen suite: scenario %[1]s
extensions:
  health_check:
    endpoint: 127.0.0.1:%[2]d
  pprof:
    endpoint: 127.0.0.1:%[3]d
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[4]d
        max_recv_msg_size_mib: 128%[12]s
processors:
  eval:
    %[5]s%[6]s
    evaluators:%[7]s%[8]s
exporters:
  otlp_http:
    endpoint: http://%[9]s
    retry_on_failure:
      enabled: true
      initial_interval: 500ms
      max_interval: 2s
      max_elapsed_time: 5m%[13]s
service:
  extensions: [health_check, pprof]
  telemetry:
    logs:
      level: warn
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[10]d
  pipelines:
    traces:
      receivers: [otlp]
      processors: %[11]s
      exporters: %[15]s%[14]s
`, sc.name, p.health, p.pprof, p.grpc, sc.eval, judges, evals, batch, sinkAddr, p.metrics, processors,
		extraRecv, extraExp, extraPipes, mainExp))
}
