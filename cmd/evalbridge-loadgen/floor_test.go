package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/bench/resultfloor"
)

// The floor pipeline is only a floor if it sends what stream mode sends: on
// the load generator's requests, one result span per agent run, with the
// same parent, attribute keys and events as eval's in mode: stream, and
// about the same bytes.
func TestResultFloorSendsWhatStreamModeSends(t *testing.T) {
	reqs, _ := loadRequests(60, false)

	streamSink := new(consumertest.TracesSink)
	p := startEval(t, "wait: 20ms\nmode: stream", streamSink)
	for _, raw := range reqs {
		require.NoError(t, p.ConsumeTraces(context.Background(), decode(t, raw)))
	}
	require.NoError(t, p.Shutdown(context.Background())) // scores what is still kept

	floorSink := new(consumertest.TracesSink)
	f := resultfloor.NewFactory()
	fp, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), floorSink)
	require.NoError(t, err)
	require.NoError(t, fp.Start(context.Background(), componenttest.NewNopHost()))
	for _, raw := range reqs {
		require.NoError(t, fp.ConsumeTraces(context.Background(), decode(t, raw)))
	}
	require.NoError(t, fp.Shutdown(context.Background()))

	stream, streamBytes := resultSpansOf(t, streamSink.AllTraces())
	floor, floorBytes := resultSpansOf(t, floorSink.AllTraces())
	require.NotEmpty(t, stream)
	require.Equal(t, len(stream), len(floor), "one result span per agent run in both")
	for parent, s := range stream {
		fs, ok := floor[parent]
		require.True(t, ok, "the floor has no result span under %s", parent)
		// eval.failed is there only when a result failed: the floor's all pass.
		assert.Equal(t, slices.DeleteFunc(s.attrs, func(k string) bool { return k == "eval.failed" }), fs.attrs)
		assert.Equal(t, s.events, fs.events)
		assert.Equal(t, s.resource, fs.resource)
	}
	ratio := float64(floorBytes) / float64(streamBytes)
	assert.InDelta(t, 1, ratio, 0.1, "the floor's result spans are %d bytes, stream mode's %d", floorBytes, streamBytes)
	t.Logf("%d result spans; floor/stream bytes %.3f", len(stream), ratio)
}

type resultShape struct {
	attrs    []string // sorted attribute keys
	events   []string // each event's name and sorted attribute keys
	resource string   // service.name
}

// resultSpansOf is the result spans (eval.generated) in tds by parent span
// id, and the OTLP bytes of the ResourceSpans that carry them.
func resultSpansOf(t *testing.T, tds []ptrace.Traces) (map[pcommon.SpanID]resultShape, int) {
	out := map[pcommon.SpanID]resultShape{}
	only := ptrace.NewTraces()
	for _, td := range tds {
		adapter.ForEachSpan(td, func(r adapter.SpanRef) {
			if v, ok := r.Span.Attributes().Get(adapter.AttrGenerated); !ok || !v.Bool() {
				return
			}
			var sh resultShape
			r.Span.Attributes().Range(func(k string, _ pcommon.Value) bool { sh.attrs = append(sh.attrs, k); return true })
			slices.Sort(sh.attrs)
			for i := 0; i < r.Span.Events().Len(); i++ {
				ev := r.Span.Events().At(i)
				keys := []string{ev.Name()}
				ev.Attributes().Range(func(k string, _ pcommon.Value) bool { keys = append(keys, k); return true })
				slices.Sort(keys[1:])
				sh.events = append(sh.events, strings.Join(keys, ","))
			}
			if v, ok := r.Resource().Attributes().Get("service.name"); ok {
				sh.resource = v.Str()
			}
			_, dup := out[r.Span.ParentSpanID()]
			require.False(t, dup, "two result spans under %s", r.Span.ParentSpanID())
			out[r.Span.ParentSpanID()] = sh
			rs := only.ResourceSpans().AppendEmpty()
			r.Resource().CopyTo(rs.Resource())
			r.Span.CopyTo(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty())
		})
	}
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(only)
	require.NoError(t, err)
	return out, len(raw)
}
