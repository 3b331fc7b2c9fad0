package evaluators

import (
	"fmt"
	"testing"
)

// A tally names at most max failing items, each named once, and its note
// is empty when every item passed.
func TestTally(t *testing.T) {
	all := tally{max: 2}
	named := 0
	for i := range 5 {
		all.add(i == 0, func() string { named++; return fmt.Sprint(i) })
	}
	if all.passed != 1 || named != 2 {
		t.Errorf("passed %d, named %d times; want 1 and 2", all.passed, named)
	}
	if got, want := all.note("not ok", "; "), "; not ok: 1; 2"; got != want {
		t.Errorf("note = %q, want %q", got, want)
	}
	none := tally{max: 2}
	none.add(true, nil)
	if got := none.note("not ok", ", "); got != "" {
		t.Errorf("note of an all-pass tally = %q", got)
	}
	if got, want := withReason("step 1 f", "invented"), "step 1 f (invented)"; got != want {
		t.Errorf("withReason = %q, want %q", got, want)
	}
	if got := withReason("turn 2", ""); got != "turn 2" {
		t.Errorf("withReason without a reason = %q", got)
	}
}
