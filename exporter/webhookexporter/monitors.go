package webhookexporter

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Monitor notifications travel through the exporter's own sending queue as
// traces: one span of scope carrierScope whose attribute carrierAttr holds
// the notifications as JSON. The queue (persistent with file_storage), its
// retry and its batching then treat them exactly like the traces whose
// failures become alerts, and the push function tells them apart by scope.
const (
	carrierScope = scopeName + "/monitors"
	carrierAttr  = "evalbridge.webhook.monitor_notifications"
)

const (
	// minTick and maxTick bound the period at which every group is evaluated
	// without new traffic (the smallest bucket width of the monitors).
	minTick = 250 * time.Millisecond
	maxTick = 15 * time.Second
)

// monitors is the exporter's set of monitors.
type monitors struct {
	list   []*monitor
	byName map[string]*monitor
	now    func() time.Time
	tick   time.Duration
}

func newMonitors(cfg *Config, set exporter.Settings, now func() time.Time) (*monitors, error) {
	if len(cfg.Monitors) == 0 {
		return nil, nil
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	ms := &monitors{byName: map[string]*monitor{}, now: now, tick: maxTick}
	for _, mc := range cfg.Monitors {
		maxGroups := cfg.MaxGroups
		if mc.MaxGroups > 0 {
			maxGroups = mc.MaxGroups
		}
		m := newMonitor(mc, maxGroups, cfg.TraceURL, tel.forMonitor(mc.Name), set.Logger)
		ms.list = append(ms.list, m)
		ms.byName[mc.Name] = m
		ms.tick = min(ms.tick, m.width)
	}
	ms.tick = max(ms.tick, minTick)
	return ms, nil
}

// observe counts the cases in td and evaluates the groups they touched.
func (ms *monitors) observe(td ptrace.Traces) []pending {
	now := ms.now()
	var out []pending
	for _, m := range ms.list {
		m.mu.Lock()
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					m.observeSpan(span, rs.Resource().Attributes(), now)
				}
			}
		}
		out = m.evaluateTouched(now, out)
		m.mu.Unlock()
	}
	return out
}

// evaluateAll evaluates every group: windows slide without new traffic.
func (ms *monitors) evaluateAll() []pending {
	now := ms.now()
	var out []pending
	for _, m := range ms.list {
		out = m.evaluateAll(now, out)
	}
	return out
}

// carriedNote is a notification as it waits in the queue: with Figure,
// which the JSON body leaves out.
type carriedNote struct {
	MonitorNotification
	Figure string `json:"figure"`
}

// carrier wraps notifications into the traces the queue holds.
func carrier(ps []pending) (ptrace.Traces, error) {
	notes := make([]carriedNote, len(ps))
	for i, p := range ps {
		notes[i] = carriedNote{MonitorNotification: p.note, Figure: p.note.Figure}
	}
	b, err := json.Marshal(notes)
	if err != nil {
		return ptrace.Traces{}, err
	}
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	ss.Scope().SetName(carrierScope)
	span := ss.Spans().AppendEmpty()
	span.SetName("webhook monitor notifications")
	span.Attributes().PutStr(carrierAttr, string(b))
	return td, nil
}

// splitCarried returns the notifications carried in td, and whether td
// holds anything else (traces whose failures become alerts).
func splitCarried(td ptrace.Traces, logger *zap.Logger) (notes []MonitorNotification, other bool) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			if ss.Scope().Name() != carrierScope {
				other = other || ss.Spans().Len() > 0
				continue
			}
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				v, ok := spans.At(k).Attributes().Get(carrierAttr)
				if !ok {
					continue
				}
				var cn []carriedNote
				if err := json.Unmarshal([]byte(v.AsString()), &cn); err != nil {
					// Only a queue written by another version can get here.
					logger.Error("Dropping unreadable monitor notifications from the sending queue", zap.Error(err))
					continue
				}
				for _, n := range cn {
					n.MonitorNotification.Figure = n.Figure
					notes = append(notes, n.MonitorNotification)
				}
			}
		}
	}
	return notes, other
}

// tracesExporter is the exporter the pipeline sees. It never refuses what
// it receives (docs/contract.md §17): alerts the sending queue cannot take
// are dropped, logged and counted, so the pipeline's other exporters get
// their data once and on time however the alert endpoint fares. With
// monitors, they count cases as traces arrive, before the queue, so a
// retried request never counts them twice; their notifications then enter
// the same queue.
type tracesExporter struct {
	exporter.Traces // exporterhelper's: queue, retry, push
	e               *webhookExporter
	mons            *monitors
	logger          *zap.Logger
	newTicker       func(time.Duration) (<-chan time.Time, func())
	id              component.ID
	store           *monitorStore // nil without a persistent queue
	// storeName names the monitors' storage client ("" is storageName; a
	// logs instance of the same id has its own).
	storeName string

	stop chan struct{}
	done chan struct{}
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (t *tracesExporter) Start(ctx context.Context, host component.Host) error {
	if err := t.Traces.Start(ctx, host); err != nil {
		return err
	}
	if t.mons == nil {
		return nil
	}
	store, err := openMonitorStore(ctx, host, t.e.cfg, t.id, t.storeName, t.logger)
	if err != nil {
		return errors.Join(err, t.Traces.Shutdown(ctx))
	}
	if store != nil {
		store.load(ctx, t.mons)
		t.store = store
	}
	c, stopTicker := t.newTicker(t.mons.tick)
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		defer stopTicker()
		saved := t.mons.now()
		for {
			select {
			case <-t.stop:
				return
			case <-c:
				t.enqueue(context.Background(), t.mons.evaluateAll())
				if now := t.mons.now(); t.store != nil && now.Sub(saved) >= saveEvery {
					saved = now
					if err := t.store.save(context.Background(), t.mons); err != nil {
						t.logger.Warn("Monitor state could not be written to storage", zap.Error(err))
					}
				}
			}
		}
	}()
	return nil
}

// Shutdown stops evaluating before the queue drains (or persists), so no
// notification is produced after it.
func (t *tracesExporter) Shutdown(ctx context.Context) error {
	var err error
	if t.stop != nil {
		close(t.stop)
		<-t.done
		t.stop = nil
	}
	if t.store != nil {
		err = t.store.close(ctx, t.mons)
		t.store = nil
	}
	return errors.Join(err, t.Traces.Shutdown(ctx))
}

func (t *tracesExporter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if t.mons != nil {
		t.enqueue(ctx, t.mons.observe(td))
	}
	if !t.e.cfg.PerTraceAlerts {
		return nil
	}
	if err := t.Traces.ConsumeTraces(ctx, td); err != nil {
		t.e.dropAlerts(ctx, td, err)
	}
	return nil
}

// enqueue hands notifications to the sending queue. When it refuses them
// (full, or shut down) the groups' states are put back, so the next
// evaluation produces them again instead of losing them.
func (t *tracesExporter) enqueue(ctx context.Context, ps []pending) {
	if len(ps) == 0 {
		return
	}
	td, err := carrier(ps)
	if err == nil {
		err = t.Traces.ConsumeTraces(ctx, td)
	}
	if err == nil {
		return
	}
	if consumererror.IsPermanent(err) {
		// Without a sending queue the request itself was rejected (a 4xx):
		// trying again every tick would not help.
		for i := range ps {
			ps[i].m.tel.enqueueFailed()
		}
		// exporterhelper has logged the error ("Exporting failed"); this
		// only says what became of the notifications.
		t.logger.Debug("Monitor notifications rejected by the webhook endpoint; dropped",
			zap.Int("notifications", len(ps)), zap.Error(err))
		return
	}
	for i := range ps {
		ps[i].undo()
		ps[i].m.tel.enqueueFailed()
	}
	// exporterhelper has logged the error at Error; this says only that
	// nothing is lost.
	t.logger.Info("Monitor notifications not queued; the next evaluation retries them",
		zap.Int("notifications", len(ps)))
}
