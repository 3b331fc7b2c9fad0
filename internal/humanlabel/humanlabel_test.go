package humanlabel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The spellings people and SDKs send read as the mapping's labels; what the
// mapping does not know is no verdict.
func TestVerdict(t *testing.T) {
	m := Default()
	for label, want := range map[string]bool{"pass": true, "Thumbs_Up": true, " GOOD ": true, "fail": false, " thumbs_down\n": false, "Bad": false} {
		pass, ok := m.Verdict(label)
		assert.True(t, ok, label)
		assert.Equal(t, want, pass, label)
	}
	for _, label := range []string{"", "maybe", "thumbs up", "1"} {
		_, ok := m.Verdict(label)
		assert.False(t, ok, label)
	}
	pass, ok := NewMapping([]string{" Yes"}, []string{"NO"}).Verdict("no ")
	assert.True(t, ok)
	assert.False(t, pass)
}

func TestOverlap(t *testing.T) {
	both, blank := Overlap([]string{"yes", "ok"}, []string{" OK ", "no"})
	assert.Equal(t, []string{" OK "}, both)
	assert.False(t, blank)
	both, blank = Overlap([]string{"yes"}, []string{"  "})
	assert.Empty(t, both)
	assert.True(t, blank)
	both, blank = Overlap(DefaultPass, DefaultFail)
	assert.Empty(t, both)
	assert.False(t, blank)
}
