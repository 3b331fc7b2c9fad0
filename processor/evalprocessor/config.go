package evalprocessor

import (
	"time"

	"github.com/evalbridge/evalbridge/internal/engine"
)

// Config is the `processors: eval:` block. It is exactly the engine's
// configuration (docs/contract.md §5), squashed, so the same YAML serves the
// processor and `evalctl --config`.
type Config struct {
	engine.Config `mapstructure:",squash"`

	_ struct{}
}

func createDefaultConfig() *Config {
	return &Config{Config: engine.NewDefaultConfig()}
}

// Validate checks what only the processor needs. The engine's own checks
// (wait, root_grace, max_traces, timeout, workers, evaluators, `when`) run on
// the embedded engine.Config: confmap.Validate visits it as a field, so
// repeating them here would report every problem twice.
func (c *Config) Validate() error {
	return nil
}

// tickInterval is how often held traces are checked for release: a tenth
// of the shortest grace, within [1ms, 1s]. A trace is released at most one
// interval after its time has come.
func (c *Config) tickInterval() time.Duration {
	d := c.Wait
	if c.RootGrace > 0 && c.RootGrace < d {
		d = c.RootGrace
	}
	d /= 10
	switch {
	case d < time.Millisecond:
		d = time.Millisecond
	case d > time.Second:
		d = time.Second
	}
	return d
}
