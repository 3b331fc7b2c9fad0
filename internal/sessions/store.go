package sessions

import (
	"container/list"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

const (
	// MaxToolCallsPerTurn bounds the tool calls a turn keeps (the first
	// ones); a turn with more is recorded with a note in Snapshot.Clipped.
	MaxToolCallsPerTurn = 128
	// maxNameBytes bounds names and ids (tool names, call ids, agent names).
	maxNameBytes = 256
	// minClipBytes: a text the turn's budget would cut below this is left
	// empty rather than kept as a stub.
	minClipBytes = 32
)

// Key identifies a session: a conversation id within one service.
type Key struct {
	Service      string
	Conversation string
}

// Store holds the sessions' turns. It is safe for concurrent use; it keeps
// no span: each turn is copied into a compact record when recorded.
type Store struct {
	cfg Config
	// limit is the judges' max_field_bytes: no field of a turn is kept
	// longer than a judge prompt would show it.
	limit int

	mu sync.Mutex
	m  map[Key]*session
	// lru holds every session, least recently active first; pending those
	// with turns not yet scored, in the same order.
	lru, pending list.List
	stats        Stats
}

// Stats are the store's counts since it was made.
type Stats struct {
	Turns        int64 // turns recorded
	TurnsDropped int64 // oldest turns dropped beyond max_turns
	Overflow     int64 // sessions scored early (or forgotten) beyond max_sessions
}

type session struct {
	key      Key
	turns    []adapter.Turn
	resource pcommon.Resource // of the turn that arrived last
	agent    string
	active   time.Time
	clipped  int // turns whose fields or calls were cut to the bounds
	dropped  int // turns dropped beyond max_turns
	lruEl    *list.Element
	pendEl   *list.Element
}

// NewStore returns an empty store; fieldLimit is the judges' max_field_bytes
// (0 means the judge default, 8192).
func NewStore(cfg Config, fieldLimit int) *Store {
	if fieldLimit <= 0 {
		fieldLimit = 8192
	}
	return &Store{cfg: cfg, limit: fieldLimit, m: map[Key]*session{}}
}

// TurnID names a turn: its case span.
type TurnID struct {
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
}

// Snapshot is a session's turns at the moment it is taken for scoring.
type Snapshot struct {
	Key       Key
	Turns     []adapter.Turn
	Resource  pcommon.Resource
	AgentName string
	// Active is when the session's last turn taken here arrived.
	Active time.Time
	// Clipped counts turns cut to the field or tool-call bounds; Dropped the
	// oldest turns no longer kept (max_turns).
	Clipped, Dropped int
}

// Recorded is what Record did.
type Recorded struct {
	// OK is false when the case has no conversation id (it is no turn).
	OK bool
	// Dropped is how many of the session's oldest turns max_turns pushed out.
	Dropped int
	// Evicted is set when the store then held more than max_sessions and
	// the least recently active session, taken out, had turns not yet
	// scored: score it now. (One whose turns were all scored is forgotten.)
	Evicted *Snapshot
	// Key and Turn are the session and the turn as kept (for a durable
	// copy); DroppedTurns the turns max_turns pushed out; Removed the turns
	// of the session that left the store beyond max_sessions (evicted or
	// forgotten).
	Key          Key
	Turn         adapter.Turn
	DroppedTurns []TurnID
	Removed      []TurnID
}

// Record adds the turn of agent case c (its span started at start; res is
// its span's resource, copied) to its session at time now.
func (s *Store) Record(now time.Time, c *adapter.Case, start time.Time, res pcommon.Resource) (r Recorded) {
	if c.ConversationID == "" {
		return r
	}
	r.OK = true
	t, clipped := s.compact(c, start)
	key := Key{Service: c.ServiceName, Conversation: c.ConversationID}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[key]
	if ss == nil {
		ss = &session{key: Key{Service: strings.Clone(key.Service), Conversation: strings.Clone(key.Conversation)},
			resource: pcommon.NewResource()}
		s.m[ss.key] = ss
		ss.lruEl = s.lru.PushBack(ss)
	} else {
		s.lru.MoveToBack(ss.lruEl)
	}
	r.Key, r.Turn = ss.key, t
	r.DroppedTurns = ss.add(t, s.cfg.MaxTurns)
	r.Dropped = len(r.DroppedTurns)
	s.stats.TurnsDropped += int64(r.Dropped)
	if clipped {
		ss.clipped++
	}
	if t.AgentName != "" {
		ss.agent = t.AgentName
	}
	res.CopyTo(ss.resource)
	ss.active = now
	if ss.pendEl == nil {
		ss.pendEl = s.pending.PushBack(ss)
	} else {
		s.pending.MoveToBack(ss.pendEl)
	}
	s.stats.Turns++
	if len(s.m) > s.cfg.MaxSessions {
		old := s.lru.Front().Value.(*session)
		s.stats.Overflow++
		r.Removed = make([]TurnID, len(old.turns))
		for i := range old.turns {
			r.Removed[i] = TurnID{TraceID: old.turns[i].TraceID, SpanID: old.turns[i].SpanID}
		}
		if old.pendEl != nil {
			sn := s.take(old)
			r.Evicted = &sn
		}
		s.lru.Remove(old.lruEl)
		delete(s.m, old.key)
	}
	return r
}

// add inserts t in start order; a turn whose case span is already there
// (a resent trace) replaces it. It returns the oldest turns that went
// beyond maxTurns.
func (ss *session) add(t adapter.Turn, maxTurns int) []TurnID {
	for i := range ss.turns {
		if ss.turns[i].SpanID == t.SpanID && ss.turns[i].TraceID == t.TraceID {
			ss.turns[i] = t
			return nil
		}
	}
	i := len(ss.turns)
	for i > 0 && ss.turns[i-1].Time.After(t.Time) {
		i--
	}
	ss.turns = append(ss.turns, adapter.Turn{})
	copy(ss.turns[i+1:], ss.turns[i:])
	ss.turns[i] = t
	if over := len(ss.turns) - maxTurns; over > 0 {
		gone := make([]TurnID, over)
		for i := range gone {
			gone[i] = TurnID{TraceID: ss.turns[i].TraceID, SpanID: ss.turns[i].SpanID}
		}
		clear(ss.turns[:over])
		ss.turns = append(ss.turns[:0], ss.turns[over:]...)
		ss.dropped += over
		return gone
	}
	return nil
}

// take snapshots ss and marks its turns scored. Caller holds mu.
func (s *Store) take(ss *session) Snapshot {
	s.pending.Remove(ss.pendEl)
	ss.pendEl = nil
	res := pcommon.NewResource()
	ss.resource.CopyTo(res)
	return Snapshot{Key: ss.key, Turns: append([]adapter.Turn(nil), ss.turns...), Resource: res,
		AgentName: ss.agent, Active: ss.active, Clipped: ss.clipped, Dropped: ss.dropped}
}

// Due takes the sessions with unscored turns whose last turn arrived at
// least idle before now; they stay in the store, and a later turn makes
// them due again after the next idle period.
func (s *Store) Due(now time.Time) []Snapshot { return s.DueN(now, -1) }

// DueN is Due taking at most n sessions (n < 0: all); the others stay
// pending, due at the next call.
func (s *Store) DueN(now time.Time, n int) []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Snapshot
	for e := s.pending.Front(); e != nil && n != 0; e = s.pending.Front() {
		n--
		ss := e.Value.(*session)
		if now.Sub(ss.active) < s.cfg.Idle {
			break
		}
		out = append(out, s.take(ss))
	}
	return out
}

// Drain takes every session with unscored turns, idle or not (shutdown,
// and evalctl after its inputs).
func (s *Store) Drain() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Snapshot
	for e := s.pending.Front(); e != nil; e = s.pending.Front() {
		out = append(out, s.take(e.Value.(*session)))
	}
	return out
}

// Len is the number of sessions held; Pending those with unscored turns.
func (s *Store) Len() (sessions, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m), s.pending.Len()
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// compact copies what a session evaluator reads from c into a turn of its
// own memory (strings.Clone: a substring would keep a whole attribute value
// alive), each field clipped to the judges' field limit, tool arguments kept
// as JSON text. clipped reports whether anything was cut.
func (s *Store) compact(c *adapter.Case, start time.Time) (adapter.Turn, bool) {
	clipped := false
	// budget is what is left of max_turn_bytes. Names and ids are counted
	// but always kept (to maxNameBytes): an evaluator of tool calls needs
	// them; texts get what is left.
	budget := s.cfg.maxTurnBytes()
	keep := func(v string) string {
		budget -= len(v)
		return strings.Clone(v)
	}
	clipTo := func(v string, n int) string {
		if len(v) <= n {
			return keep(v)
		}
		clipped = true
		if n < minClipBytes {
			return ""
		}
		return keep(textutil.Clip(v, n))
	}
	name := func(v string) string { return clipTo(v, maxNameBytes) }
	text := func(v string) string { return clipTo(v, min(s.limit, max(budget, 0))) }
	t := adapter.Turn{
		TraceID: c.TraceID, SpanID: c.SpanID, Time: start,
		Input: text(c.Input), Output: text(c.Output),
		Usage: c.Usage, Latency: c.Latency, LLMCalls: c.LLMCalls,
		AgentName: name(c.AgentName), Model: name(c.Model),
	}
	calls := c.ToolCalls
	if len(calls) > MaxToolCallsPerTurn {
		calls, clipped = calls[:MaxToolCallsPerTurn], true
	}
	if len(calls) > 0 {
		t.ToolCalls = make([]adapter.ToolCall, len(calls))
	}
	for i, tc := range calls {
		// As found it is usually the JSON text already (cheaper to check
		// than to encode again); decoded from another form (Python
		// kwargs), the arguments are encoded.
		raw := tc.RawArguments
		if tc.Arguments != nil && (raw == "" || !json.Valid([]byte(raw))) {
			if b, err := json.Marshal(tc.Arguments); err == nil {
				raw = string(b)
			}
		}
		t.ToolCalls[i] = adapter.ToolCall{
			Name: name(tc.Name), ID: name(tc.ID), RawArguments: text(raw),
			Result: text(tc.Result), HasResult: tc.HasResult,
			Errored: tc.Errored, ErrorMessage: text(tc.ErrorMessage),
			Duration: tc.Duration, SpanID: tc.SpanID,
		}
	}
	return t, clipped
}

// Case builds the session case the `case: session` evaluators get: the
// turns in order; Messages the conversation (each turn's user input, then
// its output: a turn's own history, which many instrumentations repeat in
// every call, is not read, so nothing is said twice); Input the users'
// messages in order and Output the last turn's; ToolCalls every turn's
// calls in order (arguments decoded back from their JSON text); Usage and
// Latency the sums. traceID and spanID are the evaluate_session span's.
func (sn *Snapshot) Case(traceID pcommon.TraceID, spanID pcommon.SpanID) *adapter.Case {
	c := &adapter.Case{
		Level: adapter.LevelSession, TraceID: traceID, SpanID: spanID, SpanName: SpanName,
		ServiceName: sn.Key.Service, ConversationID: sn.Key.Conversation, AgentName: sn.AgentName,
		Turns: sn.Turns,
	}
	var inputs []string
	for i := range sn.Turns {
		t := &sn.Turns[i]
		c.Messages = appendMessage(c.Messages, "user", t.Input)
		c.Messages = appendMessage(c.Messages, "assistant", t.Output)
		if strings.TrimSpace(t.Input) != "" {
			inputs = append(inputs, t.Input)
		}
		if t.Output != "" {
			c.Output = t.Output
		}
		if t.Model != "" {
			c.Model = t.Model
		}
		for _, tc := range t.ToolCalls {
			if tc.RawArguments != "" {
				var args map[string]any
				if json.Unmarshal([]byte(tc.RawArguments), &args) == nil {
					tc.Arguments = args
				}
			}
			c.ToolCalls = append(c.ToolCalls, tc)
		}
		addUsage(&c.Usage, t.Usage)
		c.Latency += t.Latency
	}
	c.Input = strings.Join(inputs, "\n")
	return c
}

// appendMessage adds a message unless it is empty or repeats the message
// just before it (a turn retried, or an instrumentation that reports the
// same user message on two traces).
func appendMessage(msgs []adapter.Message, role, content string) []adapter.Message {
	if strings.TrimSpace(content) == "" {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == role && msgs[n-1].Content == content {
		return msgs
	}
	return append(msgs, adapter.Message{Role: role, Content: content})
}

func addUsage(sum *adapter.Usage, u adapter.Usage) {
	if u.HasInputTokens {
		sum.InputTokens += u.InputTokens
		sum.HasInputTokens = true
	}
	if u.HasOutputTokens {
		sum.OutputTokens += u.OutputTokens
		sum.HasOutputTokens = true
	}
	if total, ok := u.Total(); ok {
		sum.TotalTokens += total
		sum.HasTotalTokens = true
	}
}
