package testkit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"
)

// StartCollector writes config to a file, starts a collector on it with factories
// and waits until it runs; the test's cleanup shuts it down and fails the
// test if it does not stop within 20 s.
func StartCollector(t testing.TB, factories func() (otelcol.Factories, error), config string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	RunCollector(t, otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "collectortest", Version: "test"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{"file:" + path},
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		}},
	})
}

// RunCollector starts a collector with set (its config URIs, providers and
// factories) and waits until it runs; the test's cleanup shuts it down and
// fails the test if it does not stop within 20 s.
func RunCollector(t testing.TB, set otelcol.CollectorSettings) {
	t.Helper()
	col, err := otelcol.NewCollector(set)
	if err != nil {
		t.Fatal(err)
	}
	// stopped is closed when Run returns, runErr is then its error: the
	// start loop and the cleanup both look, and a collector that failed to
	// start must not leave the cleanup waiting for a second result.
	stopped := make(chan struct{})
	var runErr error
	go func() {
		defer close(stopped)
		runErr = col.Run(context.Background())
	}()
	startFailed := false
	t.Cleanup(func() {
		col.Shutdown()
		select {
		case <-stopped:
			if runErr != nil && !startFailed {
				t.Errorf("collector run: %v", runErr)
			}
		case <-time.After(20 * time.Second):
			t.Error("collector did not shut down")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for col.GetState() != otelcol.StateRunning {
		select {
		case <-stopped:
			startFailed = true
			t.Fatalf("collector stopped while starting: %v", runErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not running after 30s (state %v)", col.GetState())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
