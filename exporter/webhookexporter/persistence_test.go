package webhookexporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.uber.org/zap/zaptest"
)

// storageHost is a component.Host that offers a storage extension
// (componenttest.NewNopHost offers none).
type storageHost struct {
	exts map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func startFileStorage(t *testing.T, dir string) (component.ID, extension.Extension) {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	cfg.Compaction.Directory = dir
	id := component.NewID(f.Type())
	set := extensiontest.NewNopSettings(f.Type())
	set.ID = id
	ext, err := f.Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), storageHost{}))
	return id, ext
}

// downReceiver stands for the alert receiver: 503 (counting the attempts)
// until setUp, then what rec answers.
type downReceiver struct {
	mu           sync.Mutex
	up           bool
	downAttempts int
}

func (d *downReceiver) start(t *testing.T, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		isUp := d.up
		if !isUp {
			d.downAttempts++
		}
		d.mu.Unlock()
		if !isUp {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rec.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (d *downReceiver) setUp() {
	d.mu.Lock()
	d.up = true
	d.mu.Unlock()
}

func (d *downReceiver) attempts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.downAttempts
}

// startPersistent starts an exporter made by newExp with cfg over a
// persistent sending_queue (one consumer) on storageID, retrying every
// 20ms. Its ID stays the same across restarts: NewNopSettings names the
// exporter with a random UUID, and the queue's storage key derives from it.
func startPersistent(t *testing.T, cfg *Config, host storageHost, storageID component.ID,
	newExp func(exporter.Settings, *Config) (exporter.Traces, error)) *harness {
	q := exporterhelper.NewDefaultQueueConfig()
	q.StorageID = &storageID
	q.NumConsumers = 1
	cfg.QueueConfig = configoptional.Some(q)
	cfg.RetryConfig.InitialInterval = 20 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 20 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = time.Hour
	set := exportertest.NewNopSettings(Type)
	set.Logger = zaptest.NewLogger(t)
	set.ID = component.NewIDWithName(Type, "persistent")
	exp, err := newExp(set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), host))
	return &harness{exp: exp}
}

// onStorage is one life of an exporter over file_storage in dir: it opens
// the storage and starts (startPersistent) the exporter newExp makes with cfg
// over a persistent queue on it; stop shuts both down. The storage's ID is
// the same in every life.
func onStorage(t *testing.T, dir string, cfg *Config,
	newExp func(exporter.Settings, *Config) (exporter.Traces, error)) (h *harness, stop func()) {
	t.Helper()
	storageID, ext := startFileStorage(t, dir)
	h = startPersistent(t, cfg, storageHost{exts: map[component.ID]component.Component{storageID: ext}}, storageID, newExp)
	return h, func() {
		require.NoError(t, h.exp.Shutdown(context.Background()))
		require.NoError(t, ext.Shutdown(context.Background()))
	}
}

// monitorOnStorage is onStorage for an exporter that sends to url only the
// notifications of passRateMonitor, evaluated on each batch (no ticker).
func monitorOnStorage(t *testing.T, dir, url string) (h *harness, stop func()) {
	cfg := syncConfig(url)
	cfg.PerTraceAlerts = false
	cfg.Monitors = []MonitorConfig{passRateMonitor()}
	return onStorage(t, dir, cfg, func(set exporter.Settings, cfg *Config) (exporter.Traces, error) {
		return newTracesExporterWithTicker(context.Background(), set, cfg, time.Now,
			func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} })
	})
}

// Alerts queued while the receiver is down survive a restart of the exporter
// (a persistent sending_queue on file_storage) and are delivered after it.
func TestPersistentQueueSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	rec, recv := newRecorder(t), &downReceiver{}
	srv := recv.start(t, rec)
	newExporter := func() (*harness, func()) {
		return onStorage(t, dir, syncConfig(srv.URL), func(set exporter.Settings, cfg *Config) (exporter.Traces, error) {
			return newTracesExporter(ctx, set, cfg, time.Now)
		})
	}

	// Exporter 1: the receiver answers 503; the request stays queued.
	exp1, stop1 := newExporter()
	require.NoError(t, exp1.exp.ConsumeTraces(ctx, agentTraces(failed("booking_flow", 0.5, 1, "persisted"))))
	require.Eventually(t, func() bool { return recv.attempts() >= 2 }, 10*time.Second, 10*time.Millisecond, "exporter 1 retries")
	stop1()
	assert.Empty(t, rec.requests(), "nothing delivered while the receiver was down")

	// The receiver comes back; exporter 2 on the same directory delivers.
	recv.setUp()
	_, stop2 := newExporter()
	require.Eventually(t, func() bool { return len(rec.requests()) >= 1 }, 10*time.Second, 10*time.Millisecond)
	stop2()

	reqs := rec.requests()
	require.Len(t, reqs, 1, "delivered once")
	p := rec.payload(t, 0)
	require.Len(t, p.Alerts, 1)
	assert.Equal(t, "booking_flow", p.Alerts[0].Evaluator)
	assert.Equal(t, "persisted", p.Alerts[0].Reason)
}

// Monitor state survives a restart with a persistent queue: a group that
// fired before the restart and recovers after it gets its resolved, with
// the window's cases from before (issue 19; before, every group restarted
// `ok` with an empty window and the resolved never came).
func TestMonitorStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rec := newRecorder(t)
	// One life of the exporter: it takes results and sends its nth
	// notification, returned.
	life := func(results []evaluatorsResult, nth int) MonitorNotification {
		h, stop := monitorOnStorage(t, dir, rec.srv.URL)
		defer stop()
		require.NoError(t, h.exp.ConsumeTraces(ctx, caseTraces("travel_agent", results...)))
		require.Eventually(t, func() bool { return len(rec.monitors(t)) == nth }, 10*time.Second, 10*time.Millisecond)
		return rec.monitors(t)[nth-1]
	}

	firing := life(repeat(4, fail), 1)
	require.Equal(t, StateFiring, firing.State)
	// 4 passes after 4 failures: 0.5, no longer below 0.5.
	resolved := life(repeat(4, pass), 2)
	assert.Equal(t, StateResolved, resolved.State)
	assert.Equal(t, 8, resolved.Cases, "the window kept the cases from before the restart")
	assert.Equal(t, 4, resolved.Failed)
	assert.Equal(t, firing.Since, resolved.Since, "the incident it closes began before the restart")
	assert.Len(t, resolved.SampleTraceIDs, 4, "sample trace ids kept")
}
