package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

// groupbytrace and resultfloor are benchmarks' references (the groupbytrace
// and floor build tags), not part of the distribution: a plain build has
// exactly components.go's.
func TestPlainBuildHasNoBenchComponents(t *testing.T) {
	if len(benchComponents) > 0 {
		t.Skip("built with a benchmark tag")
	}
	want, err := components()
	require.NoError(t, err)
	got, err := factories()
	require.NoError(t, err)
	assert.Equal(t, len(want.Processors), len(got.Processors))
	assert.NotContains(t, got.Processors, component.MustNewType("groupbytrace"))
	assert.NotContains(t, got.Processors, component.MustNewType("resultfloor"))
	assert.Contains(t, got.Processors, component.MustNewType("eval"))
}
