package evaluators

import (
	"math"
	"strings"
	"testing"
)

// NaN (YAML `.nan`) compared false with both bounds and passed Validate: a
// NaN threshold failed every score, a NaN sample_rate sampled at random.
func TestConfigValidationRejectsNaN(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Type: "tool_error", Threshold: &nan}, "threshold"},
		{Config{Type: "tool_error", SampleRate: &nan}, "sample_rate"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s NaN: err = %v", tc.want, err)
		}
	}
}
