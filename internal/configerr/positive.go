package configerr

import (
	"fmt"
	"time"
)

// Positive is the error for an option that must be above zero, naming it
// and its value (`max_traces: 0 must be positive`); nil when v is.
// errors.Join leaves the nils out.
func Positive[T int | int64 | time.Duration](option string, v T) error {
	if v > 0 {
		return nil
	}
	return fmt.Errorf("%s: %v must be positive", option, v)
}
