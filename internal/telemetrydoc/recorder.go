package telemetrydoc

import (
	"context"
	"slices"
	"sort"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"
)

// Instrument is an instrument a component registered and the attribute
// names seen on its measurements.
type Instrument struct {
	Name       string
	Attributes map[string]bool
}

// Recorder is a metric.MeterProvider that remembers every instrument
// registered through it and the attribute names of every measurement;
// it keeps no values. Collect runs the registered callbacks once.
type Recorder struct {
	embedded.MeterProvider
	mu        sync.Mutex
	insts     map[string]*Instrument
	callbacks []func()
}

var _ metric.MeterProvider = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{insts: map[string]*Instrument{}} }

// Meter implements metric.MeterProvider.
func (r *Recorder) Meter(string, ...metric.MeterOption) metric.Meter { return &recMeter{r: r} }

// Instruments returns the instruments registered so far, by name.
func (r *Recorder) Instruments() []Instrument {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Instrument, 0, len(r.insts))
	for _, i := range r.insts {
		c := *i
		c.Attributes = make(map[string]bool, len(i.Attributes))
		for k := range i.Attributes {
			c.Attributes[k] = true
		}
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Collect runs every registered callback once, recording the attributes
// of what they observe.
func (r *Recorder) Collect() {
	r.mu.Lock()
	cbs := slices.Clone(r.callbacks)
	r.mu.Unlock()
	for _, cb := range cbs {
		cb()
	}
}

func (r *Recorder) register(name string) *Instrument {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.insts[name]; ok {
		return i
	}
	i := &Instrument{Name: name, Attributes: map[string]bool{}}
	r.insts[name] = i
	return i
}

func (r *Recorder) seen(i *Instrument, set attribute.Set) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kv := range set.ToSlice() {
		i.Attributes[string(kv.Key)] = true
	}
}

type recMeter struct {
	noop.Meter
	r *Recorder
}

func (m *recMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return &recInt64{recCore: recCore[int64]{r: m.r, i: m.r.register(name)}}, nil
}

func (m *recMeter) Int64UpDownCounter(name string, _ ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	return &recInt64{recCore: recCore[int64]{r: m.r, i: m.r.register(name)}}, nil
}

func (m *recMeter) Float64Counter(name string, _ ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	return &recFloat64{recCore: recCore[float64]{r: m.r, i: m.r.register(name)}}, nil
}

func (m *recMeter) Int64Histogram(name string, _ ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	return &recInt64{recCore: recCore[int64]{r: m.r, i: m.r.register(name)}}, nil
}

func (m *recMeter) Float64Histogram(name string, _ ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return &recFloat64{recCore: recCore[float64]{r: m.r, i: m.r.register(name)}}, nil
}

// The observable instruments are observed through RegisterCallback (the
// generated builders' Register<Field>Callback); the builders pass no
// inline callbacks.

func (m *recMeter) Int64ObservableGauge(name string, _ ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	return &recInt64Gauge{recObservable: recObservable{m.r.register(name)}}, nil
}

func (m *recMeter) Float64ObservableCounter(name string, _ ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	return &recFloat64Counter{recObservable: recObservable{m.r.register(name)}}, nil
}

func (m *recMeter) RegisterCallback(f metric.Callback, _ ...metric.Observable) (metric.Registration, error) {
	m.r.mu.Lock()
	m.r.callbacks = append(m.r.callbacks, func() { _ = f(context.Background(), &recObserver{r: m.r}) })
	m.r.mu.Unlock()
	return noop.Registration{}, nil
}

// recCore records the attributes of a synchronous instrument's
// measurements; recInt64 and recFloat64 give it the instrument interfaces.
type recCore[N int64 | float64] struct {
	r *Recorder
	i *Instrument
}

func (c recCore[N]) Add(_ context.Context, _ N, opts ...metric.AddOption) {
	c.r.seen(c.i, metric.NewAddConfig(opts).Attributes())
}

func (c recCore[N]) Record(_ context.Context, _ N, opts ...metric.RecordOption) {
	c.r.seen(c.i, metric.NewRecordConfig(opts).Attributes())
}

func (c recCore[N]) Enabled(context.Context) bool { return true }

type recInt64 struct {
	embedded.Int64Counter
	embedded.Int64UpDownCounter
	embedded.Int64Histogram
	recCore[int64]
}

type recFloat64 struct {
	embedded.Float64Counter
	embedded.Float64Histogram
	recCore[float64]
}

// recObservable is an observable instrument; what a callback observes
// with it is recorded on i.
type recObservable struct{ i *Instrument }

func (o recObservable) instrument() *Instrument { return o.i }

type recInt64Gauge struct {
	noop.Int64ObservableGauge
	recObservable
}

type recFloat64Counter struct {
	noop.Float64ObservableCounter
	recObservable
}

type recObserver struct {
	embedded.Observer
	r *Recorder
}

func (o *recObserver) ObserveFloat64(obs metric.Float64Observable, _ float64, opts ...metric.ObserveOption) {
	o.observe(obs, opts)
}

func (o *recObserver) ObserveInt64(obs metric.Int64Observable, _ int64, opts ...metric.ObserveOption) {
	o.observe(obs, opts)
}

func (o *recObserver) observe(obs any, opts []metric.ObserveOption) {
	if inst, ok := obs.(interface{ instrument() *Instrument }); ok {
		o.r.seen(inst.instrument(), metric.NewObserveConfig(opts).Attributes())
	}
}
