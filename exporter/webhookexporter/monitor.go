package webhookexporter

import (
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/stats"
)

// Monitor notification states (docs/contract.md §13).
const (
	StateFiring   = "firing"
	StateResolved = "resolved"
)

// maxSamples bounds the sample trace ids a group keeps (its latest failures).
const maxSamples = 5

// MonitorNotification is one monitor's change of state (or renotify) for
// one group, an element of Payload.Monitors.
type MonitorNotification struct {
	Monitor   string `json:"monitor"`
	State     string `json:"state"`
	Evaluator string `json:"evaluator"`
	// EvaluatorVersion is the version of the results in the window
	// (docs/contract.md §24): a window holds one version.
	EvaluatorVersion string            `json:"evaluator_version"`
	Group            map[string]string `json:"group"`
	Window           string            `json:"window"`
	Cases            int               `json:"cases"`
	Failed           int               `json:"failed"`
	PassRate         float64           `json:"pass_rate"`
	// MeanScore is null when no case in the window carried a score.
	MeanScore *float64 `json:"mean_score"`
	Threshold float64  `json:"threshold"`
	// Figure names what Threshold applies to: pass_rate or mean_score. Not
	// in the JSON body (docs/contract.md §13); for slack and templates.
	Figure string `json:"-"`
	// Since is when the group went firing; for resolved, when the incident
	// it closes began.
	Since           string   `json:"since"`
	Time            string   `json:"time"`
	SampleTraceIDs  []string `json:"sample_trace_ids"`
	SampleTraceURLs []string `json:"sample_trace_urls,omitempty"`
	// Interval is the figure's interval, for monitors with `confidence`.
	Interval *Interval `json:"interval,omitempty"`
	// Forgotten marks the resolved notification of a firing group that had
	// no case for a whole window and gave its slot to a new group
	// (max_groups reached): no longer watched, not known to be fixed.
	Forgotten bool `json:"forgotten,omitempty"`
}

// Interval is the interval of a window's figure at a confidence level: the
// Wilson score interval of the pass rate, the normal interval of the mean
// score.
type Interval struct {
	Confidence float64 `json:"confidence"`
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
}

// sample is one failed case kept as an example for notifications.
type sample struct {
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	at      int64 // unix nanos
}

// groupStatus is the part of a group a notification changes (and a failed
// enqueue puts back).
type groupStatus struct {
	firing   bool
	since    time.Time // when the group last went firing
	lastSent time.Time // last firing notification (renotify)
}

// group is one combination of group_by values. Its memory is fixed: a
// bucketed window and a ring of maxSamples samples.
type group struct {
	values []string
	// version is the evaluator version of the results in win: a result of
	// another version starts a new window (docs/contract.md §24).
	version string
	win     slidingWindow
	groupStatus
	gen        uint64 // bumped by every change of groupStatus
	samples    [maxSamples]sample
	nextSample uint8
	touched    bool
	last       int64 // unix nanos of the group's last case
}

func (g *group) addSample(s sample) {
	g.samples[g.nextSample] = s
	g.nextSample = (g.nextSample + 1) % maxSamples
}

// pending is a notification not yet accepted by the queue, with what is
// needed to undo its change of state if the queue refuses it.
type pending struct {
	m    *monitor
	g    *group
	gen  uint64
	prev groupStatus
	note MonitorNotification
}

// monitor is one configured monitor and its groups.
type monitor struct {
	cfg       MonitorConfig
	width     time.Duration
	threshold float64
	figure    string
	byMean    bool
	maxGroups int
	traceURL  string
	statusKey string
	scoreKey  string
	windowStr string
	minCases  int
	z         float64 // normal quantile of `confidence`; 0 without it
	tel       *monitorTelemetry
	logger    *zap.Logger

	mu              sync.Mutex
	groups          map[string]*group
	touched         []*group
	keyBuf          []byte
	untrackedWarned bool
	// forgotten are the notifications of firing groups evicted for a new
	// group, sent with the next evaluation.
	forgotten []pending
	// noIdleBefore: no group can have been idle for a whole window before
	// this time (unix nanos), so a full table is not searched until then.
	noIdleBefore int64
	// verdicts are counted here and added to the metric once per batch or
	// tick: a metric Add per evaluated group costs more than the evaluation.
	verdicts [len(verdictNames)]int64
}

func newMonitor(cfg MonitorConfig, maxGroups int, traceURL string, tel *monitorTelemetry, logger *zap.Logger) *monitor {
	key, th := cfg.threshold()
	m := &monitor{
		cfg:       cfg,
		width:     cfg.Window / windowBuckets,
		threshold: th,
		figure:    strings.TrimSuffix(key, "_below"),
		byMean:    cfg.MeanScoreBelow != nil,
		maxGroups: maxGroups,
		traceURL:  traceURL,
		statusKey: annotator.StatusKey(cfg.Evaluator),
		scoreKey:  annotator.ScoreKey(cfg.Evaluator),
		windowStr: shortDuration(cfg.Window),
		minCases:  cfg.minCases(),
		tel:       tel,
		logger:    logger,
		groups:    map[string]*group{},
	}
	if cfg.Confidence != nil {
		m.z = zScore(*cfg.Confidence)
	}
	return m
}

// observeSpan counts the span's result of the monitor's evaluator, if it has
// a verdict (passed or failed; skipped, error and timeout are no case).
// The caller holds m.mu.
func (m *monitor) observeSpan(span ptrace.Span, res pcommon.Map, now time.Time) {
	attrs := span.Attributes()
	st, ok := attrs.Get(m.statusKey)
	if !ok || st.Type() != pcommon.ValueTypeStr {
		return
	}
	var isFailed bool
	switch st.Str() {
	case string(evaluators.StatusPassed):
	case string(evaluators.StatusFailed):
		isFailed = true
	default:
		return
	}
	g := m.lookup(attrs, res, now)
	if g == nil {
		return
	}
	m.useVersion(g, resultVersion(span, m.cfg.Evaluator))
	var score float64
	hasScore := false
	if v, ok := attrs.Get(m.scoreKey); ok {
		switch v.Type() {
		case pcommon.ValueTypeDouble:
			score, hasScore = v.Double(), true
		case pcommon.ValueTypeInt:
			score, hasScore = float64(v.Int()), true
		}
	}
	g.win.add(now, m.width, isFailed, score, hasScore)
	g.last = now.UnixNano()
	if isFailed {
		evaluated, _ := evaluatedSpan(span)
		g.addSample(sample{traceID: span.TraceID(), spanID: evaluated, at: now.UnixNano()})
	}
	if !g.touched {
		g.touched = true
		m.touched = append(m.touched, g)
	}
}

// useVersion makes v the version of g's window: the first result of a new
// version starts a new window (its cases and samples are of the old one);
// the group's state (firing or not) carries over, and the new window's
// verdict changes it once it holds min_cases. A result that names no
// version (v "") is of no new version: it joins the window as it is.
func (m *monitor) useVersion(g *group, v string) {
	if v == g.version || v == "" {
		return
	}
	if g.last != 0 {
		g.win = slidingWindow{}
		g.samples = [maxSamples]sample{}
		g.nextSample = 0
		m.logger.Info("Monitor starts a new window: the evaluator's version changed",
			zap.String("monitor", m.cfg.Name), zap.Strings("group", g.values),
			zap.String("from", g.version), zap.String("to", v))
	}
	g.version = v
}

// resultVersion is the evaluator version on the span's
// gen_ai.evaluation.result event for the evaluator name; "" when none says.
func resultVersion(span ptrace.Span, name string) string {
	evs := span.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if ev.Name() != resultEventName {
			continue
		}
		a := ev.Attributes()
		if n, ok := a.Get(attrEvalName); !ok || n.AsString() != name {
			continue
		}
		if v, ok := a.Get(annotator.AttrEvaluatorVersion); ok {
			return v.AsString()
		}
		return ""
	}
	return ""
}

// lookup finds or creates the span's group; nil when max_groups are
// tracked already (the case is counted as untracked).
func (m *monitor) lookup(attrs, res pcommon.Map, now time.Time) *group {
	b := m.keyBuf[:0]
	for i, k := range m.cfg.GroupBy {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, groupValue(attrs, res, k)...)
	}
	m.keyBuf = b
	if g, ok := m.groups[string(b)]; ok {
		return g
	}
	if len(m.groups) >= m.maxGroups && !m.evictIdle(now) {
		m.tel.untracked()
		if !m.untrackedWarned {
			m.untrackedWarned = true
			m.logger.Warn("Monitor tracks max_groups groups already; cases of new groups are counted (otelcol_exporter_webhook_monitor_cases_untracked), not tracked",
				zap.String("monitor", m.cfg.Name), zap.Int("max_groups", m.maxGroups))
		}
		return nil
	}
	g := &group{values: make([]string, len(m.cfg.GroupBy))}
	for i, k := range m.cfg.GroupBy {
		g.values[i] = groupValue(attrs, res, k)
	}
	m.groups[string(b)] = g
	m.tel.groupsAdded(1)
	return g
}

// evictIdle makes room for a new group when the table is full: the group
// whose last case is the oldest, if that is a whole window ago, is
// forgotten. A firing one says so in a resolved notification marked
// forgotten. The caller holds m.mu.
func (m *monitor) evictIdle(now time.Time) bool {
	nowNs := now.UnixNano()
	if nowNs < m.noIdleBefore {
		return false
	}
	win := int64(m.cfg.Window)
	var oldKey string
	var old *group
	for k, g := range m.groups {
		if old == nil || g.last < old.last {
			oldKey, old = k, g
		}
	}
	if old == nil || nowNs-old.last < win || old.touched {
		if old != nil {
			m.noIdleBefore = old.last + win
		}
		return false
	}
	delete(m.groups, oldKey)
	m.tel.groupsAdded(-1)
	m.tel.evicted()
	if old.firing {
		prev := old.groupStatus
		old.firing = false
		old.gen++
		n := m.notification(old, StateResolved, windowTotals{}, now)
		n.Forgotten = true
		m.forgotten = append(m.forgotten, pending{m: m, g: old, gen: old.gen, prev: prev, note: n})
		m.tel.stateChanged(StateResolved)
		m.logger.Info("Monitor forgets a firing group with no case for a whole window to track a new one (max_groups reached); a resolved notification marked forgotten says so",
			zap.String("monitor", m.cfg.Name), zap.Strings("group", old.values), zap.Int("max_groups", m.maxGroups))
	}
	return true
}

// maxGroupValue bounds the bytes of one group_by value kept per group, so
// that max_groups also bounds memory when an attribute is huge.
const maxGroupValue = 256

// groupValue reads a group_by attribute from the span, then its resource;
// "" when neither has it.
func groupValue(attrs, res pcommon.Map, key string) string {
	v, ok := attrs.Get(key)
	if !ok {
		if v, ok = res.Get(key); !ok {
			return ""
		}
	}
	return truncate(v.AsString(), maxGroupValue)
}

// evaluateTouched evaluates the groups observed since the last call.
// The caller holds m.mu.
func (m *monitor) evaluateTouched(now time.Time, out []pending) []pending {
	out = append(out, m.forgotten...)
	clear(m.forgotten)
	m.forgotten = m.forgotten[:0]
	for _, g := range m.touched {
		g.touched = false
		out, _ = m.evaluate(g, now, out)
	}
	clear(m.touched)
	m.touched = m.touched[:0]
	m.flushVerdicts()
	return out
}

// evaluateAll evaluates every group as time passes, and forgets the groups
// that are not firing and whose window is empty.
func (m *monitor) evaluateAll(now time.Time, out []pending) []pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := 0
	for k, g := range m.groups {
		var tot windowTotals
		out, tot = m.evaluate(g, now, out)
		if tot.cases == 0 && !g.firing && !g.touched {
			delete(m.groups, k)
			removed++
		}
	}
	m.tel.groupsAdded(-removed)
	m.flushVerdicts()
	if len(m.groups) < m.maxGroups {
		m.untrackedWarned = false
	}
	return out
}

// evaluate applies the state machine to one group: ok -> firing when the
// window holds min_cases and the figure is below the threshold; firing ->
// resolved (then like ok) when it is back at or above it; below min_cases
// there is no verdict and the state is kept.
func (m *monitor) evaluate(g *group, now time.Time, out []pending) ([]pending, windowTotals) {
	tot := g.win.totals(now, m.width)
	if tot.cases < m.minCases {
		m.verdicts[verdictNone]++
		return out, tot
	}
	var fig float64
	var iv *Interval
	if m.byMean {
		mean := tot.meanScore()
		if mean == nil {
			m.verdicts[verdictNone]++
			return out, tot
		}
		fig = *mean
	} else {
		fig = tot.passRate()
	}
	below, ok := fig < m.threshold, fig >= m.threshold
	if m.z > 0 {
		var lo, hi float64
		if m.byMean {
			var has bool
			if lo, hi, has = meanInterval(tot.scoreSum, tot.scoreSq, tot.scored, m.z); !has {
				m.verdicts[verdictNone]++
				return out, tot
			}
		} else {
			lo, hi = stats.Wilson(tot.cases-tot.failed, tot.cases, m.z)
		}
		iv = &Interval{Confidence: *m.cfg.Confidence, Low: lo, High: hi}
		below, ok = hi < m.threshold, lo >= m.threshold
	}
	switch {
	case below:
		m.verdicts[verdictBelow]++
	case ok:
		m.verdicts[verdictOK]++
	default:
		// The interval straddles the threshold: too few cases to tell;
		// the state is kept.
		m.verdicts[verdictUncertain]++
		return out, tot
	}
	prev := g.groupStatus
	var state string
	switch {
	case below && !g.firing:
		g.firing, g.since, g.lastSent = true, now, now
		state = StateFiring
		m.tel.stateChanged(StateFiring)
	case !below && g.firing:
		g.firing = false
		state = StateResolved
		m.tel.stateChanged(StateResolved)
	case below && m.cfg.Renotify > 0 && now.Sub(g.lastSent) >= m.cfg.Renotify:
		g.lastSent = now
		state = StateFiring
		m.tel.renotified()
	default:
		return out, tot
	}
	g.gen++
	note := m.notification(g, state, tot, now)
	note.Interval = iv
	return append(out, pending{m: m, g: g, gen: g.gen, prev: prev, note: note}), tot
}

func (m *monitor) flushVerdicts() {
	for v, n := range m.verdicts {
		m.tel.evaluated(v, n)
	}
	clear(m.verdicts[:])
}

// undo puts back a group's state after its notification could not be
// queued, so that the next evaluation tries again. A group that changed
// since is left alone.
func (p *pending) undo() {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.g.gen != p.gen {
		return
	}
	p.g.groupStatus = p.prev
	p.g.gen++
}

func (m *monitor) notification(g *group, state string, tot windowTotals, now time.Time) MonitorNotification {
	n := MonitorNotification{
		Monitor:          m.cfg.Name,
		State:            state,
		Evaluator:        m.cfg.Evaluator,
		EvaluatorVersion: g.version,
		Group:            make(map[string]string, len(g.values)),
		Window:           m.windowStr,
		Cases:            tot.cases,
		Failed:           tot.failed,
		PassRate:         tot.passRate(),
		MeanScore:        tot.meanScore(),
		Threshold:        m.threshold,
		Figure:           m.figure,
		Since:            g.since.UTC().Format(time.RFC3339Nano),
		Time:             now.UTC().Format(time.RFC3339Nano),
		SampleTraceIDs:   []string{},
	}
	for i, k := range m.cfg.GroupBy {
		n.Group[k] = g.values[i]
	}
	// Newest first, only those still in the window.
	cutoff := now.Add(-m.cfg.Window).UnixNano()
	for i := range maxSamples {
		s := g.samples[(int(g.nextSample)+maxSamples-1-i)%maxSamples]
		if s.at == 0 || s.at <= cutoff {
			continue
		}
		tid, sid := traceIDString(s.traceID), spanIDString(s.spanID)
		n.SampleTraceIDs = append(n.SampleTraceIDs, tid)
		if m.traceURL != "" {
			n.SampleTraceURLs = append(n.SampleTraceURLs, traceLink(m.traceURL, tid, sid))
		}
	}
	return n
}

// shortDuration renders 15m0s as 15m and 1h0m0s as 1h, as users write them.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
