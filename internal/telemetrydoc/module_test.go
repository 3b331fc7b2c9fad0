package telemetrydoc

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The module's telemetry is generated: every component's documentation.md
// and telemetry builder, and the builder of each package a metadata.yaml
// names in `registered_by`, are what go generate makes of the
// metadata.yaml now; no other Go file registers an instrument; units are
// singular ({span}, not {spans}).
func TestModuleTelemetryIsGenerated(t *testing.T) {
	const root = "../.."
	directive := regexp.MustCompile(`(?m)^//go:generate go run \S*telemetrydoc/mdgen(?: -metadata (\S+))?\s*$`)
	byHand := regexp.MustCompile(`\.(Int64|Float64)(Counter|UpDownCounter|Histogram|Gauge|ObservableCounter|ObservableUpDownCounter|ObservableGauge)\(`)
	generates := map[string]string{} // package dir -> the metadata.yaml it generates from (both from root)
	var components []string
	err := WalkModule(root, func(path string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.Name() == "metadata.yaml":
			components = append(components, filepath.Dir(rel))
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range directive.FindAllStringSubmatch(string(src), -1) {
				md := "metadata.yaml"
				if m[1] != "" {
					md = m[1]
				}
				generates[filepath.Dir(rel)] = filepath.Clean(filepath.Join(filepath.Dir(rel), md))
			}
			if d.Name() != "generated_telemetry.go" && !strings.HasPrefix(rel, filepath.Join("internal", "telemetrydoc")) &&
				byHand.Match(src) {
				t.Errorf("%s registers an instrument by hand: declare it in metadata.yaml and use the generated builder", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(components) == 0 {
		t.Fatal("no metadata.yaml found: the walk is broken")
	}
	for _, dir := range components {
		mdPath := filepath.Join(dir, "metadata.yaml")
		if generates[dir] != mdPath {
			t.Errorf("%s: no `//go:generate go run .../internal/telemetrydoc/mdgen` in its package", mdPath)
		}
		md, err := Load(filepath.Join(root, mdPath))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, key := range md.MetricKeys() {
			m := md.Telemetry.Metrics[key]
			if u := m.Unit; strings.HasPrefix(u, "{") && strings.HasSuffix(u, "s}") {
				t.Errorf("%s: %s: unit %s is plural (the collector's units are singular: {span}, {request})", mdPath, key, u)
			}
			if by := m.RegisteredBy; by != "" && generates[filepath.FromSlash(by)] != mdPath {
				t.Errorf("%s: %s is registered_by %s, which has no `//go:generate go run .../mdgen -metadata` of this file", mdPath, key, by)
			}
		}
	}
	for dir, md := range generates {
		if err := CheckGenerated(filepath.Join(root, dir), filepath.Join(root, md)); err != nil {
			t.Error(err)
		}
	}
}
