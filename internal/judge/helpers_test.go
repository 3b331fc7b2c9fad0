package judge_test

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func fmtAny(v any) string { return fmt.Sprintf("%v", v) }

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(v), "\n", " "), "\t", " "))
}

// observed is no-op telemetry settings whose log entries at level and
// above are kept.
func observed(level zapcore.Level) (component.TelemetrySettings, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	set := componenttest.NewNopTelemetrySettings()
	set.Logger = zap.New(core)
	return set, logs
}

// logLines is each kept entry as one line: its message, then key=value for
// each field.
func logLines(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		out = append(out, line)
	}
	return out
}
