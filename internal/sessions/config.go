// Package sessions keeps the turns of conversations that span several
// traces and turns them into session cases (docs/contract.md §14): a store of
// compact per-turn records keyed by service and conversation id, bounded by
// max_sessions and max_turns, and the evaluate_session span that carries a
// scored session's results. The `eval` processor and evalctl share it.
package sessions

import (
	"errors"
	"time"

	"github.com/evalbridge/evalbridge/internal/configerr"
)

// Config is the `sessions:` block of the engine config.
type Config struct {
	// Idle is how long after its last turn arrived a session is scored.
	Idle time.Duration `mapstructure:"idle"`
	// MaxSessions bounds the sessions kept; beyond it the least recently
	// active one is scored early (when it has unscored turns) and forgotten.
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxTurns is how many of a session's most recent turns are kept.
	MaxTurns int `mapstructure:"max_turns"`

	_ struct{}
}

// NewDefaultConfig returns the defaults of docs/contract.md §14.
func NewDefaultConfig() Config {
	return Config{Idle: 5 * time.Minute, MaxSessions: 10000, MaxTurns: 100}
}

// Validate checks the block, naming what is wrong.
func (c *Config) Validate() error {
	return errors.Join(
		configerr.Positive("sessions: idle", c.Idle),
		configerr.Positive("sessions: max_sessions", c.MaxSessions),
		configerr.Positive("sessions: max_turns", c.MaxTurns),
	)
}

// TickInterval is how often a collector looks for idle sessions: a tenth of
// idle, within [10ms, 1s]. A session is scored at most one interval late.
func (c *Config) TickInterval() time.Duration {
	return min(max(c.Idle/10, 10*time.Millisecond), time.Second)
}
