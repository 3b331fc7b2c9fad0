// Command mdgen writes documentation.md from metadata.yaml (and the
// hand-written documentation_extra.md, when present) in the current
// directory. Components run it with go generate.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

func main() {
	md, err := telemetrydoc.Load("metadata.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mdgen:", err)
		os.Exit(1)
	}
	extra, err := os.ReadFile(telemetrydoc.ExtraFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "mdgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("documentation.md", telemetrydoc.Render(md, extra), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "mdgen:", err)
		os.Exit(1)
	}
}
