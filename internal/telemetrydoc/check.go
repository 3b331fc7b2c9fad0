package telemetrydoc

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// ExtraFile is the hand-written prose mdgen appends to documentation.md.
const ExtraFile = "documentation_extra.md"

// CheckDocumentation returns an error when dir's documentation.md or
// telemetry builder is not what mdgen generates from dir/metadata.yaml.
func CheckDocumentation(dir string) error {
	return CheckGenerated(dir, filepath.Join(dir, "metadata.yaml"))
}

// Compare returns one line per disagreement between the attributes a
// component recorded and md: an instrument md does not declare, an
// attribute recorded that md does not declare for that instrument and,
// when exercised is set, a declared attribute never recorded. (Names,
// units, descriptions and types need no check: the instruments are
// registered by the builder generated from md.)
func Compare(md *Metadata, insts []Instrument, exercised bool) []string {
	var out []string
	for _, i := range insts {
		m, ok := md.Telemetry.Metrics[trimPrefix(i.Name)]
		if !ok {
			out = append(out, fmt.Sprintf("%s: registered, not declared in metadata.yaml", i.Name))
			continue
		}
		declared := map[string]bool{}
		for _, a := range m.Attributes {
			declared[md.Attributes[a].Name(a)] = true
		}
		for _, a := range slices.Sorted(maps.Keys(i.Attributes)) {
			if !declared[a] {
				out = append(out, fmt.Sprintf("%s: records attribute %q, which metadata.yaml does not declare for it", i.Name, a))
			}
		}
		if exercised {
			for _, a := range slices.Sorted(maps.Keys(declared)) {
				if !i.Attributes[a] {
					out = append(out, fmt.Sprintf("%s: metadata.yaml declares attribute %q, never recorded", i.Name, a))
				}
			}
		}
	}
	return out
}

// CheckRecorded compares with dir/metadata.yaml (Compare, exercised
// false) the instruments rec recorded whose names start with prefix: an
// error listing the disagreements, one a line, or nil.
func CheckRecorded(dir string, rec *Recorder, prefix string) error {
	md, err := Load(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		return err
	}
	var insts []Instrument
	for _, i := range rec.Instruments() {
		if strings.HasPrefix(i.Name, prefix) {
			insts = append(insts, i)
		}
	}
	if problems := Compare(md, insts, false); len(problems) > 0 {
		return fmt.Errorf("metadata.yaml and the registered instruments disagree:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

func trimPrefix(name string) string {
	const p = "otelcol_"
	if len(name) > len(p) && name[:len(p)] == p {
		return name[len(p):]
	}
	return "\x00" + name // never a key
}
