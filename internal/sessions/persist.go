package sessions

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
)

// State is one session as kept across a restart (the processor's
// `storage:`): its turns, so that a turn after the restart is scored with
// the whole conversation.
type State struct {
	Key      Key
	Turns    []adapter.Turn
	Resource map[string]any
	Agent    string
	Active   time.Time
	Clipped  int
	Dropped  int
	// Pending: the session has turns not scored yet.
	Pending bool
}

// Export returns every session, least recently active first.
func (s *Store) Export() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]State, 0, len(s.m))
	for e := s.lru.Front(); e != nil; e = e.Next() {
		ss := e.Value.(*session)
		out = append(out, State{Key: ss.key, Turns: ss.turns, Resource: ss.resource.Attributes().AsRaw(),
			Agent: ss.agent, Active: ss.active, Clipped: ss.clipped, Dropped: ss.dropped, Pending: ss.pendEl != nil})
	}
	return out
}

// Import adds the sessions an earlier run exported, in their order, as the
// least recently active ones; a session the store has already is kept as
// it is. Beyond max_sessions the oldest imported sessions are left out; it
// returns how many.
func (s *Store) Import(states []State) (left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if over := len(s.m) + len(states) - s.cfg.MaxSessions; over > 0 {
		left = min(over, len(states))
		states = states[left:]
	}
	for i := len(states) - 1; i >= 0; i-- { // pushed to the front: keep their order
		st := states[i]
		if _, ok := s.m[st.Key]; ok {
			continue
		}
		turns := st.Turns
		if over := len(turns) - s.cfg.MaxTurns; over > 0 {
			turns = turns[over:]
		}
		ss := &session{key: st.Key, turns: turns, resource: pcommon.NewResource(), agent: st.Agent,
			active: st.Active, clipped: st.Clipped, dropped: st.Dropped}
		_ = ss.resource.Attributes().FromRaw(st.Resource)
		ss.lruEl = s.lru.PushFront(ss)
		if st.Pending {
			ss.pendEl = s.pending.PushFront(ss)
		}
		s.m[st.Key] = ss
	}
	return left
}
