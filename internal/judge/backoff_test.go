package judge

import (
	"testing"
	"time"
)

// The backoff doubles per attempt, is spread by ±50 % (as configretry's
// default) and never exceeds max_backoff.
func TestBackoffJitter(t *testing.T) {
	r := RetryConfig{MaxAttempts: 5, InitialBackoff: time.Second, MaxBackoff: 3 * time.Second}
	defer func(j func() float64) { jitter = j }(jitter)
	for _, tc := range []struct {
		j       float64
		attempt int
		want    time.Duration
	}{
		{0, 1, 500 * time.Millisecond},
		{0.5, 1, time.Second},
		{0.999999, 1, 1499999 * time.Microsecond},
		{0, 2, time.Second},
		{0.5, 2, 2 * time.Second},
		{0, 3, 1500 * time.Millisecond}, // 4s capped at 3s, then spread
		{0.9, 3, 3 * time.Second},       // never above max_backoff
	} {
		jitter = func() float64 { return tc.j }
		got := r.Backoff(tc.attempt)
		if d := got - tc.want; d > time.Microsecond || d < -time.Microsecond {
			t.Errorf("jitter %v attempt %d: %v, want %v", tc.j, tc.attempt, got, tc.want)
		}
	}
	jitter = defaultJitter
	seen := map[time.Duration]bool{}
	for i := 0; i < 20; i++ {
		seen[r.Backoff(1)] = true
	}
	if len(seen) < 2 {
		t.Errorf("the backoff is not randomised: %v", seen)
	}
}
