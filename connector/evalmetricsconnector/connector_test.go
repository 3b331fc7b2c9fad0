package evalmetricsconnector

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/evalbridge/evalbridge/internal/telemetrydoc"
)

// result is one gen_ai.evaluation.result to send.
type result struct {
	name, label, errType string
	score                *float64
	agent, model         string // on the record; "" = absent
	version, evType      string // §24 provenance; "" = absent
	trace                byte
	span                 byte // 0: the record's span id is {trace, 1}
}

func f(v float64) *float64 { return &v }

func putResult(a pcommon.Map, r result) {
	a.PutStr(attrEvalName, r.name)
	if r.score != nil {
		a.PutDouble(attrScoreValue, *r.score)
	}
	if r.label != "" {
		a.PutStr(attrScoreLabel, r.label)
	}
	if r.errType != "" {
		a.PutStr(attrErrorType, r.errType)
	}
	if r.agent != "" {
		a.PutStr("gen_ai.agent.name", r.agent)
	}
	if r.model != "" {
		a.PutStr("gen_ai.request.model", r.model)
	}
	if r.version != "" {
		a.PutStr(attrEvalVersion, r.version)
	}
	if r.evType != "" {
		a.PutStr(attrEvalType, r.evType)
	}
}

func resultLogs(version string, rs ...result) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "travel")
	rl.Resource().Attributes().PutStr("service.version", version)
	rl.Resource().Attributes().PutStr("gen_ai.agent.name", "resource_agent")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	// A record of another event is not counted.
	other := lrs.AppendEmpty()
	other.SetEventName("gen_ai.user.message")
	other.Attributes().PutStr(attrEvalName, "not_a_result")
	for _, r := range rs {
		lr := lrs.AppendEmpty()
		lr.SetEventName(eventName)
		lr.SetTraceID(pcommon.TraceID{r.trace})
		lr.SetSpanID(pcommon.SpanID{r.trace, 1})
		if r.span != 0 {
			lr.SetSpanID(pcommon.SpanID{r.trace, r.span})
		}
		lr.SetTimestamp(pcommon.Timestamp(1e18))
		putResult(lr.Attributes(), r)
	}
	return ld
}

type harness struct {
	c    *evalMetrics
	sink *consumertest.MetricsSink
	tick chan time.Time
	tel  *componenttest.Telemetry
	rec  *telemetrydoc.Recorder
}

// sum is the value of one of the connector's own counters, over the data
// points holding every attribute of kv (pairs of key and value).
func (h *harness) sum(t *testing.T, name string, kv ...string) int64 {
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok)
	var n int64
	for _, dp := range s.DataPoints {
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			v, ok := dp.Attributes.Value(attribute.Key(kv[i]))
			match = match && ok && v.Emit() == kv[i+1]
		}
		if match {
			n += dp.Value
		}
	}
	return n
}

// flush ticks once and waits for the flush to reach the sink.
func (h *harness) flush(t *testing.T) {
	n := len(h.sink.AllMetrics())
	h.tick <- time.Now()
	require.Eventually(t, func() bool { return len(h.sink.AllMetrics()) > n }, 10*time.Second, time.Millisecond)
}

func newHarness(t *testing.T, cfg *Config, rec *telemetrydoc.Recorder) *harness {
	require.NoError(t, cfg.Validate())
	h := &harness{sink: new(consumertest.MetricsSink), tick: make(chan time.Time), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := connectortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	if rec != nil {
		h.rec = rec
		set.TelemetrySettings.MeterProvider = rec
	}
	c, err := newConnector(set, cfg, h.sink, func(time.Duration) (<-chan time.Time, func()) { return h.tick, func() {} })
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	h.c = c
	return h
}

// last is the newest flush's metric of that name.
func (h *harness) last(t *testing.T, name string) pmetric.Metric {
	all := h.sink.AllMetrics()
	require.NotEmpty(t, all)
	md := all[len(all)-1]
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == name {
			return ms.At(i)
		}
	}
	t.Fatalf("no metric %s", name)
	return pmetric.Metric{}
}

// key renders a data point's attributes as k=v,... sorted.
func key(m pcommon.Map) string {
	var parts []string
	m.Range(func(k string, v pcommon.Value) bool {
		parts = append(parts, k+"="+v.AsString())
		return true
	})
	sortStrings(parts)
	return strings.Join(parts, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func counts(t *testing.T, m pmetric.Metric) map[string]int64 {
	require.Equal(t, pmetric.MetricTypeSum, m.Type())
	require.True(t, m.Sum().IsMonotonic())
	require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
	out := map[string]int64{}
	for i := 0; i < m.Sum().DataPoints().Len(); i++ {
		dp := m.Sum().DataPoints().At(i)
		out[key(dp.Attributes())] = dp.IntValue()
	}
	return out
}

// The log records' results become the counter and the histogram, with the
// dimensions from the record, else the resource; errors have no label and
// no score; a flush emits cumulative totals.
func TestLogsToMetrics(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil)
	ctx := context.Background()
	require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1.0",
		result{name: "tool_error", label: "pass", score: f(1), agent: "travel_agent", model: "gpt-4o", trace: 1},
		result{name: "tool_error", label: "fail", score: f(0.25), agent: "travel_agent", model: "gpt-4o", trace: 2},
		result{name: "tool_error", label: "pass", score: f(0.95), trace: 3}, // agent from the resource, no model
		result{name: "helpful", errType: "timeout", agent: "travel_agent", trace: 4},
	)))
	h.flush(t) // new series at 0
	h.flush(t)

	want := map[string]int64{
		"gen_ai.agent.name=travel_agent,gen_ai.evaluation.name=tool_error,gen_ai.evaluation.score.label=pass,gen_ai.request.model=gpt-4o,service.name=travel,service.version=1.0": 1,
		"gen_ai.agent.name=travel_agent,gen_ai.evaluation.name=tool_error,gen_ai.evaluation.score.label=fail,gen_ai.request.model=gpt-4o,service.name=travel,service.version=1.0": 1,
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=tool_error,gen_ai.evaluation.score.label=pass,service.name=travel,service.version=1.0":                           1,
		"error.type=timeout,gen_ai.agent.name=travel_agent,gen_ai.evaluation.name=helpful,service.name=travel,service.version=1.0":                                                1,
		// The sibling of the pass series, at 0.
		"gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=tool_error,gen_ai.evaluation.score.label=fail,service.name=travel,service.version=1.0": 0,
	}
	require.Equal(t, want, counts(t, h.last(t, metricResults)))
	require.Equal(t, "{result}", h.last(t, metricResults).Unit())

	// Same series again: cumulative.
	require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1.0",
		result{name: "tool_error", label: "fail", score: f(0.3), agent: "travel_agent", model: "gpt-4o", trace: 5})))
	require.NoError(t, h.c.Shutdown(ctx)) // flushes
	got := counts(t, h.last(t, metricResults))
	require.Equal(t, int64(2), got["gen_ai.agent.name=travel_agent,gen_ai.evaluation.name=tool_error,gen_ai.evaluation.score.label=fail,gen_ai.request.model=gpt-4o,service.name=travel,service.version=1.0"])

	hm := h.last(t, metricScore)
	require.Equal(t, "1", hm.Unit())
	require.Equal(t, pmetric.MetricTypeHistogram, hm.Type())
	require.Equal(t, pmetric.AggregationTemporalityCumulative, hm.Histogram().AggregationTemporality())
	dps := hm.Histogram().DataPoints()
	require.Equal(t, 2, dps.Len(), "one series per evaluator x dimensions; the timeout has no score")
	var dp pmetric.HistogramDataPoint
	for i := 0; i < dps.Len(); i++ {
		if key(dps.At(i).Attributes()) == "gen_ai.agent.name=travel_agent,gen_ai.evaluation.name=tool_error,gen_ai.request.model=gpt-4o,service.name=travel,service.version=1.0" {
			dp = dps.At(i)
		}
	}
	require.Equal(t, uint64(3), dp.Count())
	require.InDelta(t, 1.55, dp.Sum(), 1e-9)
	require.Equal(t, DefaultScoreBuckets, dp.ExplicitBounds().AsRaw())
	// 0.25 -> (0.2,0.3], 0.3 -> (0.2,0.3] (upper bound inclusive), 1 -> (0.9,1].
	require.Equal(t, []uint64{0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0}, dp.BucketCounts().AsRaw())
	// Exemplars: the latest scored case of each bucket, with its trace and span.
	require.Equal(t, 2, dp.Exemplars().Len())
	ex := map[float64]pcommon.TraceID{}
	for i := 0; i < dp.Exemplars().Len(); i++ {
		e := dp.Exemplars().At(i)
		ex[e.DoubleValue()] = e.TraceID()
		require.Equal(t, pcommon.SpanID{e.TraceID()[0], 1}, e.SpanID())
	}
	require.Equal(t, map[float64]pcommon.TraceID{0.3: {5}, 1: {1}}, ex)

	require.Zero(t, h.sum(t, "otelcol_connector_evalmetrics_results_invalid"))
}

// Span events of the same name count the same way; a result without a
// name is counted as invalid, not as a series.
func TestTracesToMetrics(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "other-producer")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i, r := range []result{
		{name: "relevance", label: "pass", score: f(0.8), model: "m1"},
		{name: "relevance", label: "fail", score: f(0.1), model: "m1"},
		{name: "", label: "fail", score: f(0.1)},
	} {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{byte(i + 1)})
		s.SetSpanID(pcommon.SpanID{byte(i + 1), 1})
		s.Events().AppendEmpty().SetName("exception")
		ev := s.Events().AppendEmpty()
		ev.SetName(eventName)
		putResult(ev.Attributes(), r)
	}
	require.NoError(t, h.c.ConsumeTraces(context.Background(), td))
	require.NoError(t, h.c.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{
		"gen_ai.evaluation.name=relevance,gen_ai.evaluation.score.label=pass,gen_ai.request.model=m1,service.name=other-producer": 1,
		"gen_ai.evaluation.name=relevance,gen_ai.evaluation.score.label=fail,gen_ai.request.model=m1,service.name=other-producer": 1,
	}, counts(t, h.last(t, metricResults)))
	dp := h.last(t, metricScore).Histogram().DataPoints().At(0)
	require.Equal(t, uint64(2), dp.Count())
	require.Equal(t, int64(1), h.sum(t, "otelcol_connector_evalmetrics_results_invalid"))
}

// Beyond max_series label sets, results are counted under
// otel.metric.overflow="true": no result is lost, the series stay bounded.
func TestMaxSeriesOverflow(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSeries = 2
	h := newHarness(t, cfg, nil)
	var rs []result
	for i := 0; i < 5; i++ {
		rs = append(rs, result{name: "e", label: "pass", score: f(1), agent: string(rune('a' + i)), trace: byte(i + 1)})
	}
	require.NoError(t, h.c.ConsumeLogs(context.Background(), resultLogs("1", rs...)))
	require.NoError(t, h.c.Shutdown(context.Background()))
	got := counts(t, h.last(t, metricResults))
	require.Len(t, got, 3, "a's pass series, its fail sibling at 0, the overflow series")
	require.Equal(t, int64(4), got["otel.metric.overflow=true"])
	var total int64
	for _, v := range got {
		total += v
	}
	require.Equal(t, int64(5), total)
	hd := h.last(t, metricScore).Histogram().DataPoints()
	require.Equal(t, 3, hd.Len())
	require.Equal(t, int64(7), h.sum(t, "otelcol_connector_evalmetrics_results_overflow"))
}

// The contract's YAML unmarshals into the config; bad values are refused.
func TestConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	sub, err := cm.Sub(component.NewID(Type).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	require.Equal(t, createDefaultConfig(), cfg, "the contract's example is the default")

	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.ScoreBuckets = []float64{0.5, 0.5} }, "increase strictly"},
		{func(c *Config) { c.ScoreBuckets = nil }, "at least one bound"},
		{func(c *Config) { c.MaxSeries = 0 }, "max_series"},
		{func(c *Config) { c.FlushInterval = 0 }, "flush_interval"},
		{func(c *Config) { c.Dimensions = []string{"a", "a"} }, "twice"},
		{func(c *Config) { c.Dimensions = []string{"error.type"} }, "written by the connector"},
		{func(c *Config) { c.Dimensions = []string{"gen_ai.evaluation.evaluator.version"} }, "written by the connector"},
		{func(c *Config) { c.MaxAbsScore = 0 }, "max_abs_score"},
		{func(c *Config) { c.MaxAbsScore = math.Inf(1) }, "max_abs_score"},
	} {
		cfg := createDefaultConfig()
		c.mod(cfg)
		require.ErrorContains(t, cfg.Validate(), c.want)
	}
}

// The factory builds both directions; each starts and stops cleanly.
func TestFactory(t *testing.T) {
	f := NewFactory()
	ctx := context.Background()
	set := connectortest.NewNopSettings(Type)
	lc, err := f.CreateLogsToMetrics(ctx, set, f.CreateDefaultConfig(), new(consumertest.MetricsSink))
	require.NoError(t, err)
	tc, err := f.CreateTracesToMetrics(ctx, set, f.CreateDefaultConfig(), new(consumertest.MetricsSink))
	require.NoError(t, err)
	for _, c := range []component.Component{lc, tc} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
		require.NoError(t, c.Shutdown(ctx))
	}
}

// The connector's instruments record only the attributes metadata.yaml
// declares (none).
func TestTelemetryMatchesMetadata(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSeries = 1
	h := newHarness(t, cfg, telemetrydoc.NewRecorder())
	require.NoError(t, h.c.ConsumeLogs(context.Background(), resultLogs("1",
		result{name: "a", label: "pass", score: f(1)}, result{name: "b", label: "pass", score: f(1)}, result{name: ""})))
	require.NoError(t, h.c.Shutdown(context.Background()))
	h.rec.Collect()
	require.NoError(t, telemetrydoc.CheckRecorded(".", h.rec, ""))
}

// documentation.md and internal/metadata/generated_telemetry.go are what
// `go generate` makes of metadata.yaml.
func TestDocumentationIsGenerated(t *testing.T) {
	require.NoError(t, telemetrydoc.CheckDocumentation("."))
}
