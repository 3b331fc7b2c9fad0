package evalmetricsconnector

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zaptest"
)

// label is a human label (evaluator type human) for trace/span.
func label(name, l string, trace, span byte) result {
	return result{name: name, label: l, evType: evaluatorTypeHuman, trace: trace, span: span}
}

// machine is a machine result of task_done, version v3.
func machine(l string, trace byte) result {
	return result{name: "task_done", label: l, score: f(map[string]float64{"pass": 1, "fail": 0}[l]), version: "v3", evType: "llm_judge", trace: trace}
}

// spanless is a human label without a span id: the trace's agent case.
func spanless(name, l string, trace byte) plog.Logs {
	ld := resultLogs("1", label(name, l, trace, 0))
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(lrs.Len() - 1).SetSpanID(pcommon.SpanID{})
	return ld
}

// logsConnector is the connector as the collector builds it: from the
// factory and a confmap, in a logs → metrics pipeline ending in a sink.
func logsConnector(t *testing.T, conf map[string]any, host component.Host) (connector.Logs, *consumertest.MetricsSink, *componenttest.Telemetry) {
	t.Helper()
	fac := NewFactory()
	cfg := fac.CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(conf).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := connectortest.NewNopSettings(Type)
	set.ID = component.NewID(Type) // the same across restarts, as in a collector
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zaptest.NewLogger(t)
	sink := new(consumertest.MetricsSink)
	c, err := fac.CreateLogsToMetrics(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), host))
	return c, sink, tel
}

// pairsOf is the last flush's eval.agreement.pairs (or relabels) by
// attributes.
func pairsOf(t *testing.T, sink *consumertest.MetricsSink, name string) map[string]int64 {
	all := sink.AllMetrics()
	require.NotEmpty(t, all)
	ms := all[len(all)-1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == name {
			return counts(t, ms.At(i))
		}
	}
	return nil
}

func telSum(t *testing.T, tel *componenttest.Telemetry, name string, kv ...string) int64 {
	return (&harness{tel: tel}).sum(t, name, kv...)
}

func cellKey(human, machine string) string {
	return "eval.human.label=" + human + ",eval.machine.label=" + machine +
		",gen_ai.agent.name=resource_agent,gen_ai.evaluation.evaluator.version=v3,gen_ai.evaluation.name=task_done,service.name=travel,service.version=1"
}

// Human labels meet the machine result of the same trace, span and name in
// either order; a resend counts once, a changed label is a relabel (the
// first label is the pair's); a label without a span id pairs with the
// trace's result; unknown labels, machine errors and labels of traces
// never scored make no pair.
func TestAgreementPairs(t *testing.T) {
	c, sink, tel := logsConnector(t, map[string]any{}, componenttest.NewNopHost())
	ctx := context.Background()
	send := func(rs ...result) { require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1", rs...))) }

	send(machine("pass", 1), label("task_done", "thumbs_up", 1, 0)) // machine first
	send(label("task_done", "thumbs_down", 2, 0))                   // human first
	send(machine("pass", 2))
	send(label("task_done", "fail", 3, 0), label("task_done", "bad", 3, 0)) // a resend, in other words
	send(label("task_done", "pass", 3, 0))                                  // a relabel
	send(machine("fail", 3))                                                // pairs with the first label: fail
	send(label("task_done", "meh", 4, 0), machine("pass", 4))               // unknown: no pair
	send(result{name: "task_done", label: "meh", score: f(0), evType: evaluatorTypeHuman, trace: 5}, machine("fail", 5))
	send(result{name: "task_done", errType: "timeout", version: "v3", trace: 6}, label("task_done", "pass", 6, 0))
	require.NoError(t, c.ConsumeLogs(ctx, spanless("task_done", "good", 7)))
	send(machine("fail", 7))
	send(label("task_done", "pass", 8, 0)) // never scored
	send(label("other_eval", "pass", 1, 0))
	require.NoError(t, c.Shutdown(ctx))

	require.Equal(t, map[string]int64{
		cellKey("pass", "pass"): 1, // trace 1
		cellKey("fail", "pass"): 1, // trace 2
		cellKey("fail", "fail"): 2, // traces 3, 5
		cellKey("pass", "fail"): 1, // trace 7
	}, pairsOf(t, sink, metricPairs))
	require.Equal(t, map[string]int64{
		"eval.human.label=pass,gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=task_done,service.name=travel,service.version=1": 1,
	}, pairsOf(t, sink, metricRelabels))
	require.Equal(t, int64(1), telSum(t, tel, "otelcol_connector_evalmetrics_agreement_unpaired", "reason", unpairedUnknownLabel))

	// Human labels are counted like any result, under their own type.
	res := counts(t, lastMetric(t, sink, metricResults))
	require.Equal(t, int64(1), res["gen_ai.agent.name=resource_agent,gen_ai.evaluation.evaluator.type=human,gen_ai.evaluation.name=task_done,gen_ai.evaluation.score.label=thumbs_up,service.name=travel,service.version=1"])
}

func lastMetric(t *testing.T, sink *consumertest.MetricsSink, name string) pmetric.Metric {
	all := sink.AllMetrics()
	ms := all[len(all)-1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == name {
			return ms.At(i)
		}
	}
	t.Fatalf("no %s", name)
	return pmetric.Metric{}
}

// pairs: a human evaluation of another name labels the machine one; the
// mapping is configurable; the four cells exist from the first pair.
func TestAgreementConfiguredPairs(t *testing.T) {
	c, sink, _ := logsConnector(t, map[string]any{"agreement": map[string]any{
		"pairs":  []any{map[string]any{"human": "user_feedback", "machine": "task_done"}},
		"labels": map[string]any{"pass": []any{"yes"}, "fail": []any{"no"}},
	}}, componenttest.NewNopHost())
	ctx := context.Background()
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1",
		machine("pass", 1), label("user_feedback", "yes", 1, 0),
		label("task_done", "pass", 1, 0),                              // not a listed pair
		machine("pass", 2), label("user_feedback", "thumbs_up", 2, 0), // not in this mapping
	)))
	require.NoError(t, c.Shutdown(ctx))
	require.Equal(t, map[string]int64{
		cellKey("pass", "pass"): 1, cellKey("fail", "pass"): 0, cellKey("pass", "fail"): 0, cellKey("fail", "fail"): 0,
	}, pairsOf(t, sink, metricPairs))
}

// Labels are compared trimmed and case-insensitively, as evalctl calibrate
// and the webhook exporter compare them: the same labels file gives the
// same pairs everywhere (an SDK's "Thumbs_Up" is the mapping's thumbs_up).
func TestAgreementLabelSpellings(t *testing.T) {
	c, sink, tel := logsConnector(t, map[string]any{}, componenttest.NewNopHost())
	ctx := context.Background()
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1",
		machine("pass", 1), label("task_done", "Thumbs_Up", 1, 0),
		label("task_done", " thumbs_down ", 2, 0), machine("pass", 2),
		label("task_done", "FAIL", 3, 0), machine("fail", 3),
		label("task_done", "Bad", 4, 0), label("task_done", "bad", 4, 0), // the same label again: no relabel
		machine("fail", 4),
	)))
	require.NoError(t, c.Shutdown(ctx))
	require.Equal(t, map[string]int64{
		cellKey("pass", "pass"): 1, cellKey("fail", "pass"): 1, cellKey("pass", "fail"): 0, cellKey("fail", "fail"): 2,
	}, pairsOf(t, sink, metricPairs))
	require.Empty(t, pairsOf(t, sink, metricRelabels))
	require.Equal(t, int64(0), telSum(t, tel, "otelcol_connector_evalmetrics_agreement_unpaired", "reason", unpairedUnknownLabel))

	// A configured mapping is read the same way.
	c, sink, _ = logsConnector(t, map[string]any{"agreement": map[string]any{
		"labels": map[string]any{"pass": []any{" Yes"}, "fail": []any{"NO"}},
	}}, componenttest.NewNopHost())
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1", machine("pass", 1), label("task_done", "yes", 1, 0), machine("fail", 2), label("task_done", "No ", 2, 0))))
	require.NoError(t, c.Shutdown(ctx))
	require.Equal(t, map[string]int64{
		cellKey("pass", "pass"): 1, cellKey("fail", "pass"): 0, cellKey("pass", "fail"): 0, cellKey("fail", "fail"): 1,
	}, pairsOf(t, sink, metricPairs))
}

// A label without a span id labels the trace's agent case: the same
// target as a label with the agent span's id. For one name, the first of
// the two counts, in any order of arrival; the other is a resend, or a
// relabel when it says otherwise (as evalctl calibrate reads them).
func TestAgreementLabelWithAndWithoutSpanID(t *testing.T) {
	c, sink, _ := logsConnector(t, map[string]any{}, componenttest.NewNopHost())
	ctx := context.Background()
	send := func(ld plog.Logs) { require.NoError(t, c.ConsumeLogs(ctx, ld)) }
	one := func(rs ...result) plog.Logs { return resultLogs("1", rs...) }

	send(one(machine("pass", 1))) // trace 1: machine, spanless, spanned
	send(spanless("task_done", "fail", 1))
	send(one(label("task_done", "fail", 1, 0)))
	send(one(label("task_done", "pass", 2, 0))) // trace 2: spanned, spanless (another label), machine
	send(spanless("task_done", "fail", 2))
	send(one(machine("pass", 2)))
	send(spanless("task_done", "pass", 3)) // trace 3: spanless, machine, spanned
	send(one(machine("fail", 3)))
	send(one(label("task_done", "pass", 3, 0)))
	require.NoError(t, c.Shutdown(ctx))

	require.Equal(t, map[string]int64{
		cellKey("fail", "pass"): 1, cellKey("pass", "pass"): 1, cellKey("pass", "fail"): 1, cellKey("fail", "fail"): 0,
	}, pairsOf(t, sink, metricPairs))
	require.Equal(t, map[string]int64{
		"eval.human.label=fail,gen_ai.agent.name=resource_agent,gen_ai.evaluation.name=task_done,service.name=travel,service.version=1": 1,
	}, pairsOf(t, sink, metricRelabels))
}

// window: a result waits that long for its other side; max_pending: the
// oldest is forgotten beyond it. Both are counted.
func TestAgreementWindowAndMaxPending(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Agreement.Window = time.Hour
	cfg.Agreement.MaxPending = 3
	h := newHarness(t, cfg, nil)
	clock := time.Unix(1e9, 0)
	h.c.now = func() time.Time { return clock }
	ctx := context.Background()
	send := func(rs ...result) { require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1", rs...))) }

	send(label("task_done", "pass", 1, 0))
	clock = clock.Add(time.Hour + time.Second)
	h.flush(t)
	send(machine("pass", 1)) // too late
	require.Equal(t, int64(1), h.sum(t, "otelcol_connector_evalmetrics_agreement_unpaired", "reason", unpairedExpired))

	// Machine 1 and three labels are one more than max_pending: machine 1,
	// the oldest, is forgotten; then label 2.
	send(label("task_done", "pass", 2, 0), label("task_done", "pass", 3, 0), label("task_done", "pass", 4, 0))
	require.Equal(t, int64(1), h.sum(t, "otelcol_connector_evalmetrics_agreement_forgotten", "side", "machine"))
	send(label("task_done", "pass", 5, 0))
	require.Equal(t, int64(1), h.sum(t, "otelcol_connector_evalmetrics_agreement_forgotten", "side", "human"))
	send(machine("pass", 2), machine("fail", 5)) // label 2 was forgotten; label 5 is here
	require.NoError(t, h.c.Shutdown(ctx))
	got := counts(t, h.last(t, metricPairs))
	require.Equal(t, int64(1), got[cellKey("pass", "fail")])
	require.Equal(t, int64(0), got[cellKey("pass", "pass")])
}

// storage: the waiting results survive a restart, and so does the memory
// of labels already counted.
func TestAgreementStorage(t *testing.T) {
	fs := filestorage.NewFactory()
	fcfg := fs.CreateDefaultConfig().(*filestorage.Config)
	fcfg.Directory = t.TempDir()
	ext, err := fs.Create(context.Background(), extensiontest.NewNopSettings(fs.Type()), fcfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
	id := component.MustNewIDWithName("file_storage", "agreement")
	host := extHost{exts: map[component.ID]component.Component{id: ext}}
	conf := map[string]any{"agreement": map[string]any{"storage": id.String()}}
	ctx := context.Background()

	c, _, _ := logsConnector(t, conf, host)
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1", label("task_done", "thumbs_down", 1, 0), machine("pass", 2), label("task_done", "pass", 2, 0))))
	require.NoError(t, c.Shutdown(ctx))

	c, sink, _ := logsConnector(t, conf, host)
	require.NoError(t, c.ConsumeLogs(ctx, resultLogs("1", machine("pass", 1), label("task_done", "pass", 2, 0))))
	require.NoError(t, c.Shutdown(ctx))
	require.Equal(t, map[string]int64{
		cellKey("fail", "pass"): 1, cellKey("pass", "pass"): 0, cellKey("pass", "fail"): 0, cellKey("fail", "fail"): 0,
	}, pairsOf(t, sink, metricPairs), "the label waited across the restart; trace 2's resend did not count again")

	// A storage that is not configured is refused at start.
	fac := NewFactory()
	cfg := fac.CreateDefaultConfig().(*Config)
	missing := component.MustNewIDWithName("file_storage", "nope")
	cfg.Agreement.Storage = &missing
	c2, err := fac.CreateLogsToMetrics(ctx, connectortest.NewNopSettings(Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	require.ErrorContains(t, c2.Start(ctx, host), `agreement: storage: extension "file_storage/nope" is not configured`)
}

type extHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func TestAgreementConfig(t *testing.T) {
	for _, c := range []struct {
		mod  func(*AgreementConfig)
		want string
	}{
		{func(a *AgreementConfig) { a.Pairs = []AgreementPair{{Human: "h"}} }, "both human and machine"},
		{func(a *AgreementConfig) {
			a.Pairs = []AgreementPair{{Human: "h", Machine: "m"}, {Human: "h", Machine: "m"}}
		}, "listed twice"},
		{func(a *AgreementConfig) { a.Labels.Fail = append(a.Labels.Fail, "pass") }, `"pass" is both pass and fail`},
		{func(a *AgreementConfig) { a.Labels.Fail = append(a.Labels.Fail, " Good") }, `" Good" is both pass and fail`},
		{func(a *AgreementConfig) { a.Labels.Pass = append(a.Labels.Pass, " ") }, "empty label"},
		{func(a *AgreementConfig) { a.Labels.Pass = nil }, "at least one label"},
		{func(a *AgreementConfig) { a.Window = 0 }, "window"},
		{func(a *AgreementConfig) { a.MaxPending = 0 }, "max_pending"},
	} {
		cfg := createDefaultConfig()
		c.mod(&cfg.Agreement)
		require.ErrorContains(t, cfg.Validate(), c.want)
	}
}
