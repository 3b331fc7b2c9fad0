package procbench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/bench/resultfloor"
)

// The resultfloor processor (bench/resultfloor): each request goes on with
// the result span stream mode would send for each agent run in it, nothing
// kept or scored. Its cost is the least any stream mode adds in process.
func init() {
	newResultFloor = func(tb testing.TB, next consumer.Traces) processor.Traces {
		f := resultfloor.NewFactory()
		p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), next)
		require.NoError(tb, err)
		return p
	}
}
