package evalprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
)

// A request of many traces from one service under one resource and scope
// (what an SDK's batch exporter sends): the traces released together go
// on under one resource and scope again, with every attribute, not under
// one copy of them per trace.
func TestReleasedTogetherKeepOneResourceAndScope(t *testing.T) {
	h := newHarness(t, nil, nil, nil)
	b := newBatch()
	res := b.td.ResourceSpans().At(0).Resource().Attributes()
	for _, k := range []string{"service.version", "host.name", "k8s.pod.name", "k8s.namespace.name", "telemetry.sdk.name"} {
		res.PutStr(k, k+"-value")
	}
	b.td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetVersion("1.2.3")
	for tr := byte(1); tr <= 20; tr++ {
		agentTrace(b, tr, tr%2 == 0)
	}
	want := ptrace.NewTraces()
	b.td.ResourceSpans().At(0).Resource().CopyTo(want.ResourceSpans().AppendEmpty().Resource())
	h.consume(b.td)
	h.clk.advance(time.Second)
	h.waitSpans(100)
	require.Equal(t, 1, len(h.sink.AllTraces()), "the traces released together go on in one request")
	got := h.sink.AllTraces()[0]
	require.Equal(t, 1, got.ResourceSpans().Len(), "one resource")
	rs := got.ResourceSpans().At(0)
	assert.Equal(t, want.ResourceSpans().At(0).Resource().Attributes().AsRaw(), rs.Resource().Attributes().AsRaw())
	require.Equal(t, 1, rs.ScopeSpans().Len(), "one scope")
	assert.Equal(t, "test", rs.ScopeSpans().At(0).Scope().Name())
	assert.Equal(t, "1.2.3", rs.ScopeSpans().At(0).Scope().Version())
	assert.Equal(t, 100, rs.ScopeSpans().At(0).Spans().Len())
	assert.Equal(t, "failed", strAttr(spansOf(h.sink, 2)[1], "eval.tool_error.status"), "scored")
}

// What moveTraces merges, and what it leaves apart.
func TestMoveTracesMergesOnlyTheSame(t *testing.T) {
	one := func(service, scope string, spans int) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		rs.Resource().Attributes().PutInt("shard", 1)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scope)
		for i := 0; i < spans; i++ {
			ss.Spans().AppendEmpty().SetName(service + "/" + scope)
		}
		return td
	}
	shape := func(td ptrace.Traces) []int {
		var out []int
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				out = append(out, sss.At(j).Spans().Len())
			}
			out = append(out, -1) // end of a resource
		}
		return out
	}
	for _, tc := range []struct {
		name string
		src  func() ptrace.Traces
		want []int
	}{
		{"same resource and scope", func() ptrace.Traces { return one("a", "s", 2) }, []int{5, -1}},
		{"same resource, another scope", func() ptrace.Traces { return one("a", "t", 2) }, []int{3, 2, -1}},
		{"another resource", func() ptrace.Traces { return one("b", "s", 2) }, []int{3, -1, 2, -1}},
		{"attributes in another order", func() ptrace.Traces {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutInt("shard", 1)
			rs.Resource().Attributes().PutStr("service.name", "a")
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("s")
			ss.Spans().AppendEmpty()
			return td
		}, []int{3, -1, 1, -1}},
		{"another schema URL", func() ptrace.Traces {
			td := one("a", "s", 1)
			td.ResourceSpans().At(0).SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
			return td
		}, []int{3, -1, 1, -1}},
		{"entity references", func() ptrace.Traces {
			td := one("a", "s", 1)
			entity.ResourceEntityRefs(td.ResourceSpans().At(0).Resource()).AppendEmpty().SetType("service")
			return td
		}, []int{3, -1, 1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := one("a", "s", 3)
			src := tc.src()
			n := dst.SpanCount() + src.SpanCount()
			moveTraces(dst, nil, src, nil)
			assert.Equal(t, tc.want, shape(dst))
			assert.Equal(t, n, dst.SpanCount(), "no span lost")
			assert.Equal(t, 0, src.ResourceSpans().Len(), "src left empty")
		})
	}
}
