package sessions

import (
	"crypto/rand"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// Names of the evaluate_session span (docs/contract.md §14).
const (
	SpanName = "evaluate_session"
	// ScopeName is the instrumentation scope of evaluate_session spans.
	ScopeName = "github.com/evalbridge/evalbridge/internal/sessions"

	AttrConversationID = "gen_ai.conversation.id"
	AttrAgentName      = "gen_ai.agent.name"
	AttrTurns          = "eval.session.turns"
	// AttrTurnsDropped says how many older turns max_turns left out.
	AttrTurnsDropped = "eval.session.turns_dropped"
)

// NewSpan builds the evaluate_session span of a snapshot, started at
// start: kind internal, a new trace id, the last turn's resource, a link
// to each turn's case span, and the session attributes. It is marked
// eval.generated, so no evalbridge scores it as a case or a turn. The
// caller writes the results onto ref.Span and sets its end time.
func (sn *Snapshot) NewSpan(start time.Time) (ptrace.Traces, adapter.SpanRef) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	sn.Resource.CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(ScopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(newTraceID())
	sp.SetSpanID(newSpanID())
	sp.SetName(SpanName)
	sp.SetKind(ptrace.SpanKindInternal)
	ts := pcommon.NewTimestampFromTime(start)
	sp.SetStartTimestamp(ts)
	sp.SetEndTimestamp(ts)
	attrs := sp.Attributes()
	attrs.PutStr(AttrConversationID, sn.Key.Conversation)
	if sn.AgentName != "" {
		attrs.PutStr(AttrAgentName, sn.AgentName)
	}
	attrs.PutInt(AttrTurns, int64(len(sn.Turns)))
	if sn.Dropped > 0 {
		attrs.PutInt(AttrTurnsDropped, int64(sn.Dropped))
	}
	attrs.PutBool(adapter.AttrGenerated, true)
	links := sp.Links()
	links.EnsureCapacity(len(sn.Turns))
	for i := range sn.Turns {
		l := links.AppendEmpty()
		l.SetTraceID(sn.Turns[i].TraceID)
		l.SetSpanID(sn.Turns[i].SpanID)
	}
	return td, adapter.SpanRef{Span: sp, ResourceSpans: rs, ScopeSpans: ss}
}

func newTraceID() pcommon.TraceID {
	var id pcommon.TraceID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}

func newSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}
