package evalmetricsconnector

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/connector/evalmetricsconnector/internal/metadata"
)

// Names read and written (docs/contract.md §11, §18).
const (
	eventName      = "gen_ai.evaluation.result"
	attrEventName  = "event.name"
	attrEvalName   = "gen_ai.evaluation.name"
	attrScoreValue = "gen_ai.evaluation.score.value"
	attrScoreLabel = "gen_ai.evaluation.score.label"
	attrErrorType  = "error.type"
	attrOverflow   = "otel.metric.overflow"
	// Provenance (§24): written by eval, or by any producer, on the result.
	attrEvalVersion = "gen_ai.evaluation.evaluator.version"
	attrEvalType    = "gen_ai.evaluation.evaluator.type"

	labelPass = "pass"
	labelFail = "fail"

	reasonNotFinite = "not_finite"
	reasonTooLarge  = "too_large"

	metricResults  = "gen_ai.evaluation.results"
	metricScore    = "gen_ai.evaluation.score"
	metricPairs    = "eval.agreement.pairs"
	metricRelabels = "eval.agreement.relabels"
)

// series is one label set of an emitted metric: its attributes, since
// when it counts, and whether a flush has emitted it yet. A series is
// emitted at 0 by the first flush after it appears, whatever it counted
// meanwhile (§18, "counted from the first result"): Prometheus' increase()
// extrapolates from a series' first sample, so a series whose first sample
// is already 2 loses those 2; one at 0 first loses nothing.
type series struct {
	attrs pcommon.Map
	start pcommon.Timestamp
	shown bool
}

// counterSeries is one label set of gen_ai.evaluation.results.
type counterSeries struct {
	series
	count uint64
}

// exemplar is the latest scored case that fell into a bucket.
type exemplar struct {
	set     bool
	value   float64
	ts      pcommon.Timestamp
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
}

// histSeries is one label set of gen_ai.evaluation.score.
type histSeries struct {
	series
	count     uint64
	sum       float64
	min, max  float64
	buckets   []uint64
	exemplars []exemplar
}

// evalMetrics is one connector instance (logs → metrics or traces →
// metrics).
type evalMetrics struct {
	cfg       *Config
	next      consumer.Metrics
	logger    *zap.Logger
	tel       *metadata.TelemetryBuilder
	newTicker func(time.Duration) (<-chan time.Time, func())
	now       func() time.Time
	id        component.ID
	// storageName is the storage client's name: one per direction
	// (logs, traces), which are two instances.
	storageName string

	mu       sync.Mutex
	results  counterSet
	scores   map[string]*histSeries
	scoreOvr *histSeries
	pairs    counterSet // eval.agreement.pairs
	relabels counterSet // eval.agreement.relabels
	join     *agreementJoin
	store    storage.Client // agreement.storage, from Start to Shutdown
	key      []byte         // scratch for series keys, under mu
	key2     []byte         // scratch for a sibling's key, under mu

	stop chan struct{}
	done chan struct{}
}

var (
	_ connector.Logs   = (*evalMetrics)(nil)
	_ connector.Traces = (*evalMetrics)(nil)
)

func newConnector(set connector.Settings, cfg *Config, next consumer.Metrics,
	newTicker func(time.Duration) (<-chan time.Time, func()),
) (*evalMetrics, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &evalMetrics{
		cfg: cfg, next: next, logger: set.Logger, tel: tel, newTicker: newTicker, now: time.Now,
		id: set.ID, storageName: "agreement",
		results:  newCounterSet(cfg.MaxSeries),
		scores:   make(map[string]*histSeries),
		pairs:    newCounterSet(cfg.MaxSeries),
		relabels: newCounterSet(cfg.MaxSeries),
		join:     newAgreementJoin(&cfg.Agreement),
	}, nil
}

func (c *evalMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start restores the agreement join's waiting results (agreement.storage)
// and begins flushing every flush_interval.
func (c *evalMetrics) Start(ctx context.Context, host component.Host) error {
	if err := c.startStorage(ctx, host); err != nil {
		return err
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	tick, stopTick := c.newTicker(c.cfg.FlushInterval)
	go func() {
		defer close(c.done)
		defer stopTick()
		for {
			select {
			case <-c.stop:
				return
			case <-tick:
				c.flush(context.Background(), false)
			}
		}
	}()
	return nil
}

// Shutdown stops the flushing and emits the metrics one last time.
func (c *evalMetrics) Shutdown(ctx context.Context) error {
	if c.stop == nil {
		return nil
	}
	close(c.stop)
	<-c.done
	c.stop = nil
	c.flush(ctx, true) // and saves
	if c.store != nil {
		err := c.store.Close(ctx)
		c.store = nil
		return err
	}
	return nil
}

// ConsumeLogs counts the gen_ai.evaluation.result records of ld.
func (c *evalMetrics) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.tally(ctx, func(record recordFunc) {
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, rl plog.ResourceLogs, _ plog.ScopeLogs) {
			if !isResultRecord(lr) {
				return
			}
			ts := lr.Timestamp()
			if ts == 0 {
				ts = lr.ObservedTimestamp()
			}
			record(lr.Attributes(), rl.Resource().Attributes(), lr.TraceID(), lr.SpanID(), ts)
		})
	})
	return nil
}

// ConsumeTraces counts the gen_ai.evaluation.result span events of td.
func (c *evalMetrics) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	c.tally(ctx, func(record recordFunc) {
		adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
			for _, ev := range ref.Span.Events().All() {
				if ev.Name() == eventName {
					record(ev.Attributes(), ref.Resource().Attributes(), ref.Span.TraceID(), ref.Span.SpanID(), ev.Timestamp())
				}
			}
		})
	})
	return nil
}

// recordFunc counts one result: its attributes, its resource's, where it
// belongs and when.
type recordFunc func(attrs, res pcommon.Map, tid pcommon.TraceID, sid pcommon.SpanID, ts pcommon.Timestamp)

// tallies are what one batch counted besides the series: results not
// counted, data points that overflowed, scores rejected.
type tallies struct {
	invalid, over       int64
	notFinite, tooLarge int64
	firstRejected       float64 // for the log line
	join                joinEvents
}

// tally counts, under the lock, the results walk gives, then the invalid,
// overflowing and rejected ones among them.
func (c *evalMetrics) tally(ctx context.Context, walk func(recordFunc)) {
	var t tallies
	c.mu.Lock()
	walk(func(attrs, res pcommon.Map, tid pcommon.TraceID, sid pcommon.SpanID, ts pcommon.Timestamp) {
		c.record(&t, attrs, res, tid, sid, ts)
	})
	c.countJoin(&t.join, &t.over)
	c.mu.Unlock()
	c.count(ctx, &t)
}

func (c *evalMetrics) count(ctx context.Context, t *tallies) {
	if t.invalid > 0 {
		c.tel.ConnectorEvalmetricsResultsInvalid.Add(ctx, t.invalid)
		c.logger.Debug("gen_ai.evaluation.result without a gen_ai.evaluation.name string: not counted",
			zap.Int64("results", t.invalid))
	}
	if t.over > 0 {
		c.tel.ConnectorEvalmetricsResultsOverflow.Add(ctx, t.over)
	}
	if t.notFinite > 0 {
		c.tel.ConnectorEvalmetricsScoresRejected.Add(ctx, t.notFinite, rejectedNotFinite)
	}
	if t.tooLarge > 0 {
		c.tel.ConnectorEvalmetricsScoresRejected.Add(ctx, t.tooLarge, rejectedTooLarge)
	}
	if t.join.unknown > 0 {
		c.tel.ConnectorEvalmetricsAgreementUnpaired.Add(ctx, t.join.unknown, unpairedUnknown)
		c.logger.Debug("evalmetrics: agreement: human labels neither in agreement.labels nor a score.value of 1 or 0 make no pair",
			zap.Int64("labels", t.join.unknown))
	}
	if t.join.expired > 0 {
		c.tel.ConnectorEvalmetricsAgreementUnpaired.Add(ctx, t.join.expired, unpairedExpiredOpt)
	}
	if n := t.join.forgotten[0] + t.join.forgotten[1]; n > 0 {
		c.tel.ConnectorEvalmetricsAgreementForgotten.Add(ctx, t.join.forgotten[0], forgottenMachine)
		c.tel.ConnectorEvalmetricsAgreementForgotten.Add(ctx, t.join.forgotten[1], forgottenHuman)
		c.logger.Warn("evalmetrics: agreement: max_pending results remembered; the oldest are forgotten (raise agreement.max_pending or shorten agreement.window)",
			zap.Int64("results", n), zap.Int("max_pending", c.cfg.Agreement.MaxPending))
	}
	if n := t.notFinite + t.tooLarge; n > 0 {
		c.logger.Warn("evalmetrics: scores not finite or beyond max_abs_score are not recorded in gen_ai.evaluation.score (the results are counted)",
			zap.Int64("scores", n), zap.Float64("first", t.firstRejected), zap.Float64("max_abs_score", c.cfg.MaxAbsScore))
	}
}

var (
	rejectedNotFinite = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reasonNotFinite)))
	rejectedTooLarge  = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reasonTooLarge)))

	unpairedUnknown    = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", unpairedUnknownLabel)))
	unpairedExpiredOpt = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", unpairedExpired)))
	forgottenMachine   = metric.WithAttributeSet(attribute.NewSet(attribute.String("side", "machine")))
	forgottenHuman     = metric.WithAttributeSet(attribute.NewSet(attribute.String("side", "human")))
)

func isResultRecord(lr plog.LogRecord) bool {
	if n := lr.EventName(); n != "" {
		return n == eventName
	}
	v, ok := lr.Attributes().Get(attrEventName)
	return ok && v.Type() == pcommon.ValueTypeStr && v.Str() == eventName
}

// record counts one result into t and the series: a result without an
// evaluation name is not counted (t.invalid); data points that went to the
// overflow series and scores not recorded are counted in t. c.mu is held.
func (c *evalMetrics) record(t *tallies, attrs, res pcommon.Map, traceID pcommon.TraceID, spanID pcommon.SpanID, ts pcommon.Timestamp) {
	nameV, ok := attrs.Get(attrEvalName)
	if !ok || nameV.Type() != pcommon.ValueTypeStr || nameV.Str() == "" {
		t.invalid++
		return
	}
	name := nameV.Str()
	label, hasLabel := strAttr(attrs, attrScoreLabel)
	errType, hasErr := strAttr(attrs, attrErrorType)
	score, hasScore := scoreOf(attrs)
	if hasErr {
		hasLabel = false // errors carry no label (§18)
	}
	if hasScore && !hasErr {
		switch {
		case math.IsNaN(score) || math.IsInf(score, 0):
			hasScore = false
			t.notFinite++
		case math.Abs(score) > c.cfg.MaxAbsScore:
			hasScore = false
			t.tooLarge++
		}
		if !hasScore && t.notFinite+t.tooLarge == 1 {
			t.firstRejected = score
		}
	}
	now := pcommon.NewTimestampFromTime(c.now())
	if ts == 0 {
		ts = now
	}

	// The part of the key shared by both metrics: name, provenance (§24),
	// dimensions.
	k := c.key[:0]
	k = appendPart(k, name, true)
	for _, a := range provenance {
		v, ok := strAttr(attrs, a)
		k = appendPart(k, v, ok)
	}
	for _, d := range c.cfg.Dimensions {
		v, ok := dimension(attrs, res, d)
		k = appendPart(k, v, ok)
	}
	dimsEnd := len(k)

	// gen_ai.evaluation.results
	k = appendPart(k, label, hasLabel)
	k = appendPart(k, errType, hasErr)
	cs, created := c.results.get(k, now, &t.over, func(m pcommon.Map) {
		c.putDims(m, name, attrs, res)
		if hasLabel {
			m.PutStr(attrScoreLabel, label)
		}
		if hasErr {
			m.PutStr(attrErrorType, errType)
		}
	})
	if created && hasLabel {
		c.addSibling(k[:dimsEnd], cs, label, now)
	}
	cs.count++

	// gen_ai.evaluation.score
	if hasScore && !hasErr {
		hk := k[:dimsEnd]
		hs, ok := c.scores[string(hk)]
		if !ok {
			if len(c.scores) >= c.cfg.MaxSeries {
				if c.scoreOvr == nil {
					c.scoreOvr = c.newHist(overflowAttrs(), now)
				}
				hs = c.scoreOvr
				t.over++
			} else {
				hs = c.newHist(pcommon.NewMap(), now)
				c.putDims(hs.attrs, name, attrs, res)
				c.scores[string(hk)] = hs
			}
		}
		if hs.count == 0 || score < hs.min {
			hs.min = score
		}
		if hs.count == 0 || score > hs.max {
			hs.max = score
		}
		hs.count++
		hs.sum += score
		b := sort.SearchFloat64s(c.cfg.ScoreBuckets, score) // upper bounds are inclusive
		hs.buckets[b]++
		if !traceID.IsEmpty() {
			hs.exemplars[b] = exemplar{set: true, value: score, ts: ts, traceID: traceID, spanID: spanID}
		}
	}
	c.key = k

	if !traceID.IsEmpty() {
		c.joinResult(t, name, label, hasLabel && !hasErr, score, hasScore, attrs, res, traceID, spanID)
	}
}

// provenance are the §24 attributes a result's series are cut by, in key
// order.
var provenance = [...]string{attrEvalVersion, attrEvalType}

// addSibling creates, at 0, the fail series of a new pass series and the
// reverse (same name, provenance and dimensions), so that a pass-rate rule
// has both sides before the first failure (§18). Within max_series only:
// a sibling never pushes a real result into the overflow series.
func (c *evalMetrics) addSibling(dims []byte, of *counterSeries, label string, now pcommon.Timestamp) {
	other := labelFail
	switch label {
	case labelPass:
	case labelFail:
		other = labelPass
	default:
		return
	}
	k := append(c.key2[:0], dims...)
	k = appendPart(k, other, true)
	k = appendPart(k, "", false)
	c.key2 = k
	c.results.atZero(k, now, func(m pcommon.Map) {
		of.attrs.CopyTo(m)
		m.PutStr(attrScoreLabel, other)
	})
}

// scoreOf reads gen_ai.evaluation.score.value, a double or an int.
func scoreOf(attrs pcommon.Map) (float64, bool) {
	v, ok := attrs.Get(attrScoreValue)
	if !ok {
		return 0, false
	}
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		return v.Double(), true
	case pcommon.ValueTypeInt:
		return float64(v.Int()), true
	}
	return 0, false
}

func (c *evalMetrics) newHist(attrs pcommon.Map, now pcommon.Timestamp) *histSeries {
	n := len(c.cfg.ScoreBuckets) + 1
	return &histSeries{series: series{attrs: attrs, start: now}, buckets: make([]uint64, n), exemplars: make([]exemplar, n)}
}

func (c *evalMetrics) putDims(m pcommon.Map, name string, attrs, res pcommon.Map) {
	m.EnsureCapacity(len(c.cfg.Dimensions) + 5)
	m.PutStr(attrEvalName, name)
	for _, a := range provenance {
		if v, ok := strAttr(attrs, a); ok {
			m.PutStr(a, v)
		}
	}
	for _, d := range c.cfg.Dimensions {
		if v, ok := attrs.Get(d); ok {
			v.CopyTo(m.PutEmpty(d))
		} else if v, ok := res.Get(d); ok {
			v.CopyTo(m.PutEmpty(d))
		}
	}
}

func overflowAttrs() pcommon.Map {
	m := pcommon.NewMap()
	m.PutBool(attrOverflow, true)
	return m
}

func strAttr(m pcommon.Map, k string) (string, bool) {
	v, ok := m.Get(k)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return "", false
	}
	return v.Str(), true
}

// dimension is a dimension's value as the key sees it: from the record's
// attributes, else its resource.
func dimension(attrs, res pcommon.Map, d string) (string, bool) {
	v, ok := attrs.Get(d)
	if !ok {
		v, ok = res.Get(d)
	}
	if !ok {
		return "", false
	}
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str(), true
	}
	return v.AsString(), true
}

// appendPart appends one key part: a presence byte, the length, the value.
func appendPart(k []byte, v string, present bool) []byte {
	if !present {
		return append(k, 0)
	}
	n := len(v)
	k = append(k, 1, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(k, v...)
}

// flush emits every series, cumulative, to the next consumer. A series no
// flush has emitted yet is emitted at 0, except by the last flush
// (final), which emits every count.
func (c *evalMetrics) flush(ctx context.Context, final bool) {
	var t tallies
	c.mu.Lock()
	c.join.expire(c.now().UnixNano(), &t.join)
	c.mu.Unlock()
	c.count(ctx, &t)
	defer c.save(ctx)
	md := c.snapshot(final)
	if md.DataPointCount() == 0 {
		return
	}
	if err := c.next.ConsumeMetrics(ctx, md); err != nil {
		c.logger.Warn("evalmetrics: the next consumer refused the metrics; they go again at the next flush (cumulative)",
			zap.Error(err))
	}
}

func (c *evalMetrics) snapshot(final bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.results.empty() && c.pairs.empty() && c.relabels.empty() {
		return md
	}
	now := pcommon.NewTimestampFromTime(c.now())
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)

	c.results.emit(sm, metricResults, "{result}",
		"Evaluation results, by evaluator, label (pass/fail) or error type, and dimensions.", now, final)
	c.pairs.emit(sm, metricPairs, "{pair}",
		"Human labels paired with the machine result of the same trace, span and evaluation, by the machine's and the human's label (§25).", now, final)
	c.relabels.emit(sm, metricRelabels, "{label}",
		"Human labels that changed an earlier, different label of the same trace, span and evaluation (§25).", now, final)

	if len(c.scores) == 0 && c.scoreOvr == nil {
		return md
	}
	h := newMetric(sm, metricScore, "1",
		"Evaluation scores (gen_ai.evaluation.score.value), by evaluator and dimensions.").SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hdps := h.DataPoints()
	hdps.EnsureCapacity(len(c.scores) + 1)
	emitH := func(s *histSeries) {
		dp := appendPoint(hdps.AppendEmpty, &s.series, now)
		dp.ExplicitBounds().FromRaw(c.cfg.ScoreBuckets)
		if !s.shown && !final {
			s.shown = true
			dp.BucketCounts().FromRaw(make([]uint64, len(s.buckets)))
			return
		}
		s.shown = true
		dp.SetCount(s.count)
		dp.SetSum(s.sum)
		dp.SetMin(s.min)
		dp.SetMax(s.max)
		dp.BucketCounts().FromRaw(s.buckets)
		for i := range s.exemplars {
			e := &s.exemplars[i]
			if !e.set {
				continue
			}
			ex := dp.Exemplars().AppendEmpty()
			ex.SetDoubleValue(e.value)
			ex.SetTimestamp(e.ts)
			ex.SetTraceID(e.traceID)
			ex.SetSpanID(e.spanID)
		}
	}
	for _, s := range c.scores {
		emitH(s)
	}
	if c.scoreOvr != nil {
		emitH(c.scoreOvr)
	}
	return md
}

// counterSet is the series of one emitted counter, at most max of them;
// beyond, one overflow series counts for the rest.
type counterSet struct {
	max    int
	series map[string]*counterSeries
	over   *counterSeries
}

func newCounterSet(maxSeries int) counterSet {
	return counterSet{max: maxSeries, series: make(map[string]*counterSeries)}
}

func (s *counterSet) empty() bool { return len(s.series) == 0 && s.over == nil }

// get is the series of key, created (its attributes written by attrs) if
// new and within max, else the overflow series (*over is incremented).
func (s *counterSet) get(key []byte, now pcommon.Timestamp, over *int64, attrs func(pcommon.Map)) (cs *counterSeries, created bool) {
	if cs, ok := s.series[string(key)]; ok {
		return cs, false
	}
	if len(s.series) >= s.max {
		if s.over == nil {
			s.over = &counterSeries{series: series{attrs: overflowAttrs(), start: now}}
		}
		*over++
		return s.over, false
	}
	cs = &counterSeries{series: series{attrs: pcommon.NewMap(), start: now}}
	attrs(cs.attrs)
	s.series[string(key)] = cs
	return cs, true
}

// atZero creates the series of key at 0 when it is new and within max: a
// series that only completes a set (a sibling) never overflows.
func (s *counterSet) atZero(key []byte, now pcommon.Timestamp, attrs func(pcommon.Map)) {
	if _, ok := s.series[string(key)]; ok || len(s.series) >= s.max {
		return
	}
	cs := &counterSeries{series: series{attrs: pcommon.NewMap(), start: now}}
	attrs(cs.attrs)
	s.series[string(key)] = cs
}

// emit appends the counter with every series to sm; a series no flush has
// emitted yet is emitted at 0 unless final.
func (s *counterSet) emit(sm pmetric.ScopeMetrics, name, unit, description string, now pcommon.Timestamp, final bool) {
	if s.empty() {
		return
	}
	sum := newMetric(sm, name, unit, description).SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dps := sum.DataPoints()
	dps.EnsureCapacity(len(s.series) + 1)
	one := func(cs *counterSeries) {
		n := int64(cs.count)
		if !cs.shown && !final {
			n = 0
		}
		cs.shown = true
		appendPoint(dps.AppendEmpty, &cs.series, now).SetIntValue(n)
	}
	for _, cs := range s.series {
		one(cs)
	}
	if s.over != nil {
		one(s.over)
	}
}

// newMetric appends a metric to sm.
func newMetric(sm pmetric.ScopeMetrics, name, unit, description string) pmetric.Metric {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(description)
	return m
}

// dataPoint is what the points of every series have.
type dataPoint interface {
	Attributes() pcommon.Map
	SetStartTimestamp(pcommon.Timestamp)
	SetTimestamp(pcommon.Timestamp)
}

// appendPoint appends the point of s at now, with its attributes.
func appendPoint[P dataPoint](appendEmpty func() P, s *series, now pcommon.Timestamp) P {
	dp := appendEmpty()
	s.attrs.CopyTo(dp.Attributes())
	dp.SetStartTimestamp(s.start)
	dp.SetTimestamp(now)
	return dp
}
