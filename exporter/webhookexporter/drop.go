package webhookexporter

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// dropLogEvery bounds the warnings about dropped alerts: a down endpoint
// would otherwise log once per batch of traces.
const dropLogEvery = 10 * time.Second

// dropLog gathers the alerts dropped between two warnings.
type dropLog struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// dropAlerts accounts for traces the sending queue refused (it is full:
// the endpoint is down or slower than the alerts come, or the exporter is
// shutting down): their alerts are dropped, counted and logged, and the
// pipeline is told nothing, so it neither waits nor sends its data again.
func (e *webhookExporter) dropAlerts(ctx context.Context, td ptrace.Traces, err error) {
	if consumererror.IsPermanent(err) {
		// Only without a queue (the package's tests): the push has
		// counted them as rejected already.
		return
	}
	n := len(extractAlerts(td, e.allow, e.cfg.TraceURL))
	if n == 0 {
		return
	}
	e.tel.dropped(ctx, n, dropQueueFull)
	now := e.now()
	e.drops.mu.Lock()
	e.drops.pending += n
	if !e.drops.last.IsZero() && now.Sub(e.drops.last) < dropLogEvery {
		e.drops.mu.Unlock()
		return
	}
	total := e.drops.pending
	e.drops.pending, e.drops.last = 0, now
	e.drops.mu.Unlock()
	e.logger.Warn("Webhook alerts dropped: the sending queue refused them (the alert endpoint is down or slower than the alerts come); "+
		"the pipeline's other exporters are not held back (otelcol_exporter_webhook_alerts_dropped)",
		zap.Int("alerts", total), zap.Duration("log_interval", dropLogEvery), zap.Error(err))
}
