// Package telemetrydoc keeps a component's telemetry in one place: its
// metadata.yaml (in the shape the collector's mdatagen reads) is the
// source; documentation.md is rendered from it (go generate runs ./mdgen),
// and a test of the component checks every instrument it registers against
// it (Check).
package telemetrydoc

import (
	"fmt"
	"os"
	"sort"

	"gopkg.in/yaml.v3"
)

// Metadata is the part of a metadata.yaml this package reads.
type Metadata struct {
	Type      string `yaml:"type"`
	Telemetry struct {
		Metrics map[string]Metric `yaml:"metrics"`
	} `yaml:"telemetry"`
	Attributes map[string]Attribute `yaml:"attributes"`
}

// Metric is one instrument. Its name is `otelcol_` + its key.
type Metric struct {
	Enabled     bool   `yaml:"enabled"`
	Description string `yaml:"description"`
	// ExtendedDocumentation is more prose for documentation.md (the
	// instrument's description stays short).
	ExtendedDocumentation string     `yaml:"extended_documentation"`
	Unit                  string     `yaml:"unit"`
	Attributes            []string   `yaml:"attributes"`
	Sum                   *Sum       `yaml:"sum"`
	Gauge                 *Gauge     `yaml:"gauge"`
	Histogram             *Histogram `yaml:"histogram"`
	// Optional says the component records the instrument only in some
	// configurations (e.g. a judge with a budget, sessions enabled).
	Optional bool `yaml:"optional"`
	// RegisteredBy is the package (a path from the module's root) that
	// registers the instrument when it is not the component's own: mdgen
	// run there (`-metadata`) generates its telemetry builder, with the
	// component's scope. Not an mdatagen field.
	RegisteredBy string `yaml:"registered_by"`
}

// Sum is a counter (monotonic) or an up-down counter.
type Sum struct {
	ValueType string `yaml:"value_type"`
	Monotonic bool   `yaml:"monotonic"`
	// Async makes it an observable counter, reported by callbacks.
	Async bool `yaml:"async"`
}

// Gauge is an observable gauge.
type Gauge struct {
	ValueType string `yaml:"value_type"`
	// Async makes it an observable gauge, reported by callbacks.
	Async bool `yaml:"async"`
}

// Histogram is a histogram with explicit bucket boundaries.
type Histogram struct {
	ValueType        string    `yaml:"value_type"`
	BucketBoundaries []float64 `yaml:"bucket_boundaries"`
}

// Attribute is a metric attribute; NameOverride is its name when the key
// only tells attributes of the same name apart (different enums).
type Attribute struct {
	Description  string   `yaml:"description"`
	NameOverride string   `yaml:"name_override"`
	Type         string   `yaml:"type"`
	Enum         []string `yaml:"enum"`
}

// Name is the attribute's name on the data points.
func (a Attribute) Name(key string) string {
	if a.NameOverride != "" {
		return a.NameOverride
	}
	return key
}

// Load reads and checks a metadata.yaml.
func Load(path string) (*Metadata, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var md Metadata
	dec := yaml.NewDecoder(bytesReader(raw))
	dec.KnownFields(false)
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, key := range md.MetricKeys() {
		m := md.Telemetry.Metrics[key]
		n := 0
		for _, set := range []bool{m.Sum != nil, m.Gauge != nil, m.Histogram != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("%s: metric %s: want exactly one of sum, gauge, histogram", path, key)
		}
		if vt := m.valueType(); vt != "int" && vt != "double" {
			return nil, fmt.Errorf("%s: metric %s: value_type %q: want int or double", path, key, vt)
		}
		if m.Description == "" || m.Unit == "" {
			return nil, fmt.Errorf("%s: metric %s: description and unit are required", path, key)
		}
		// The SDK's default buckets (0, 5, 10 … 10000) suit milliseconds: a
		// histogram in seconds on them puts every call in one bucket.
		if m.Histogram != nil && len(m.Histogram.BucketBoundaries) == 0 {
			return nil, fmt.Errorf("%s: metric %s: a histogram needs bucket_boundaries that resolve its range (the SDK default suits milliseconds)", path, key)
		}
		for _, a := range m.Attributes {
			if _, ok := md.Attributes[a]; !ok {
				return nil, fmt.Errorf("%s: metric %s: attribute %s is not declared under attributes", path, key, a)
			}
		}
	}
	return &md, nil
}

// MetricKeys returns the metric keys in name order.
func (md *Metadata) MetricKeys() []string {
	keys := make([]string, 0, len(md.Telemetry.Metrics))
	for k := range md.Telemetry.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
