package adapter

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// agentSpan is one invoke_agent span alone in its trace.
func agentSpan() (ptrace.Span, SpanRef) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID([16]byte{1})
	sp.SetSpanID([8]byte{1})
	sp.SetName("ai.generateText") // an agent span by name too
	sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	return sp, SpanRef{Span: sp, ResourceSpans: rs, ScopeSpans: ss}
}

func TestGeneratedSpansAreNeverCases(t *testing.T) {
	sp, ref := agentSpan()
	if !IsGenAI(sp) {
		t.Fatal("a GenAI span")
	}
	sp.Attributes().PutBool(AttrGenerated, true)
	if IsGenAI(sp) {
		t.Fatal("a span evalbridge made is not held as GenAI")
	}
	if cases, _ := Adapt([]SpanRef{ref}); len(cases) != 0 {
		t.Fatalf("got %d cases from a generated span", len(cases))
	}
	// the marker before the kind key, and a false marker
	for _, generated := range []bool{true, false} {
		sp, ref := agentSpan()
		sp.Attributes().Clear()
		sp.Attributes().PutBool(AttrGenerated, generated)
		sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		if cases, _ := Adapt([]SpanRef{ref}); (len(cases) == 0) != generated {
			t.Fatalf("eval.generated %v: got %d cases", generated, len(cases))
		}
	}
}

func TestConversationIDKeys(t *testing.T) {
	for _, key := range fieldNames[fieldConversationID] {
		sp, ref := agentSpan()
		sp.Attributes().PutStr(key, "conv-"+key)
		cases, _ := Adapt([]SpanRef{ref})
		if len(cases) != 1 || cases[0].ConversationID != "conv-"+key {
			t.Fatalf("%s: cases %+v", key, cases)
		}
	}
}

// expectOf skips the expectation keys on spans without an "eval." key:
// every expectation key has that prefix, and a span that has one and a
// span that has none read as they should.
func TestExpectationKeysShareThePrefix(t *testing.T) {
	for _, k := range []string{AttrExpectedToolCalls, AttrExpectedOutput, AttrExpectedDocuments, AttrTasks,
		AttrContext, AttrConstraints, AttrConversationGoal} {
		sp, ref := agentSpan()
		if cases, _ := Adapt([]SpanRef{ref}); len(cases) != 1 || cases[0].Expected.HasOutput || cases[0].Expected.Constraints != "" {
			t.Fatalf("without eval.*: %+v", cases)
		}
		sp.Attributes().PutStr(k, `["x"]`)
		if !hasEvalKey(sp.Attributes()) {
			t.Fatalf("%s: not seen", k)
		}
		cases, _ := Adapt([]SpanRef{ref})
		e := cases[0].Expected
		if !(e.HasToolCalls || e.HasOutput || e.HasDocuments || e.HasTasks || e.HasContext || e.Constraints != "" || e.ConversationGoal != "") {
			t.Fatalf("%s: not read: %+v", k, e)
		}
	}
}

// A span's key filter never hides a key it has: every convention key put
// on a span alongside others is read through d.first as through a plain
// lookup.
func TestKeyFilterHidesNoKey(t *testing.T) {
	for f, names := range fieldNames {
		for _, k := range names {
			sp, ref := agentSpan()
			sp.Attributes().PutStr(k, "v")
			d := spanData{ref: ref, c: newSpanCtx(ref)}
			if got := d.first(sp.Attributes(), attrField(f)); got != d.c.firstString(sp.Attributes(), names...) || got == "" {
				t.Fatalf("%s: first %q", k, got)
			}
		}
	}
}
