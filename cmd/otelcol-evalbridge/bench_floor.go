//go:build floor

package main

import (
	"go.opentelemetry.io/collector/otelcol"

	"github.com/evalbridge/evalbridge/bench/resultfloor"
)

// The floor build tag adds the benchmark-only resultfloor processor, for
// `evalbridge-loadgen cpu -floor`: what exporting stream mode's result
// spans costs end to end, with nothing kept or scored
// (docs/performance.md). The distribution does not ship it.
func init() {
	benchComponents = append(benchComponents, func(f *otelcol.Factories) {
		rf := resultfloor.NewFactory()
		f.Processors[rf.Type()] = rf
		f.ProcessorModules[rf.Type()] = "github.com/evalbridge/evalbridge/bench/resultfloor"
	})
}
