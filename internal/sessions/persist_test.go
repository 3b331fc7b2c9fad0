package sessions

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sessions kept across a restart (JSON, as storage keeps them): a session
// scored before the restart is scored again, with every turn, when a turn
// comes after it; a pending one stays pending; the order of activity holds.
func TestExportImportAcrossRestart(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Idle = time.Minute
	s := NewStore(cfg, 0)
	s.Record(t0, turnCase("svc", "a", 1, false), t0, res("svc"))
	s.Record(t0, turnCase("svc", "a", 2, false), t0.Add(time.Second), res("svc"))
	require.Len(t, s.Due(t0.Add(time.Minute)), 1)                                   // a scored
	s.Record(t0.Add(2*time.Minute), turnCase("svc", "b", 1, false), t0, res("svc")) // b pending

	b, err := json.Marshal(s.Export())
	require.NoError(t, err)
	var states []State
	require.NoError(t, json.Unmarshal(b, &states))

	s2 := NewStore(cfg, 0)
	assert.Zero(t, s2.Import(states))
	n, pending := s2.Len()
	assert.Equal(t, 2, n)
	assert.Equal(t, 1, pending, "b is still to be scored")
	due := s2.Due(t0.Add(3 * time.Minute))
	require.Len(t, due, 1)
	assert.Equal(t, "b", due[0].Key.Conversation)
	assert.Equal(t, "svc", due[0].Resource.Attributes().AsRaw()["service.name"])

	// a third turn of a after the restart: scored with all three turns
	s2.Record(t0.Add(4*time.Minute), turnCase("svc", "a", 3, false), t0.Add(2*time.Second), res("svc"))
	due = s2.Due(t0.Add(5 * time.Minute))
	require.Len(t, due, 1)
	require.Len(t, due[0].Turns, 3)
	assert.Equal(t, "question 1", due[0].Turns[0].Input)
	assert.JSONEq(t, `{"q":1}`, due[0].Turns[0].ToolCalls[0].RawArguments)

	// max_sessions holds on import: the least recently active are left out
	small := cfg
	small.MaxSessions = 1
	s3 := NewStore(small, 0)
	assert.Equal(t, 1, s3.Import(states))
	n, _ = s3.Len()
	assert.Equal(t, 1, n)
	require.Len(t, s3.Drain(), 1, "b, the most recent, is kept")
}
