package testkit

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
)

// Listeners are a shipped collector config's listening addresses moved to
// free loopback ports, as `--config=yaml:…` overrides merged over the file
// (which is used unchanged): a test on a shared machine must not take the
// well-known ports nor listen on every interface.
type Listeners struct {
	// Overrides are the yaml: URIs, without the "yaml:" prefix.
	Overrides []string
	// Moved maps each moved key path ("extensions::health_check::endpoint")
	// to its original address and its new one.
	Moved map[string][2]string
	// Telemetry is the new address of the collector's own metrics reader
	// (service::telemetry::metrics::readers), TelemetryWas its
	// host:port in the config; both empty when it has none.
	Telemetry, TelemetryWas string
}

// listenHosts are the hosts a shipped config listens on.
var listenHosts = []string{"0.0.0.0", "localhost", "127.0.0.1", "${env:MY_POD_IP}", "${env:POD_IP}"}

// MoveListeners finds every `endpoint: HOST:PORT` (no scheme) whose host is
// one a server listens on, and the pull reader of the collector's own
// telemetry, and moves each to a free loopback port.
func MoveListeners(t testing.TB, conf map[string]any) Listeners {
	t.Helper()
	l := Listeners{Moved: map[string][2]string{}}
	walkListeners(conf, nil, func(path []string, addr string) {
		to := FreeAddr(t)
		key := strings.Join(path, "::")
		l.Overrides = append(l.Overrides, key+": "+to)
		l.Moved[key] = [2]string{addr, to}
	})
	service, _ := conf["service"].(map[string]any)
	telemetry, _ := service["telemetry"].(map[string]any)
	metrics, _ := telemetry["metrics"].(map[string]any)
	readers, _ := metrics["readers"].([]any)
	for _, r := range readers {
		prom := dig(r, "pull", "exporter", "prometheus")
		if prom == nil {
			continue
		}
		l.TelemetryWas = fmt.Sprintf("%v:%v", prom["host"], prom["port"])
		l.Telemetry = FreeAddr(t)
		host, port, _ := net.SplitHostPort(l.Telemetry)
		l.Overrides = append(l.Overrides, fmt.Sprintf(
			"service::telemetry::metrics::readers: [{pull: {exporter: {prometheus: {host: %q, port: %s}}}}]", host, port))
		break
	}
	return l
}

// Addr is the new address of the listener at key, "" when none moved.
func (l Listeners) Addr(key string) string { return l.Moved[key][1] }

func walkListeners(v any, path []string, fn func([]string, string)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := append(slices.Clone(path), k)
		if s, ok := m[k].(string); ok && k == "endpoint" && !strings.Contains(s, "://") {
			if i := strings.LastIndex(s, ":"); i > 0 && slices.Contains(listenHosts, s[:i]) {
				fn(p, s)
			}
			continue
		}
		walkListeners(m[k], p, fn)
	}
}

func dig(v any, keys ...string) map[string]any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	m, _ := v.(map[string]any)
	return m
}
