package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/evalbridge/evalbridge/adapter"
)

var t0 = time.Unix(1_700_000_000, 0)

func res(service string) pcommon.Resource {
	r := pcommon.NewResource()
	r.Attributes().PutStr("service.name", service)
	return r
}

// turnCase is the agent case of turn n of conversation conv; history
// repeats the earlier turns' messages, as many instrumentations do.
func turnCase(service, conv string, n byte, history bool) *adapter.Case {
	c := &adapter.Case{
		Level: adapter.LevelAgent, TraceID: pcommon.TraceID{n}, SpanID: pcommon.SpanID{n},
		ServiceName: service, ConversationID: conv, AgentName: "travel_agent",
		Input: "question " + string('0'+n), Output: "answer " + string('0'+n),
		ToolCalls: []adapter.ToolCall{{Name: "search", Arguments: map[string]any{"q": float64(n)}, Result: "ok", HasResult: true}},
		Usage:     adapter.Usage{InputTokens: 10, HasInputTokens: true, OutputTokens: 5, HasOutputTokens: true},
		Latency:   time.Second,
	}
	if history {
		for k := byte(1); k < n; k++ {
			c.Messages = append(c.Messages, adapter.Message{Role: "user", Content: "question " + string('0'+k)},
				adapter.Message{Role: "assistant", Content: "answer " + string('0'+k)})
		}
		c.Messages = append(c.Messages, adapter.Message{Role: "user", Content: c.Input})
	}
	return c
}

func TestStoreTurnsInOrderAndSessionCase(t *testing.T) {
	s := NewStore(NewDefaultConfig(), 0)
	// Turns arrive out of order (traces are released by their own clocks);
	// they are kept in start order.
	for _, n := range []byte{2, 1, 3} {
		r := s.Record(t0.Add(time.Duration(n)*time.Second), turnCase("svc", "c1", n, true), t0.Add(time.Duration(n)*time.Minute), res("svc"))
		require.True(t, r.OK)
		require.Nil(t, r.Evicted)
	}
	// A resent trace (same case span) replaces its turn.
	s.Record(t0.Add(4*time.Second), turnCase("svc", "c1", 2, true), t0.Add(2*time.Minute), res("svc"))
	// No conversation id: not a turn.
	require.False(t, s.Record(t0, turnCase("svc", "", 9, false), t0, res("svc")).OK)

	snaps := s.Drain()
	require.Len(t, snaps, 1)
	sn := snaps[0]
	require.Len(t, sn.Turns, 3)
	c := sn.Case(pcommon.TraceID{0xaa}, pcommon.SpanID{0xbb})
	assert.Equal(t, adapter.LevelSession, c.Level)
	assert.Equal(t, "c1", c.ConversationID)
	assert.Equal(t, "svc", c.ServiceName)
	// The conversation once, in turn order, though every turn repeated the
	// history in its own messages.
	var conv []string
	for _, m := range c.Messages {
		conv = append(conv, m.Role+": "+m.Content)
	}
	assert.Equal(t, []string{"user: question 1", "assistant: answer 1", "user: question 2", "assistant: answer 2",
		"user: question 3", "assistant: answer 3"}, conv)
	assert.Equal(t, "answer 3", c.Output)
	assert.Equal(t, "question 1\nquestion 2\nquestion 3", c.Input)
	require.Len(t, c.ToolCalls, 3)
	for i, tc := range c.ToolCalls {
		assert.Equal(t, map[string]any{"q": float64(i + 1)}, tc.Arguments, "arguments decoded back from their JSON text")
	}
	assert.Equal(t, int64(30), c.Usage.InputTokens)
	total, ok := c.Usage.Total()
	assert.True(t, ok)
	assert.Equal(t, int64(45), total)
	assert.Equal(t, 3*time.Second, c.Latency)
	assert.Equal(t, pcommon.SpanID{1}, c.Turns[0].SpanID)
}

func TestStoreIdleAndRescoreAfterGrowth(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Idle = time.Minute
	s := NewStore(cfg, 0)
	s.Record(t0, turnCase("svc", "a", 1, false), t0, res("svc"))
	s.Record(t0.Add(30*time.Second), turnCase("svc", "b", 1, false), t0, res("svc"))
	assert.Empty(t, s.Due(t0.Add(59*time.Second)))
	due := s.Due(t0.Add(time.Minute))
	require.Len(t, due, 1)
	assert.Equal(t, "a", due[0].Key.Conversation)
	assert.Empty(t, s.Due(t0.Add(time.Minute)), "scored once until it grows")
	// a grows: scored again, with both turns, an idle period after its new turn.
	s.Record(t0.Add(2*time.Minute), turnCase("svc", "a", 2, false), t0.Add(time.Minute), res("svc"))
	due = s.Due(t0.Add(2*time.Minute + 59*time.Second))
	require.Len(t, due, 1)
	assert.Equal(t, "b", due[0].Key.Conversation)
	due = s.Due(t0.Add(3 * time.Minute))
	require.Len(t, due, 1)
	assert.Equal(t, "a", due[0].Key.Conversation)
	assert.Len(t, due[0].Turns, 2)
	n, pending := s.Len()
	assert.Equal(t, 2, n)
	assert.Zero(t, pending)
}

func TestStoreSameConversationIDInTwoServicesIsTwoSessions(t *testing.T) {
	s := NewStore(NewDefaultConfig(), 0)
	s.Record(t0, turnCase("svc1", "c", 1, false), t0, res("svc1"))
	s.Record(t0, turnCase("svc2", "c", 2, false), t0, res("svc2"))
	snaps := s.Drain()
	require.Len(t, snaps, 2)
	for _, sn := range snaps {
		assert.Len(t, sn.Turns, 1)
		v, _ := sn.Resource.Attributes().Get("service.name")
		assert.Equal(t, sn.Key.Service, v.Str(), "the session's own resource")
	}
}

func TestStoreBounds(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.MaxSessions, cfg.MaxTurns = 2, 3
	s := NewStore(cfg, 100)
	dropped := 0
	for n := byte(1); n <= 5; n++ {
		dropped += s.Record(t0.Add(time.Duration(n)), turnCase("svc", "a", n, false), t0.Add(time.Duration(n)*time.Second), res("svc")).Dropped
	}
	assert.Equal(t, 2, dropped)
	s.Record(t0.Add(10), turnCase("svc", "b", 1, false), t0, res("svc"))
	assert.Equal(t, int64(2), s.Stats().TurnsDropped)
	// b was active last; a third session evicts a, the least recently
	// active, which had unscored turns: it comes back to be scored now.
	ev := s.Record(t0.Add(11), turnCase("svc", "c", 1, false), t0, res("svc")).Evicted
	require.NotNil(t, ev)
	assert.Equal(t, "a", ev.Key.Conversation)
	require.Len(t, ev.Turns, 3, "the most recent max_turns turns")
	assert.Equal(t, pcommon.SpanID{3}, ev.Turns[0].SpanID)
	assert.Equal(t, 2, ev.Dropped)
	assert.Equal(t, int64(1), s.Stats().Overflow)

	// A session already scored is forgotten without a second scoring.
	s.Drain()
	ev = s.Record(t0.Add(12), turnCase("svc", "d", 1, false), t0, res("svc")).Evicted
	assert.Nil(t, ev)

	// Fields are kept within the field limit (the judges' max_field_bytes).
	big := turnCase("svc", "e", 1, false)
	big.Input = strings.Repeat("é", 500)
	big.ToolCalls[0].Result = strings.Repeat("x", 1000)
	big.ToolCalls = append(big.ToolCalls, make([]adapter.ToolCall, MaxToolCallsPerTurn)...)
	s.Record(t0.Add(13), big, t0, res("svc"))
	var got Snapshot
	for _, sn := range s.Drain() {
		if sn.Key.Conversation == "e" {
			got = sn
		}
	}
	require.Len(t, got.Turns, 1)
	assert.LessOrEqual(t, len(got.Turns[0].Input), 100+40)
	assert.Contains(t, got.Turns[0].Input, "truncated")
	assert.LessOrEqual(t, len(got.Turns[0].ToolCalls[0].Result), 140)
	assert.Len(t, got.Turns[0].ToolCalls, MaxToolCallsPerTurn)
	assert.Equal(t, 1, got.Clipped)
}

func TestNewSpan(t *testing.T) {
	s := NewStore(NewDefaultConfig(), 0)
	for n := byte(1); n <= 3; n++ {
		s.Record(t0, turnCase("svc", "c1", n, false), t0.Add(time.Duration(n)*time.Second), res("svc"))
	}
	sn := s.Drain()[0]
	td, ref := sn.NewSpan(t0)
	require.Equal(t, 1, td.SpanCount())
	sp := ref.Span
	assert.Equal(t, SpanName, sp.Name())
	assert.Equal(t, ScopeName, ref.ScopeSpans.Scope().Name())
	assert.False(t, sp.TraceID().IsEmpty())
	for _, n := range []byte{1, 2, 3} {
		assert.NotEqual(t, pcommon.TraceID{n}, sp.TraceID(), "a new trace id")
	}
	assert.True(t, sp.ParentSpanID().IsEmpty())
	require.Equal(t, 3, sp.Links().Len())
	for i := 0; i < 3; i++ {
		assert.Equal(t, pcommon.SpanID{byte(i + 1)}, sp.Links().At(i).SpanID())
		assert.Equal(t, pcommon.TraceID{byte(i + 1)}, sp.Links().At(i).TraceID())
	}
	attrs := sp.Attributes().AsRaw()
	assert.Equal(t, "c1", attrs["gen_ai.conversation.id"])
	assert.Equal(t, "travel_agent", attrs["gen_ai.agent.name"])
	assert.Equal(t, int64(3), attrs["eval.session.turns"])
	assert.True(t, adapter.IsGenerated(sp))
	assert.False(t, adapter.IsGenAI(sp))
	v, _ := ref.Resource().Attributes().Get("service.name")
	assert.Equal(t, "svc", v.Str())
}

func TestConfigValidate(t *testing.T) {
	c := NewDefaultConfig()
	require.NoError(t, c.Validate())
	c = Config{Idle: -1}
	err := c.Validate()
	require.Error(t, err)
	for _, k := range []string{"idle", "max_sessions", "max_turns"} {
		assert.Contains(t, err.Error(), k)
	}
	c = NewDefaultConfig()
	assert.Equal(t, time.Second, c.TickInterval())
	c.Idle = 300 * time.Millisecond
	assert.Equal(t, 30*time.Millisecond, c.TickInterval())
}
