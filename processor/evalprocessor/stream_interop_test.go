package evalprocessor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// Stream mode's results equal hold mode's for the same trace
// (docs/contract.md §26) on what real instrumentation libraries send
// (interop/testdata: OTel GenAI, OpenInference, OpenLLMetry, Vercel AI SDK,
// LangChain; content in log records for the OTel OpenAI instrumentation),
// each span in a request of its own, in the reverse of the order the
// library exported them, the content records first.
func TestStreamModeEqualsHoldModeOnRealLibraries(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "interop", "testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	evs := []evaluators.Config{
		{Type: "tool_error"},
		{Type: "tool_efficiency"},
		{Type: "tool_call_validity"},
		{Type: "regex", Name: "answered", Case: adapter.LevelAgent, Options: map[string]any{"pattern": `\w`}},
		{Type: "token_usage", Name: "tokens", Case: adapter.LevelLLM, Options: map[string]any{"max_total": 100000}},
		{Type: "regex", Name: "llm_answered", Case: adapter.LevelLLM, Options: map[string]any{"pattern": `\w`}},
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			td := testkit.ReadTraces(t, file)
			var ld plog.Logs
			if logs := filepath.Join(filepath.Dir(file), "logs", name+".logs.json"); fileExists(logs) {
				ld = testkit.ReadLogs(t, logs)
			}
			hold := scoreOneByOne(t, engine.ModeHold, evs, td, ld, 0)
			stream := scoreOneByOne(t, engine.ModeStream, evs, td, ld, len(hold.results))
			require.NotEmpty(t, hold.results, "hold mode scored nothing")
			assert.Equal(t, hold.results, stream.results, "the eval.* attributes of each evaluated span")
			assert.Equal(t, hold.records, stream.records, "the result records")
			assert.Equal(t, td.SpanCount(), stream.spans, "stream mode forwards every span once, and its result spans")
			t.Logf("%d evaluated spans, %d result records", len(hold.results), len(hold.records))
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// scored is what a mode made of a fixture: per evaluated span, its eval.*
// attributes; the result records, each as its span, attributes and
// resource.
type scored struct {
	results map[pcommon.SpanID]map[string]any
	records map[string]bool
	spans   int // the spans forwarded that are no result span
}

// scoreOneByOne sends ld's records, then td's spans in reverse order, each
// alone, to a mode's pipelines and returns what came out once every
// evaluated span's results did (want of them, when known).
func scoreOneByOne(t *testing.T, mode string, evs []evaluators.Config, td ptrace.Traces, ld plog.Logs, want int) scored {
	m := startMode(t, mode, evs...)
	ctx := context.Background()
	if ld != (plog.Logs{}) {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, sl plog.ScopeLogs) {
			one := plog.NewLogs()
			orl := one.ResourceLogs().AppendEmpty()
			rl.Resource().CopyTo(orl.Resource())
			osl := orl.ScopeLogs().AppendEmpty()
			sl.Scope().CopyTo(osl.Scope())
			lr.CopyTo(osl.LogRecords().AppendEmpty())
			require.NoError(t, m.lg.ConsumeLogs(ctx, one))
		})
	}
	var singles []ptrace.Traces
	adapter.ForEachSpan(td, func(r adapter.SpanRef) {
		one := ptrace.NewTraces()
		rs := one.ResourceSpans().AppendEmpty()
		r.Resource().CopyTo(rs.Resource())
		ss := rs.ScopeSpans().AppendEmpty()
		r.ScopeSpans.Scope().CopyTo(ss.Scope())
		r.Span.CopyTo(ss.Spans().AppendEmpty())
		singles = append(singles, one)
	})
	for i := len(singles) - 1; i >= 0; i-- {
		require.NoError(t, m.tr.ConsumeTraces(ctx, singles[i]))
	}
	var out scored
	collect := func() {
		out = scored{results: map[pcommon.SpanID]map[string]any{}, records: map[string]bool{}}
		for _, got := range m.spans.AllTraces() {
			adapter.ForEachSpan(got, func(r adapter.SpanRef) {
				id := r.Span.SpanID()
				if adapter.IsGenerated(r.Span) {
					id = r.Span.ParentSpanID()
				} else {
					out.spans++
				}
				if a := resultAttrs(r.Span); len(a) > 0 {
					out.results[id] = a
				}
			})
		}
		for _, got := range m.logs.AllLogs() {
			adapter.ForEachLogRecord(got, func(lr plog.LogRecord, rl plog.ResourceLogs, _ plog.ScopeLogs) {
				if lr.EventName() == "gen_ai.evaluation.result" {
					out.records[fmt.Sprint(lr.TraceID(), lr.SpanID(), lr.Attributes().AsRaw(), rl.Resource().Attributes().AsRaw())] = true
				}
			})
		}
	}
	// Done when every span went on and every scored result has its record
	// (records are emitted for passed, failed, error and timeout); a mode
	// that loses results is compared as it is after the deadline.
	done := func() bool {
		collect()
		n := 0
		for _, a := range out.results {
			for k, v := range a {
				if strings.HasSuffix(k, ".status") && v != "skipped" {
					n++
				}
			}
		}
		return out.spans == td.SpanCount() && (len(out.results) >= want || want == 0 && len(out.results) > 0) && len(out.records) == n
	}
	for deadline := time.Now().Add(10 * time.Second); !done() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

// resultAttrs is a span's eval.* attributes but the §3 inputs and what a
// result span says of its evaluated span.
func resultAttrs(s ptrace.Span) map[string]any {
	out := evalAttrs(s)
	for k := range out {
		switch {
		case strings.HasPrefix(k, "eval.expected."), k == adapter.AttrTasks, k == adapter.AttrConstraints,
			k == adapter.AttrConversationGoal, k == adapter.AttrContext, strings.HasPrefix(k, "eval.dataset."):
			delete(out, k)
		}
	}
	return out
}
