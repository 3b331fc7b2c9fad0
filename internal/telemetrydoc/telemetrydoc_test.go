package telemetrydoc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const sample = `type: demo
telemetry:
  metrics:
    demo_requests:
      enabled: true
      description: Requests by outcome.
      unit: "{requests}"
      attributes: [outcome]
      sum:
        value_type: int
        monotonic: true
    demo_optional_level:
      enabled: true
      description: A level.
      optional: true
      unit: "1"
      gauge:
        value_type: int
attributes:
  outcome:
    description: How it ended.
    type: string
    enum: [ok, error]
`

func load(t *testing.T) (*Metadata, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(sample), 0o600))
	md, err := Load(filepath.Join(dir, "metadata.yaml"))
	require.NoError(t, err)
	return md, dir
}

// What a component registers and records is compared with what it
// declares: the same instrument passes; each kind of drift is reported.
func TestCompare(t *testing.T) {
	md, _ := load(t)
	register := func(name, desc, unit string, attr string) []Instrument {
		r := NewRecorder()
		c, err := r.Meter("x").Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		require.NoError(t, err)
		c.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attr, "ok")))
		return r.Instruments()
	}
	assert.Empty(t, Compare(md, register("otelcol_demo_requests", "Requests by outcome.", "{requests}", "outcome"), true))
	assert.Equal(t, []string{`otelcol_demo_requests: description "Requests.", metadata.yaml says "Requests by outcome."`},
		Compare(md, register("otelcol_demo_requests", "Requests.", "{requests}", "outcome"), false))
	assert.Equal(t, []string{`otelcol_demo_requests: unit "1", metadata.yaml says "{requests}"`},
		Compare(md, register("otelcol_demo_requests", "Requests by outcome.", "1", "outcome"), false))
	assert.Equal(t, []string{`otelcol_demo_requests: records attribute "exporter", which metadata.yaml does not declare for it`},
		Compare(md, register("otelcol_demo_requests", "Requests by outcome.", "{requests}", "exporter"), false))
	assert.Equal(t, []string{
		"otelcol_demo_requests: declared in metadata.yaml, not registered",
		"otelcol_demo_renamed: registered, not declared in metadata.yaml",
	}, Compare(md, register("otelcol_demo_renamed", "Requests by outcome.", "{requests}", "outcome"), false))
}

// documentation.md must be what Render makes of metadata.yaml.
func TestCheckDocumentation(t *testing.T) {
	md, dir := load(t)
	doc := filepath.Join(dir, "documentation.md")
	require.NoError(t, os.WriteFile(doc, Render(md, nil), 0o600))
	require.NoError(t, CheckDocumentation(dir))
	require.NoError(t, os.WriteFile(doc, append(Render(md, nil), "edited by hand\n"...), 0o600))
	require.Error(t, CheckDocumentation(dir))
	assert.Contains(t, string(Render(md, nil)), "| outcome | How it ended. | Str: ``ok``, ``error`` |")
}
