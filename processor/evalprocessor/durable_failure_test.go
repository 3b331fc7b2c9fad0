package evalprocessor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/internal/engine"
)

// storeFile is the file contrib's file_storage keeps the processor's
// store in (processortest's settings name the processor `eval`).
const storeFile = "processor_eval_"

// corruptStores writes, for each way a store file gets corrupt, the file
// into a directory of its own and returns the directories.
func corruptStores(t *testing.T) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	// Not a database at all (a partial copy, another program's file).
	garbage := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(garbage, storeFile), bytes.Repeat([]byte{0xab, 0x17, 0x00, 0x42}, 16<<10), 0o600))
	dirs["garbage"] = garbage

	// A real store holding traces whose two meta pages were overwritten (a
	// torn write, a bad sector): bbolt's "invalid database", the error
	// issue 34 reported. (A corrupt data page that bbolt meets while it
	// rebuilds the freelist panics in a goroutine of bbolt's own, which no
	// caller can recover, with `recreate: true` or without: docs/production.md, "Durable holding".)
	meta := t.TempDir()
	st := startFileStorage(t, meta)
	h := startDurable(t, st, nil, 0)
	h.consume(manyTraces(50, false))
	h.crash(st)
	st.stop()
	path := filepath.Join(meta, storeFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	page := os.Getpagesize()
	require.Greater(t, len(b), 2*page, "the store has data pages")
	for _, at := range []int{0, page} {
		for i := at + 16; i < at+80; i++ { // the meta: magic, version, page size, root, freelist, checksum
			b[i] ^= 0x5a
		}
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
	dirs["meta"] = meta
	return dirs
}

// startOnStore starts a processor with `storage: file_storage/eval` on
// contrib's file_storage in dir, logging to logger, with muts applied to
// its config.
func startOnStore(t *testing.T, dir string, failure engine.StorageFailure, logger *zap.Logger, muts ...func(*Config)) (*harness, error) {
	t.Helper()
	st := startFileStorage(t, dir)
	cfg := createDefaultConfig()
	cfg.Wait = time.Second
	cfg.Evaluators = toolErrorOnly()
	id := storageID
	cfg.Storage = &id
	cfg.StorageFailure = failure
	for _, mut := range muts {
		mut(cfg)
	}
	require.NoError(t, confmap.Validate(cfg))
	h := &harness{t: t, sink: new(consumertest.TracesSink), clk: newFakeClock(), tel: componenttest.NewTelemetry(), cfg: cfg}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = logger
	p, err := newProcessor(set, cfg, h.sink, h.clk.clock())
	require.NoError(t, err)
	p.nextLogs = new(consumertest.LogsSink)
	host := extHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
	if err := p.Start(context.Background(), host); err != nil {
		return h, err
	}
	<-h.clk.got
	h.p = p
	t.Cleanup(func() {
		if !h.ended {
			require.NoError(t, p.Shutdown(context.Background()))
		}
	})
	return h, nil
}

func (h *harness) gauge(name string) (int64, bool) {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0, false
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(h.t, ok, "%s is a %T", name, m.Data)
	require.Len(h.t, g.DataPoints, 1)
	return g.DataPoints[0].Value, true
}

// §22: a corrupt store file no longer keeps the collector down. With
// storage_failure: continue (the default) the processor starts without
// durable holding, logs the cause at error level, sets the gauge to 1 and
// scores as before; with fail it refuses to start and names the remedies.
func TestCorruptStoreFile(t *testing.T) {
	for name, dir := range corruptStores(t) {
		t.Run(name+"/continue", func(t *testing.T) {
			core, logs := observer.New(zapcore.WarnLevel)
			h, err := startOnStore(t, dir, engine.StorageFailureContinue, zap.New(core))
			require.NoError(t, err, "a corrupt store kept the processor from starting")
			assert.Nil(t, h.p.store, "running on a store that failed")
			v, ok := h.gauge(metricStorageUnavailable)
			assert.True(t, ok && v == 1, "%s = %d (recorded: %v), want 1", metricStorageUnavailable, v, ok)
			errs := logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("WITHOUT durable holding").All()
			require.Len(t, errs, 1, "logged: %v", logs.All())
			assert.Contains(t, errs[0].Message, "recreate: true")
			assert.NotEmpty(t, errs[0].ContextMap()["error"], "the cause is logged")

			// Spans still go through, scored.
			b := newBatch()
			agentTrace(b, 1, true)
			h.consume(b.td)
			h.clk.advance(2 * time.Second)
			h.waitSpans(5)
			assert.Equal(t, "failed", strAttr(spansOf(h.sink, 1)[1], "eval.tool_error.status"))
		})
		t.Run(name+"/fail", func(t *testing.T) {
			_, err := startOnStore(t, dir, engine.StorageFailureFail, zap.NewNop())
			require.Error(t, err)
			for _, remedy := range []string{"recreate: true", "file_storage/eval", "move the file " + storeFile, "storage_failure: continue"} {
				assert.Contains(t, err.Error(), remedy)
			}
		})
	}

	// A store that opens: the gauge says 0, the store is used.
	h, err := startOnStore(t, t.TempDir(), engine.StorageFailureFail, zap.NewNop())
	require.NoError(t, err)
	assert.NotNil(t, h.p.store)
	v, ok := h.gauge(metricStorageUnavailable)
	assert.True(t, ok && v == 0, "%s = %d (recorded: %v), want 0", metricStorageUnavailable, v, ok)
}

func TestStorageFailureValidate(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Evaluators = toolErrorOnly()
	assert.Equal(t, engine.StorageFailureContinue, cfg.StorageFailure, "the default")
	require.NoError(t, confmap.Validate(cfg))
	cfg.StorageFailure = "retry"
	require.ErrorContains(t, confmap.Validate(cfg), `storage_failure: "retry" must be continue or fail`)
}
