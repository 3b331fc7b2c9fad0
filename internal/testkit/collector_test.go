package testkit

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// recordingTB is a testing.TB whose Fatalf ends only the goroutine it runs
// on, so a test can watch what a helper does when a collector fails.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recordingTB) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// A collector that cannot start (its port taken) fails the test with why,
// and its cleanup returns at once: it used to wait 20 s for a second result
// of Run, then add "collector did not shut down" to the failure.
func TestRunCollectorThatCannotStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	config := fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  debug:
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
`, taken.Addr())
	factories := func() (otelcol.Factories, error) {
		f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
		var err error
		if f.Receivers, err = otelcol.MakeFactoryMap(otlpreceiver.NewFactory()); err != nil {
			return f, err
		}
		f.Exporters, err = otelcol.MakeFactoryMap(debugexporter.NewFactory())
		return f, err
	}

	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		StartCollector(rec, factories, config)
	}()
	<-done
	for i := len(rec.cleanups) - 1; i >= 0; i-- {
		rec.cleanups[i]()
	}
	got := strings.Join(rec.errs, "\n")
	if !strings.Contains(got, "collector stopped while starting") || !strings.Contains(got, "address already in use") {
		t.Errorf("the failure does not say why the collector stopped:\n%s", got)
	}
	if strings.Contains(got, "did not shut down") {
		t.Errorf("the cleanup waited for a collector that had already stopped:\n%s", got)
	}
}
