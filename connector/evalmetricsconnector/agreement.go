package evalmetricsconnector

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/humanlabel"
	"github.com/evalbridge/evalbridge/internal/storageext"
)

// The agreement join (docs/contract.md §25): a human label
// (gen_ai.evaluation.evaluator.type: human) and the machine result it
// labels, for the same trace, span and evaluation, arrive in either order;
// whichever comes first waits, up to agreement.window, for the other. Both
// sides are remembered for the window even once paired: a machine result
// may be labelled by several human evaluations, and a label resent (or
// changed) later must be recognised.
//
// A label without a span id labels the trace's agent case. The connector
// cannot see which span that is (a result record carries only the span it
// was written for), so such a label pairs with the first machine result of
// that evaluation to arrive for the trace: for an agent-level evaluator,
// which writes one result per trace, its agent case. Labels of span-level
// evaluators (one result per tool call, per LLM call) need their span id.

const (
	attrMachineLabel = "eval.machine.label"
	attrHumanLabel   = "eval.human.label"

	evaluatorTypeHuman = "human"

	unpairedUnknownLabel = "unknown_label"
	unpairedExpired      = "expired"
)

// joinKey identifies one result: its trace, its span (zero: the trace's
// agent case) and its evaluation's name. Fields are exported for gob.
type joinKey struct {
	Trace pcommon.TraceID
	Span  pcommon.SpanID
	Name  string
}

type traceName struct {
	trace pcommon.TraceID
	name  string
}

// dimValue is one dimension's value as a pair's series gets it.
type dimValue struct {
	V  string
	OK bool
}

// machineResult is a machine result waiting for (or remembered after) its
// labels: its label (pass/fail), its evaluator's version, its dimensions.
type machineResult struct {
	Label   string
	Version string
	HasVer  bool
	Dims    []dimValue
	At      int64 // arrival, unix ns
	// Humans is, per human evaluation name that paired with it, the
	// latest label given: a label with the agent span's id and one without
	// a span id label the same result, and the second is a resend or a
	// relabel, not a second pair.
	Humans map[string]string
}

// humanLabel is a human label: the first label given (pass or fail: what
// its pairs count, whichever side came first), the latest (a relabel is a
// change of it), and the machine evaluations it was paired with.
type humanLabel struct {
	Label  string
	Last   string
	At     int64
	Paired []string
}

// arrival is one remembered result, in arrival order.
type arrival struct {
	Human bool
	Key   joinKey
	At    int64
}

// pairEvent is one pair to count.
type pairEvent struct {
	machineName string
	machine     *machineResult
	humanLabel  string
}

// relabelEvent is one relabel to count.
type relabelEvent struct {
	name, label string
	dims        []dimValue
}

// joinEvents is what adding results to the join produced.
type joinEvents struct {
	pairs            []pairEvent
	relabels         []relabelEvent
	unknown, expired int64
	forgotten        [2]int64 // [machine, human]
}

// agreementJoin is the state of the join. It is guarded by the connector's
// mutex.
type agreementJoin struct {
	cfg        *AgreementConfig
	labels     humanlabel.Mapping  // human score labels
	machinesOf map[string][]string // human name -> machine names, when pairs is set
	humansOf   map[string][]string // machine name -> human names, when pairs is set

	machines map[joinKey]*machineResult
	first    map[traceName]pcommon.SpanID // the first machine result of an evaluation in a trace
	humans   map[joinKey]*humanLabel
	order    []arrival
	head     int
	dirty    bool // changed since the last save
}

func newAgreementJoin(cfg *AgreementConfig) *agreementJoin {
	j := &agreementJoin{
		cfg:      cfg,
		labels:   humanlabel.NewMapping(cfg.Labels.Pass, cfg.Labels.Fail),
		machines: map[joinKey]*machineResult{},
		first:    map[traceName]pcommon.SpanID{},
		humans:   map[joinKey]*humanLabel{},
	}
	if len(cfg.Pairs) > 0 {
		j.machinesOf, j.humansOf = map[string][]string{}, map[string][]string{}
		for _, p := range cfg.Pairs {
			j.machinesOf[p.Human] = append(j.machinesOf[p.Human], p.Machine)
			j.humansOf[p.Machine] = append(j.humansOf[p.Machine], p.Human)
		}
	}
	return j
}

func (j *agreementJoin) machinesFor(human string) []string {
	if j.machinesOf == nil {
		return []string{human}
	}
	return j.machinesOf[human]
}

func (j *agreementJoin) humansFor(machine string) []string {
	if j.humansOf == nil {
		return []string{machine}
	}
	return j.humansOf[machine]
}

// humanLabelOf is a human result's label: its score.label through the
// mapping, else score.value 1 (pass) or 0 (fail).
func (j *agreementJoin) humanLabelOf(label string, hasLabel bool, score float64, hasScore bool) (string, bool) {
	if pass, ok := j.labels.Verdict(label); hasLabel && ok {
		if pass {
			return labelPass, true
		}
		return labelFail, true
	}
	switch {
	case hasScore && score == 1:
		return labelPass, true
	case hasScore && score == 0:
		return labelFail, true
	}
	return "", false
}

// addMachine remembers a machine result (the first for its key counts) and
// pairs it with the labels waiting for it.
func (j *agreementJoin) addMachine(key joinKey, m *machineResult, ev *joinEvents) {
	if _, ok := j.machines[key]; ok {
		return
	}
	j.insertMachine(key, m)
	isFirst := j.first[traceName{key.Trace, key.Name}] == key.Span
	for _, h := range j.humansFor(key.Name) {
		keys := []joinKey{{key.Trace, key.Span, h}}
		if isFirst && !key.Span.IsEmpty() {
			keys = append(keys, joinKey{Trace: key.Trace, Name: h})
			// Both waiting: the one that came first is the pair's.
			if a, b := j.humans[keys[0]], j.humans[keys[1]]; a != nil && b != nil && b.At < a.At {
				keys[0], keys[1] = keys[1], keys[0]
			}
		}
		for _, hk := range keys {
			j.tryPair(hk, key.Name, m, ev)
		}
	}
	j.evict(ev)
}

func (j *agreementJoin) insertMachine(key joinKey, m *machineResult) {
	j.machines[key] = m
	tn := traceName{key.Trace, key.Name}
	if _, ok := j.first[tn]; !ok {
		j.first[tn] = key.Span
	}
	j.order = append(j.order, arrival{Key: key, At: m.At})
	j.dirty = true
}

func (j *agreementJoin) tryPair(hk joinKey, machineName string, m *machineResult, ev *joinEvents) {
	h := j.humans[hk]
	if h == nil || slices.Contains(h.Paired, machineName) {
		return
	}
	h.Paired = append(h.Paired, machineName)
	// A relabel found here has no record left to read dimensions from:
	// it gets the machine result's.
	j.meet(hk.Name, h.Label, h.Last, machineName, m, func() []dimValue { return m.Dims }, ev)
}

// meet counts a human label (first: its first label, last: its latest) of
// the evaluation hname with machine result m of machineName: a pair, unless
// another label of hname for the same result paired with m already (one
// with and one without a span id), which makes this one a resend or, when
// it says otherwise than the latest, a relabel.
func (j *agreementJoin) meet(hname, first, last, machineName string, m *machineResult, dims func() []dimValue, ev *joinEvents) {
	j.dirty = true
	if prev, ok := m.Humans[hname]; ok {
		if prev != last {
			m.Humans[hname] = last
			ev.relabels = append(ev.relabels, relabelEvent{name: hname, label: last, dims: dims()})
		}
		return
	}
	if m.Humans == nil {
		m.Humans = map[string]string{}
	}
	m.Humans[hname] = last
	ev.pairs = append(ev.pairs, pairEvent{machineName: machineName, machine: m, humanLabel: first})
}

// machineOf is the machine result of machineName that a label with key
// labels: the one on its span, or without a span id the trace's first.
func (j *agreementJoin) machineOf(key joinKey, machineName string) *machineResult {
	mk := joinKey{key.Trace, key.Span, machineName}
	if key.Span.IsEmpty() {
		sp, ok := j.first[traceName{key.Trace, machineName}]
		if !ok {
			return nil
		}
		mk.Span = sp
	}
	return j.machines[mk]
}

// addHuman remembers a label and pairs it with its machine result if that
// is already here. A resend changes nothing; a different label for the
// same key is a relabel, not a new pair.
func (j *agreementJoin) addHuman(key joinKey, label string, at int64, dims func() []dimValue, ev *joinEvents) {
	if h, ok := j.humans[key]; ok {
		if h.Last != label {
			h.Last = label
			j.dirty = true
			ev.relabels = append(ev.relabels, relabelEvent{name: key.Name, label: label, dims: dims()})
			for _, mname := range h.Paired { // what the results it labels last heard
				if m := j.machineOf(key, mname); m != nil && m.Humans != nil {
					m.Humans[key.Name] = label
				}
			}
		}
		return
	}
	h := &humanLabel{Label: label, Last: label, At: at}
	j.insertHuman(key, h)
	for _, mname := range j.machinesFor(key.Name) {
		if m := j.machineOf(key, mname); m != nil {
			h.Paired = append(h.Paired, mname)
			j.meet(key.Name, label, label, mname, m, dims, ev)
		}
	}
	j.evict(ev)
}

func (j *agreementJoin) insertHuman(key joinKey, h *humanLabel) {
	j.humans[key] = h
	j.order = append(j.order, arrival{Human: true, Key: key, At: h.At})
	j.dirty = true
}

// evict forgets the oldest results beyond max_pending.
func (j *agreementJoin) evict(ev *joinEvents) {
	for len(j.machines)+len(j.humans) > j.cfg.MaxPending && j.head < len(j.order) {
		a := j.order[j.head]
		j.forget(a)
		if a.Human {
			ev.forgotten[1]++
		} else {
			ev.forgotten[0]++
		}
	}
}

// expire forgets the results that arrived a window before now; a label
// that never met its machine result is counted.
func (j *agreementJoin) expire(now int64, ev *joinEvents) {
	limit := now - j.cfg.Window.Nanoseconds()
	for j.head < len(j.order) && j.order[j.head].At <= limit {
		a := j.order[j.head]
		if h := j.humans[a.Key]; a.Human && h != nil && len(h.Paired) == 0 {
			ev.expired++
		}
		j.forget(a)
	}
}

// forget drops the oldest arrival, a.
func (j *agreementJoin) forget(a arrival) {
	j.head++
	j.dirty = true
	if a.Human {
		delete(j.humans, a.Key)
	} else {
		delete(j.machines, a.Key)
		tn := traceName{a.Key.Trace, a.Key.Name}
		if sp, ok := j.first[tn]; ok && sp == a.Key.Span {
			delete(j.first, tn)
		}
	}
	if j.head > 1024 && j.head*2 > len(j.order) {
		n := copy(j.order, j.order[j.head:])
		clear(j.order[n:])
		j.order, j.head = j.order[:n], 0
	}
}

func (j *agreementJoin) pending() int { return len(j.machines) + len(j.humans) }

// saved is what agreement.storage holds: the remembered results in arrival
// order.
type saved struct {
	Order    []arrival
	Machines []*machineResult // one per machine arrival, in order
	Humans   []*humanLabel    // one per human arrival, in order
}

const storageKey = "agreement"

func (j *agreementJoin) encode() ([]byte, error) {
	var s saved
	for _, a := range j.order[j.head:] {
		s.Order = append(s.Order, a)
		if a.Human {
			s.Humans = append(s.Humans, j.humans[a.Key])
		} else {
			s.Machines = append(s.Machines, j.machines[a.Key])
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (j *agreementJoin) decode(b []byte) error {
	var s saved
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return err
	}
	var mi, hi int
	for _, a := range s.Order {
		switch {
		case a.Human && hi < len(s.Humans) && s.Humans[hi] != nil:
			j.insertHuman(a.Key, s.Humans[hi])
			hi++
		case !a.Human && mi < len(s.Machines) && s.Machines[mi] != nil:
			j.insertMachine(a.Key, s.Machines[mi])
			mi++
		default:
			return fmt.Errorf("saved agreement state is inconsistent at %d results", mi+hi)
		}
	}
	j.dirty = false
	return nil
}

// joinResult adds one counted result to the join: a human label or a
// machine result with a pass/fail label. c.mu is held.
func (c *evalMetrics) joinResult(t *tallies, name, label string, hasLabel bool, score float64, hasScore bool,
	attrs, res pcommon.Map, traceID pcommon.TraceID, spanID pcommon.SpanID,
) {
	j := c.join
	at := c.now().UnixNano()
	ev := &t.join
	if typ, _ := strAttr(attrs, attrEvalType); typ == evaluatorTypeHuman {
		l, ok := j.humanLabelOf(label, hasLabel, score, hasScore)
		if !ok {
			ev.unknown++
			return
		}
		j.addHuman(joinKey{traceID, spanID, name}, l, at, func() []dimValue { return c.dimValues(attrs, res) }, ev)
		return
	}
	if !hasLabel || (label != labelPass && label != labelFail) {
		return // error, timeout, or a label of its own: no pair (§25)
	}
	m := &machineResult{Label: label, Dims: c.dimValues(attrs, res), At: at}
	m.Version, m.HasVer = strAttr(attrs, attrEvalVersion)
	j.addMachine(joinKey{traceID, spanID, name}, m, ev)
}

func (c *evalMetrics) dimValues(attrs, res pcommon.Map) []dimValue {
	out := make([]dimValue, len(c.cfg.Dimensions))
	for i, d := range c.cfg.Dimensions {
		out[i].V, out[i].OK = dimension(attrs, res, d)
	}
	return out
}

// countJoin counts the pairs and relabels ev holds into their series.
// c.mu is held.
func (c *evalMetrics) countJoin(ev *joinEvents, over *int64) {
	if len(ev.pairs) == 0 && len(ev.relabels) == 0 {
		return
	}
	now := pcommon.NewTimestampFromTime(c.now())
	for _, p := range ev.pairs {
		k := c.key[:0]
		k = appendPart(k, p.machineName, true)
		k = appendPart(k, p.machine.Version, p.machine.HasVer)
		for _, d := range p.machine.Dims {
			k = appendPart(k, d.V, d.OK)
		}
		group := len(k)
		attrs := func(machineLabel, humanLabel string) func(pcommon.Map) {
			return func(m pcommon.Map) {
				m.PutStr(attrEvalName, p.machineName)
				if p.machine.HasVer {
					m.PutStr(attrEvalVersion, p.machine.Version)
				}
				c.putDimValues(m, p.machine.Dims)
				m.PutStr(attrMachineLabel, machineLabel)
				m.PutStr(attrHumanLabel, humanLabel)
			}
		}
		k = append(appendPart(k, p.machine.Label, true), p.humanLabel...)
		cs, created := c.pairs.get(k, now, over, attrs(p.machine.Label, p.humanLabel))
		cs.count++
		if created {
			// The other three cells of the confusion matrix, at 0: the
			// agreement and kappa rules read all four.
			for _, ml := range []string{labelPass, labelFail} {
				for _, hl := range []string{labelPass, labelFail} {
					c.key2 = append(appendPart(append(c.key2[:0], k[:group]...), ml, true), hl...)
					c.pairs.atZero(c.key2, now, attrs(ml, hl))
				}
			}
		}
		c.key = k
	}
	for _, r := range ev.relabels {
		k := appendPart(c.key[:0], r.name, true)
		for _, d := range r.dims {
			k = appendPart(k, d.V, d.OK)
		}
		k = appendPart(k, r.label, true)
		cs, _ := c.relabels.get(k, now, over, func(m pcommon.Map) {
			m.PutStr(attrEvalName, r.name)
			c.putDimValues(m, r.dims)
			m.PutStr(attrHumanLabel, r.label)
		})
		cs.count++
		c.key = k
	}
}

func (c *evalMetrics) putDimValues(m pcommon.Map, dims []dimValue) {
	for i, d := range dims {
		if d.OK {
			m.PutStr(c.cfg.Dimensions[i], d.V)
		}
	}
}

// startStorage opens agreement.storage and restores what it holds.
func (c *evalMetrics) startStorage(ctx context.Context, host component.Host) error {
	id := c.cfg.Agreement.Storage
	if id == nil {
		return nil
	}
	client, err := storageext.Client(ctx, host, "agreement: storage", *id, component.KindConnector, c.id, c.storageName)
	if err != nil {
		return err
	}
	b, err := client.Get(ctx, storageKey)
	if err != nil {
		_ = client.Close(ctx)
		return fmt.Errorf("agreement: storage %q: reading the waiting results: %w", id, err)
	}
	if len(b) > 0 {
		c.mu.Lock()
		err = c.join.decode(b)
		n := c.join.pending()
		c.mu.Unlock()
		if err != nil {
			// A state that cannot be read is not a reason to stay down:
			// the results it held make no pairs, and that is said.
			c.logger.Error("evalmetrics: agreement: the saved waiting results cannot be read; starting without them",
				zap.String("storage", id.String()), zap.Error(err))
		} else {
			c.logger.Info("evalmetrics: agreement: waiting results restored", zap.Int("results", n))
		}
	}
	c.store = client
	return nil
}

// save writes the join's state to agreement.storage when it changed.
func (c *evalMetrics) save(ctx context.Context) {
	if c.store == nil {
		return
	}
	c.mu.Lock()
	if !c.join.dirty {
		c.mu.Unlock()
		return
	}
	b, err := c.join.encode()
	c.join.dirty = false
	c.mu.Unlock()
	if err == nil {
		err = c.store.Set(ctx, storageKey, b)
	}
	if err != nil {
		c.logger.Warn("evalmetrics: agreement: saving the waiting results failed; a restart now would lose them",
			zap.Error(err))
		c.mu.Lock()
		c.join.dirty = true
		c.mu.Unlock()
	}
}
