// Command mdgen writes, from a component's metadata.yaml, its
// documentation.md (with the hand-written documentation_extra.md, when
// present) and its telemetry builder, internal/metadata/generated_telemetry.go
// in the shape of mdatagen's. Run in the component's directory with go
// generate. A package that registers some of a component's metrics
// (`registered_by` in metadata.yaml) runs it with -metadata pointing at
// that file: it gets the builder of those metrics only.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

func main() {
	metadata := flag.String("metadata", "metadata.yaml", "the component's metadata.yaml")
	flag.Parse()
	files, err := telemetrydoc.Generate(".", *metadata)
	if err != nil {
		fail(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mdgen:", err)
	os.Exit(1)
}
