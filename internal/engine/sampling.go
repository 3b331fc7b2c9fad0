package engine

import "fmt"

// SamplingConfig is the `sampling:` block of the eval processor
// (docs/contract.md §19): the share of traces forwarded after scoring, by
// outcome. evalctl reads and ignores it (it forwards nothing).
type SamplingConfig struct {
	// Failed: traces with any failed, error or timeout result.
	Failed float64 `mapstructure:"failed"`
	// Passed: traces whose results all passed.
	Passed float64 `mapstructure:"passed"`
	// Unscored: held traces that got no result (no case, all skipped,
	// overflow, shutdown).
	Unscored float64 `mapstructure:"unscored"`

	_ struct{}
}

// NewDefaultSamplingConfig forwards everything.
func NewDefaultSamplingConfig() SamplingConfig {
	return SamplingConfig{Failed: 1, Passed: 1, Unscored: 1}
}

// All says every trace is forwarded.
func (c SamplingConfig) All() bool {
	return c.Failed >= 1 && c.Passed >= 1 && c.Unscored >= 1
}

// Validate checks every share is within [0, 1].
func (c *SamplingConfig) Validate() error {
	for _, s := range []struct {
		name string
		v    float64
	}{{"failed", c.Failed}, {"passed", c.Passed}, {"unscored", c.Unscored}} {
		if !(s.v >= 0 && s.v <= 1) {
			return fmt.Errorf("sampling: %s %v must be within [0, 1]", s.name, s.v)
		}
	}
	return nil
}
