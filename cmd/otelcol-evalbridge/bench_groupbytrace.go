//go:build groupbytrace

package main

import (
	groupbytraceprocessor "github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"go.opentelemetry.io/collector/otelcol"
)

// The groupbytrace build tag adds contrib's groupbytrace processor to the
// binary, for `evalbridge-loadgen cpu -groupbytrace`: a processor that only
// holds traces until they are complete is the reference for what holding
// costs end to end (docs/performance.md). The distribution does not ship it.
func init() {
	benchComponents = append(benchComponents, func(f *otelcol.Factories) {
		gbt := groupbytraceprocessor.NewFactory()
		f.Processors[gbt.Type()] = gbt
		f.ProcessorModules[gbt.Type()] = "github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor v0.165.1"
	})
}
