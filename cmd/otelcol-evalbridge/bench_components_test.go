package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

// groupbytrace is a benchmark's reference (the groupbytrace build tag), not
// part of the distribution: a plain build has exactly components.go's.
func TestPlainBuildHasNoBenchComponents(t *testing.T) {
	if addBenchComponents != nil {
		t.Skip("built with a benchmark tag")
	}
	want, err := components()
	require.NoError(t, err)
	got, err := factories()
	require.NoError(t, err)
	assert.Equal(t, len(want.Processors), len(got.Processors))
	assert.NotContains(t, got.Processors, component.MustNewType("groupbytrace"))
	assert.Contains(t, got.Processors, component.MustNewType("eval"))
}
