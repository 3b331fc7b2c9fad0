package telemetrydoc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TelemetryFile is where mdgen writes a package's telemetry builder, as
// mdatagen does.
var TelemetryFile = filepath.Join("internal", "metadata", "generated_telemetry.go")

// Generate returns the files mdgen writes in dir (paths relative to dir)
// from the metadata.yaml at metadataPath. In the component's own directory
// (metadataPath is dir/metadata.yaml): documentation.md and the builder of
// the metrics the component registers itself. In a package that registers
// some of a component's metrics (their `registered_by`): the builder of
// those. Every builder uses the component's scope (its import path).
func Generate(dir, metadataPath string) (map[string][]byte, error) {
	md, err := Load(metadataPath)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mdDir, err := filepath.Abs(filepath.Dir(metadataPath))
	if err != nil {
		return nil, err
	}
	root, module, err := findModule(absDir)
	if err != nil {
		return nil, err
	}
	relMD, err := filepath.Rel(root, mdDir)
	if err != nil {
		return nil, err
	}
	scope := module + "/" + filepath.ToSlash(relMD)
	out := map[string][]byte{}
	registeredBy := ""
	if absDir == mdDir {
		extra, err := os.ReadFile(filepath.Join(mdDir, ExtraFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		out["documentation.md"] = Render(md, extra)
	} else {
		rel, err := filepath.Rel(root, absDir)
		if err != nil {
			return nil, err
		}
		registeredBy = filepath.ToSlash(rel)
	}
	src, err := RenderTelemetry(md, scope, filepath.ToSlash(filepath.Join(relMD, "metadata.yaml")), registeredBy)
	if err != nil {
		return nil, err
	}
	out[TelemetryFile] = src
	return out, nil
}

// CheckGenerated returns an error naming every file in dir that is not
// what Generate makes of metadataPath.
func CheckGenerated(dir, metadataPath string) error {
	files, err := Generate(dir, metadataPath)
	if err != nil {
		return err
	}
	var errs []error
	for name, want := range files {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !bytes.Equal(have, want) {
			errs = append(errs, fmt.Errorf("%s differs from what %s generates: run `go generate` in %s",
				filepath.Join(dir, name), metadataPath, dir))
		}
	}
	return errors.Join(errs...)
}

// findModule returns the directory of the go.mod above dir and its module
// path.
func findModule(dir string) (string, string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		f, err := os.Open(filepath.Join(d, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return d, strings.Trim(strings.TrimSpace(rest), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s: no module line", f.Name())
		}
		if filepath.Dir(d) == d {
			return "", "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// instrument is how a metric is registered: the Go type of the builder's
// field, the Meter method (the same name) and, for observable instruments,
// the callback type.
func (m Metric) instrument() (kind string, async bool) {
	n := "Int64"
	if m.valueType() == "double" {
		n = "Float64"
	}
	switch {
	case m.Sum != nil && m.Sum.Async && m.Sum.Monotonic:
		return n + "ObservableCounter", true
	case m.Sum != nil && m.Sum.Async:
		return n + "ObservableUpDownCounter", true
	case m.Sum != nil && m.Sum.Monotonic:
		return n + "Counter", false
	case m.Sum != nil:
		return n + "UpDownCounter", false
	case m.Gauge != nil && m.Gauge.Async:
		return n + "ObservableGauge", true
	case m.Gauge != nil:
		return n + "Gauge", false
	}
	return n + "Histogram", false
}

func (m Metric) valueType() string {
	switch {
	case m.Sum != nil:
		return m.Sum.ValueType
	case m.Gauge != nil:
		return m.Gauge.ValueType
	case m.Histogram != nil:
		return m.Histogram.ValueType
	}
	return ""
}

// FieldName is the builder's field for a metric key, as mdatagen names it
// (processor_eval_traces_held: ProcessorEvalTracesHeld).
func FieldName(key string) string {
	var b strings.Builder
	for _, part := range strings.Split(key, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// RuntimePackage is the package a generated builder calls for what every
// builder does the same way (options, callbacks, Shutdown).
const RuntimePackage = "github.com/evalbridge/evalbridge/internal/telemetrydoc/telemetrygen"

// RenderTelemetry returns generated_telemetry.go (package metadata) for
// the metrics of md registered by registeredBy ("": the component's own),
// in the shape of mdatagen's telemetry builder: a TelemetryBuilder with a
// field per instrument, NewTelemetryBuilder registering each with the
// name, description, unit (and buckets) of metadata.yaml, a
// Register<Field>Callback per observable instrument, and Shutdown. What
// every builder does alike is in RuntimePackage.
func RenderTelemetry(md *Metadata, scope, source, registeredBy string) ([]byte, error) {
	var keys []string
	for _, key := range md.MetricKeys() {
		if md.Telemetry.Metrics[key].RegisteredBy == registeredBy {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s declares no metric registered by %q", source, registeredBy)
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by internal/telemetrydoc/mdgen from %s. DO NOT EDIT.\n\n", source)
	p("package metadata\n\nimport (\n\t\"errors\"\n\n")
	p("\t\"go.opentelemetry.io/collector/component\"\n\t\"go.opentelemetry.io/otel/metric\"\n\n\t%q\n)\n\n", RuntimePackage)
	p("// Meter returns the meter of the component's scope.\nfunc Meter(settings component.TelemetrySettings) metric.Meter {\n\treturn settings.MeterProvider.Meter(%q)\n}\n\n", scope)
	p("// TelemetryBuilder holds the instruments declared in %s", source)
	if registeredBy != "" {
		p(" with registered_by: %s", registeredBy)
	}
	p(".\ntype TelemetryBuilder struct {\n\tmeter metric.Meter\n\tregistrations telemetrygen.Registrations\n")
	for _, key := range keys {
		kind, _ := md.Telemetry.Metrics[key].instrument()
		p("\t%s metric.%s\n", FieldName(key), kind)
	}
	p("}\n\n// TelemetryBuilderOption applies changes to the default builder.\n")
	p("type TelemetryBuilderOption = telemetrygen.Option[TelemetryBuilder]\n\n")
	for _, key := range keys {
		m := md.Telemetry.Metrics[key]
		if _, a := m.instrument(); !a {
			continue
		}
		n, vt := FieldName(key), "Int64"
		if m.valueType() == "double" {
			vt = "Float64"
		}
		p("// Register%sCallback sets a callback for the observable %s; Shutdown unregisters it.\n", n, n)
		p("func (builder *TelemetryBuilder) Register%sCallback(cb metric.%sCallback) error {\n", n, vt)
		p("\treturn builder.registrations.%s(builder.meter, builder.%s, cb)\n}\n\n", vt, n)
	}
	p("// Shutdown unregisters the callbacks of observable instruments.\nfunc (builder *TelemetryBuilder) Shutdown() {\n")
	p("\tbuilder.registrations.Unregister()\n}\n\n")
	p("// NewTelemetryBuilder registers every instrument of the builder.\n")
	p("func NewTelemetryBuilder(settings component.TelemetrySettings, options ...TelemetryBuilderOption) (*TelemetryBuilder, error) {\n")
	p("\tbuilder := TelemetryBuilder{}\n\ttelemetrygen.Apply(&builder, options)\n\tbuilder.meter = Meter(settings)\n\tvar err, errs error\n")
	for _, key := range keys {
		m := md.Telemetry.Metrics[key]
		kind, _ := m.instrument()
		p("\tbuilder.%s, err = builder.meter.%s(\n\t\t%q,\n\t\tmetric.WithDescription(%q),\n\t\tmetric.WithUnit(%q),\n", FieldName(key), kind, "otelcol_"+key, m.Description, m.Unit)
		if m.Histogram != nil && len(m.Histogram.BucketBoundaries) > 0 {
			bs := make([]string, len(m.Histogram.BucketBoundaries))
			for i, v := range m.Histogram.BucketBoundaries {
				bs[i] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			p("\t\tmetric.WithExplicitBucketBoundaries([]float64{%s}...),\n", strings.Join(bs, ", "))
		}
		p("\t)\n\terrs = errors.Join(errs, err)\n")
	}
	p("\treturn &builder, errs\n}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated telemetry does not format: %w", err)
	}
	return src, nil
}
