// Package sessions keeps the turns of conversations that span several
// traces and turns them into session cases (docs/contract.md §14): a store of
// compact per-turn records keyed by service and conversation id, bounded by
// max_sessions and max_turns, and the evaluate_session span that carries a
// scored session's results. The `eval` processor and evalctl share it.
package sessions

import (
	"errors"
	"fmt"
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
	// MaxTurnBytes bounds the text one turn keeps (input, output, tool
	// calls' names, arguments, results and errors, in that order): once it
	// is spent, the remaining texts are cut short or left empty.
	MaxTurnBytes int `mapstructure:"max_turn_bytes"`

	_ struct{}
}

// DefaultMaxTurnBytes is the default of max_turn_bytes (64 KiB).
const DefaultMaxTurnBytes = 64 << 10

// minTurnBytes is the smallest max_turn_bytes accepted.
const minTurnBytes = 1024

// NewDefaultConfig returns the defaults of docs/contract.md §14.
func NewDefaultConfig() Config {
	return Config{Idle: 5 * time.Minute, MaxSessions: 10000, MaxTurns: 100, MaxTurnBytes: DefaultMaxTurnBytes}
}

// Validate checks the block, naming what is wrong.
func (c *Config) Validate() error {
	var turnBytes error
	if c.MaxTurnBytes != 0 && c.MaxTurnBytes < minTurnBytes {
		turnBytes = fmt.Errorf("sessions: max_turn_bytes: %d must be at least %d (0 means %d)", c.MaxTurnBytes, minTurnBytes, DefaultMaxTurnBytes)
	}
	return errors.Join(
		configerr.Positive("sessions: idle", c.Idle),
		configerr.Positive("sessions: max_sessions", c.MaxSessions),
		configerr.Positive("sessions: max_turns", c.MaxTurns),
		turnBytes,
	)
}

func (c *Config) maxTurnBytes() int {
	if c.MaxTurnBytes <= 0 {
		return DefaultMaxTurnBytes
	}
	return c.MaxTurnBytes
}

// TickInterval is how often a collector looks for idle sessions: a tenth of
// idle, within [10ms, 1s]. A session is scored at most one interval late.
func (c *Config) TickInterval() time.Duration {
	return min(max(c.Idle/10, 10*time.Millisecond), time.Second)
}
