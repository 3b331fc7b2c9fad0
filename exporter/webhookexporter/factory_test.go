package webhookexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, component.MustNewType("webhook"), f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.TracesStability())
}

func TestLifecycle(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "http://127.0.0.1:1/hook"
	require.NoError(t, cfg.Validate())

	t.Run("start and shutdown", func(t *testing.T) {
		exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(Type), cfg)
		require.NoError(t, err)
		assert.False(t, exp.Capabilities().MutatesData)
		require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, exp.Shutdown(context.Background()))
	})
	t.Run("shutdown without start", func(t *testing.T) {
		exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(Type), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Shutdown(context.Background()))
	})
	t.Run("with monitors: the ticker stops at shutdown", func(t *testing.T) {
		mcfg := *cfg
		mcfg.Monitors = []MonitorConfig{passRateMonitor()}
		require.NoError(t, mcfg.Validate())
		for range 2 { // started and stopped; shut down without start
			exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(Type), &mcfg)
			require.NoError(t, err)
			assert.False(t, exp.Capabilities().MutatesData)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, exp.Shutdown(context.Background()))
		}
		exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(Type), &mcfg)
		require.NoError(t, err)
		require.NoError(t, exp.Shutdown(context.Background()))
		// goleak (TestMain) checks that no ticker goroutine is left.
	})
	t.Run("unsupported signals", func(t *testing.T) {
		_, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(Type), cfg)
		require.Error(t, err)
	})
	t.Run("logs: start and shutdown, with monitors", func(t *testing.T) {
		mcfg := *cfg
		mcfg.Monitors = []MonitorConfig{passRateMonitor()}
		exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(Type), &mcfg)
		require.NoError(t, err)
		assert.False(t, exp.Capabilities().MutatesData)
		require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, exp.Shutdown(context.Background()))
	})
	t.Run("bad template fails create", func(t *testing.T) {
		bad := f.CreateDefaultConfig().(*Config)
		bad.ClientConfig.Endpoint = "http://127.0.0.1:1/hook"
		bad.Format = FormatTemplate
		bad.Template = "{{"
		_, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(Type), bad)
		require.Error(t, err)
	})
}
