package telemetrydoc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// ExtraFile is the hand-written prose mdgen appends to documentation.md.
const ExtraFile = "documentation_extra.md"

// CheckDocumentation returns an error when dir/documentation.md is not
// what mdgen renders from dir/metadata.yaml and dir/documentation_extra.md.
func CheckDocumentation(dir string) error {
	md, err := Load(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		return err
	}
	extra, err := os.ReadFile(filepath.Join(dir, ExtraFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have, err := os.ReadFile(filepath.Join(dir, "documentation.md"))
	if err != nil {
		return err
	}
	if want := Render(md, extra); !bytes.Equal(have, want) {
		return errors.New("documentation.md differs from what metadata.yaml generates: run `go generate` in " + dir)
	}
	return nil
}

// Compare returns one line per disagreement between the instruments a
// component registered (and the attributes it recorded) and md: a
// registered instrument md does not declare, or declares otherwise (name
// `otelcol_` + key, unit, description, kind, value type, monotonicity,
// buckets, attributes recorded but not declared), and a declared
// instrument, not optional, that was not registered. When exercised is
// set, a declared attribute never recorded is one too.
func Compare(md *Metadata, insts []Instrument, exercised bool) []string {
	var out []string
	byName := map[string]Instrument{}
	for _, i := range insts {
		byName[i.Name] = i
	}
	for _, key := range md.MetricKeys() {
		m := md.Telemetry.Metrics[key]
		name := "otelcol_" + key
		i, ok := byName[name]
		if !ok {
			if !m.Optional {
				out = append(out, fmt.Sprintf("%s: declared in metadata.yaml, not registered", name))
			}
			continue
		}
		delete(byName, name)
		if i.Unit != m.Unit {
			out = append(out, fmt.Sprintf("%s: unit %q, metadata.yaml says %q", name, i.Unit, m.Unit))
		}
		if i.Description != m.Description {
			out = append(out, fmt.Sprintf("%s: description %q, metadata.yaml says %q", name, i.Description, m.Description))
		}
		kind, vt, mono, buckets := "", "", false, []float64(nil)
		switch {
		case m.Sum != nil:
			kind, vt, mono = "sum", m.Sum.ValueType, m.Sum.Monotonic
		case m.Gauge != nil:
			kind, vt = "gauge", m.Gauge.ValueType
		case m.Histogram != nil:
			kind, vt, buckets = "histogram", m.Histogram.ValueType, m.Histogram.BucketBoundaries
		}
		if i.Kind != kind || i.ValueType != vt || i.Monotonic != mono {
			out = append(out, fmt.Sprintf("%s: a %s %s (monotonic %t), metadata.yaml says a %s %s (monotonic %t)",
				name, i.ValueType, i.Kind, i.Monotonic, vt, kind, mono))
		}
		if !slices.Equal(i.Buckets, buckets) {
			out = append(out, fmt.Sprintf("%s: buckets %v, metadata.yaml says %v", name, i.Buckets, buckets))
		}
		declared := map[string]bool{}
		for _, a := range m.Attributes {
			declared[md.Attributes[a].Name(a)] = true
		}
		for _, a := range slices.Sorted(maps.Keys(i.Attributes)) {
			if !declared[a] {
				out = append(out, fmt.Sprintf("%s: records attribute %q, which metadata.yaml does not declare for it", name, a))
			}
		}
		if exercised {
			for _, a := range slices.Sorted(maps.Keys(declared)) {
				if !i.Attributes[a] {
					out = append(out, fmt.Sprintf("%s: metadata.yaml declares attribute %q, never recorded", name, a))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, fmt.Sprintf("%s: registered, not declared in metadata.yaml", name))
	}
	return out
}
