package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottlspan"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/redact"
)

// Engine scores traces. It is safe for concurrent use once built.
type Engine struct {
	instances []instance
	logger    *zap.Logger
	// judges are the clients of `judges:`; Start and Shutdown run them.
	judges map[string]*judge.Client
	// pool runs the judge and remote tasks of every trace, each judge (and
	// each remote evaluator) on its own workers, as many as its
	// max_concurrency; maxPending bounds the queues together.
	pool       *pool
	maxPending int
	// hasBackground: some instance runs in the background (judge or
	// remote), so Start starts the pool.
	hasBackground bool

	// Judge work outlives ScoreTraceAsync: tasks and their finishers are
	// counted in background and stopped by lateCancel at Shutdown.
	background sync.WaitGroup
	lateCtx    context.Context
	lateCancel context.CancelFunc
	// lateGrace is how long a judge call may go on after its trace's
	// deadline to deliver a late result.
	lateGrace time.Duration
	lateMu    sync.RWMutex
	lateSink  LateSink

	// levels are the case levels the instances need.
	levels adapter.Options
	// estimateOnly: judges record their calls instead of making them, and
	// remote evaluators are skipped (evalctl estimate; SetEstimateOnly).
	estimateOnly bool
	// The sessions side (session.go).
	hasSessions   bool
	maxFieldBytes int
	turnMu        sync.RWMutex
	turnSink      TurnOriginSink
	// redactor masks what leaves and what is written back (redaction.go);
	// nil when `redaction:` turns everything off.
	redactor *redact.Redactor
	// cleanInfo is the last agent and model names redaction left as they
	// were (redactInfo): a service's cases repeat them.
	cleanInfo atomic.Pointer[annotator.CaseInfo]
}

type instance struct {
	*evaluators.Instance
	// when is nil when the instance runs on every case.
	when *ottl.ConditionSequence[*ottlspan.TransformContext]
	// sampleBelow is sample_rate scaled to the uint64 range.
	sampleBelow uint64
	sampleAll   bool
}

// Evaluation is the outcome of the evaluators on one case.
type Evaluation struct {
	Case    *adapter.Case
	Results []evaluators.Result
}

// Report is what scoring one trace produced.
type Report struct {
	Evaluations []Evaluation
	// Problems are what the adapter could not read (bad input).
	Problems []string
}

// New builds an engine from a validated config.
// Judge clients are built but not started: call Start before ScoreTrace
// when the config has `judges:`, and Shutdown at the end.
func New(cfg *Config, set component.TelemetrySettings) (_ *Engine, err error) {
	e := &Engine{logger: set.Logger, judges: map[string]*judge.Client{}, lateGrace: cfg.Timeout}
	e.lateCtx, e.lateCancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			// Judge clients built so far registered metric callbacks.
			err = errors.Join(err, e.Shutdown(context.Background()))
		}
	}()
	if cfg.LateResults == LateResultsDrop {
		e.lateGrace = 0
	}
	// NoMetrics: the results are written onto spans and into reports,
	// neither of which carries Result.Metrics (one map a result less).
	deps := evaluators.Deps{Logger: set.Logger, Judges: map[string]evaluators.Judge{}, Telemetry: set, NoMetrics: true,
		JudgeConfigs: cfg.Judges}
	if e.redactor, err = newRedactor(cfg.Redaction, set); err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	if e.redactor != nil {
		deps.RedactBody = e.redactor.JSON
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Judges)) {
		c, err := judge.New(name, cfg.Judges[name], set)
		if err != nil {
			return nil, fmt.Errorf("judges: %s: %w", name, err)
		}
		e.judges[name] = c
		deps.Judges[name] = c
		if e.redactor != nil {
			deps.Judges[name] = redactedJudge{Judge: c, r: e.redactor}
		}
		e.maxFieldBytes = max(e.maxFieldBytes, c.MaxFieldBytes())
	}
	insts, err := evaluators.Build(cfg.Evaluators, deps)
	if err != nil {
		return nil, err
	}
	e.maxPending = cfg.MaxPendingJudgeTasks
	if e.maxPending <= 0 {
		e.maxPending = DefaultMaxPendingJudgeTasks
	}
	// One lane of workers per judge and per async evaluator (remote), each
	// as wide as its max_concurrency: a judge that hangs holds its own.
	var lanes []laneSpec
	for _, in := range insts {
		if in.Background() {
			lanes = append(lanes, laneSpec{key: laneOf(in), workers: e.laneWorkers(in), attr: laneAttr(in)})
		}
	}
	if e.pool, err = newPool(lanes, e.maxPending, set); err != nil {
		return nil, fmt.Errorf("judge task metrics: %w", err)
	}
	for _, in := range insts {
		e.hasBackground = e.hasBackground || in.Background()
	}
	// The conversation is decoded only when some evaluator reads it.
	e.levels.SkipConversation = true
	for _, in := range insts {
		e.levels.SkipConversation = e.levels.SkipConversation && in.ConversationFree
		e.levels.Attributes = e.levels.Attributes || in.NeedsAttributes
		ins := instance{Instance: in}
		if len(in.When) > 0 {
			seq, err := parseWhen(in.When, set)
			if err != nil {
				return nil, fmt.Errorf("evaluator %q: when: %w", in.Name, err)
			}
			ins.when = seq
		}
		switch in.Level {
		case adapter.LevelLLM:
			e.levels.LLMCases = true
		case adapter.LevelAgent:
			e.levels.AgentCases = true
		case adapter.LevelSession:
			e.levels.AgentCases, e.hasSessions = true, true // turns are agent cases
		}
		ins.sampleAll = in.SampleRate >= 1
		ins.sampleBelow = uint64(in.SampleRate * math.MaxUint64)
		e.instances = append(e.instances, ins)
	}
	return e, nil
}

// Start starts the judge clients and the evaluators that hold clients
// (remote; see evaluators.Lifecycle): it builds their HTTP clients from
// confighttp, so auth extensions of the host apply. Without either it does
// nothing. When a client fails to start, the engine shuts itself down (every
// client, started or not, releases what New registered), so that no caller
// has to: evalctl and tests do not call Shutdown after a failed Start. A
// collector (v0.165) does (otelcol shuts the service down when Start fails),
// and Shutdown is safe twice.
func (e *Engine) Start(ctx context.Context, host component.Host) error {
	for _, name := range slices.Sorted(maps.Keys(e.judges)) {
		if err := e.judges[name].Start(ctx, host); err != nil {
			return errors.Join(err, e.Shutdown(ctx))
		}
	}
	for _, in := range e.instances {
		if lc, ok := in.Evaluator.(evaluators.Lifecycle); ok {
			if err := lc.Start(ctx, host); err != nil {
				return errors.Join(err, e.Shutdown(ctx))
			}
		}
	}
	if e.hasBackground {
		e.pool.start()
	}
	return nil
}

// Shutdown waits for the judge work under way and queued — traces still
// waiting for a judge are finished (done is called) and late results
// delivered — until ctx ends, then cancels what is left; it returns once no
// goroutine of the engine runs, and stops the judge clients. Judge work
// submitted after Shutdown is skipped. It is safe without Start and twice.
func (e *Engine) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, e.lateCancel)
	if e.pool != nil {
		e.pool.stop() // runs what is queued, then the workers end
	}
	e.background.Wait()
	stop()
	e.lateCancel()
	var errs []error
	for _, c := range e.judges {
		if err := c.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, in := range e.instances {
		if lc, ok := in.Evaluator.(evaluators.Lifecycle); ok {
			if err := lc.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Instances lists the configured evaluator instances.
func (e *Engine) Instances() []*evaluators.Instance {
	out := make([]*evaluators.Instance, len(e.instances))
	for i := range e.instances {
		out[i] = e.instances[i].Instance
	}
	return out
}

// ScoreTrace adapts one trace's spans into cases, runs every evaluator whose
// level, `when` conditions and sample rate select the case, and writes the
// results onto the spans the cases came from. The spans are edited in place:
// the caller must own them. When ctx ends, evaluations not yet finished are
// reported as `timeout` and the trace still gets what finished.
func (e *Engine) ScoreTrace(ctx context.Context, spans []adapter.SpanRef) Report {
	ch := make(chan Report, 1)
	e.ScoreTraceAsync(ctx, spans, ScoreOptions{}, func(r Report) { ch <- r })
	return <-ch
}

// ScoreOptions are what a caller that owns a trace's spans tells
// ScoreTraceAsync besides the spans; the zero value asks for nothing.
type ScoreOptions struct {
	// Progress, when set, lets the caller take the trace back before
	// ScoreTraceAsync is done (Progress.TakeOver).
	Progress *Progress
	// Claim, when set, is called once, just before the results are written
	// onto the spans. When it returns false (the caller no longer owns the
	// spans, e.g. it forwarded them because an evaluator outran the
	// deadline), nothing is written and done is called with no evaluations.
	// It runs on the goroutine that finishes the trace.
	Claim func() bool
	// Origin, when set, is called on the span of each case that may give a
	// late result, and of each turn, while the caller still owns the spans;
	// the late-result sink and the turn sink get what it returned. The
	// processor uses it to send those through the pipeline the span came.
	Origin func(adapter.SpanRef) any
}

// ScoreTraceAsync is ScoreTrace without the wait: deterministic evaluators
// run before it returns; when the trace needs a judge, the judge calls run
// in the background and done is called once they have all finished or ctx
// has ended. Without judge work, done is called before it returns. Either
// way the spans belong to the engine until done is called, and done is
// called exactly once. A judge call still under way when ctx ends goes on
// (for at most the config's `timeout` more) and, with `late_results: span`,
// its result is emitted as a span of its own (see SetLateResults).
func (e *Engine) ScoreTraceAsync(ctx context.Context, spans []adapter.SpanRef, opts ScoreOptions, done func(Report)) {
	// Only the case levels some evaluator runs on are built: an agent-only
	// config does not decode every LLM span's messages.
	cases, problems := adapter.AdaptWith(spans, e.levels)
	rep := Report{Problems: problems}
	prog := opts.Progress
	if !prog.begin(e, cases, spans) {
		done(rep) // taken over while adapting: the spans are not ours any more
		return
	}
	e.recordTurns(cases, spans, opts.Origin)
	if len(cases) == 0 {
		done(rep)
		return
	}
	// the span a case came from: the last span with its id
	find := func(id pcommon.SpanID) (adapter.SpanRef, bool) {
		for k := len(spans) - 1; k >= 0; k-- {
			if spans[k].Span.SpanID() == id {
				return spans[k], true
			}
		}
		return adapter.SpanRef{}, false
	}
	if len(spans)*len(cases) > 256 {
		byID := make(map[pcommon.SpanID]adapter.SpanRef, len(spans))
		for _, s := range spans {
			byID[s.Span.SpanID()] = s
		}
		find = func(id pcommon.SpanID) (adapter.SpanRef, bool) {
			ref, ok := byID[id]
			return ref, ok
		}
	}
	var (
		// all is every scored case, in one allocation made at the first
		// (sized for every case left, so &all[k] stays put), and so are
		// their results and, with a Progress, their instances.
		all      []scoredCase
		results  []evaluators.Result
		insts    []*instance
		tasks    []*judgeTask
		selBuf   [16]*instance
		selected = selBuf[:0]
	)
	for i := range cases {
		c := &cases[i]
		ref, ok := adapter.SpanRef{}, false
		if k := c.SpanIndex; k >= 0 && k < len(spans) && spans[k].Span.SpanID() == c.SpanID {
			ref, ok = spans[k], true // exact, even when another span shares the id
		} else {
			ref, ok = find(c.SpanID)
		}
		if !ok {
			if !prog.reach(i, all) {
				done(rep)
				return
			}
			continue
		}
		selected = selected[:0]
		for j := range e.instances {
			in := &e.instances[j]
			if in.Level != c.Level || !in.sampled(c.TraceID) || !e.matches(ctx, in, ref) {
				continue
			}
			selected = append(selected, in)
		}
		if len(selected) == 0 {
			if !prog.reach(i, all) {
				done(rep)
				return
			}
			continue
		}
		if all == nil {
			// at most every case left, each with at most the instances
			// of its level
			n := 0
			for k := i; k < len(cases); k++ {
				n += e.perLevel(cases[k].Level)
			}
			all = make([]scoredCase, 0, len(cases)-i)
			results = make([]evaluators.Result, 0, n)
			if prog != nil {
				insts = make([]*instance, 0, n)
			}
		}
		// Sized once: judge tasks write into their own element.
		n := len(results)
		results = results[:n+len(selected)]
		all = append(all, scoredCase{c: c, ref: ref, results: results[n : n+len(selected) : n+len(selected)]})
		sc := &all[len(all)-1]
		if prog != nil {
			insts = append(insts, selected...)
			sc.insts = insts[n : n+len(selected) : n+len(selected)]
		}
		if !prog.reach(i, all) {
			done(rep)
			return
		}
		caseTasks, ok := e.planCase(ctx, selected, sc, prog, opts.Origin)
		if !ok {
			// Taken over while an evaluator ran: the spans are
			// forwarded; read nothing of them any more.
			done(rep)
			return
		}
		tasks = append(tasks, caseTasks...)
	}
	if !prog.done() {
		done(rep)
		return
	}
	if len(tasks) == 0 {
		e.finish(rep, all, opts.Claim, done)
		return
	}
	// the judge tasks finish the trace (a closure made only for them)
	e.runJudgeTasks(ctx, tasks, func() { e.finish(rep, all, opts.Claim, done) })
}

// finish writes the results of all onto their spans (unless claim says
// the caller gave the spans up) and calls done with the report.
func (e *Engine) finish(rep Report, all []scoredCase, claim func() bool, done func(Report)) {
	if claim != nil && !claim() {
		// The caller has given the spans up (forwarded them at its
		// deadline): they must not be written any more.
		done(rep)
		return
	}
	now := pcommon.NewTimestampFromTime(time.Now())
	if len(all) > 0 {
		rep.Evaluations = make([]Evaluation, 0, len(all))
	}
	for k := range all {
		sc := &all[k]
		e.redactResults(sc.results)
		annotator.AnnotateCase(sc.ref.Span, sc.results, now, e.redactInfo(annotator.CaseInfo{AgentName: sc.c.AgentName, Model: sc.c.Model}))
		rep.Evaluations = append(rep.Evaluations, Evaluation{Case: sc.c, Results: sc.results})
	}
	done(rep)
}

// perLevel is the number of instances that run on cases of level l.
func (e *Engine) perLevel(l adapter.Level) int {
	n := 0
	for j := range e.instances {
		if e.instances[j].Level == l {
			n++
		}
	}
	return n
}

type scoredCase struct {
	c       *adapter.Case
	ref     adapter.SpanRef
	results []evaluators.Result
	// insts are the instances of results, kept only with a Progress.
	insts []*instance
}

func runInstance(ctx context.Context, in *instance, c *adapter.Case) evaluators.Result {
	if ctx.Err() != nil {
		return in.Stamp(evaluators.Result{Status: evaluators.StatusTimeout, Reason: "the trace's evaluation timeout passed before this evaluator ran"})
	}
	return in.Evaluate(ctx, c)
}

// laneOf is the pool lane of a background instance: its judge's, shared
// by every instance of that judge, or its own (remote).
func laneOf(in *evaluators.Instance) string {
	if in.Judge != "" {
		return fmt.Sprintf("judge %q", in.Judge)
	}
	return fmt.Sprintf("evaluator %q", in.Name)
}

// laneAttr names an instance's lane on the pool's metrics.
func laneAttr(in *evaluators.Instance) attribute.KeyValue {
	if in.Judge != "" {
		return attribute.String("judge", in.Judge)
	}
	return attribute.String("evaluator", in.Name)
}

// laneWorkers is the max_concurrency of the service the instance waits on.
func (e *Engine) laneWorkers(in *evaluators.Instance) int {
	if c := e.judges[in.Judge]; in.Judge != "" && c != nil {
		return c.MaxConcurrency()
	}
	if b, ok := in.Evaluator.(interface{ MaxConcurrency() int }); ok {
		return b.MaxConcurrency()
	}
	return 1
}

// background says the instance waits on a remote service (a judge): it
// runs as a Task on the engine's pool, bounded by max_pending_judge_tasks,
// instead of inline. Other remote evaluators join here.
func (in *instance) background() bool { return in.Background() }

// sampled decides by trace id alone, so every collector that sees the trace
// makes the same choice.
func (in *instance) sampled(id pcommon.TraceID) bool {
	if in.sampleAll {
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write(id[:])
	return h.Sum64() < in.sampleBelow
}

func (e *Engine) matches(ctx context.Context, in *instance, ref adapter.SpanRef) bool {
	if in.when == nil {
		return true
	}
	tctx := ottlspan.NewTransformContext(ref.ResourceSpans, ref.ScopeSpans, ref.Span)
	defer tctx.Close()
	ok, err := in.when.Eval(ctx, tctx)
	if err != nil {
		e.logger.Warn("evaluator `when` condition failed; the evaluator is not run on this span",
			zap.String("evaluator", in.Name), zap.Error(err))
		return false
	}
	return ok
}

func parseWhen(conds []string, set component.TelemetrySettings) (*ottl.ConditionSequence[*ottlspan.TransformContext], error) {
	parser, err := ottlspan.NewParser(ottlfuncs.StandardConverters[*ottlspan.TransformContext](), set)
	if err != nil {
		return nil, err
	}
	parsed, err := parser.ParseConditions(conds)
	if err != nil {
		return nil, err
	}
	// any-of: a condition that cannot be evaluated on a span (logged) must
	// not hide another that holds.
	seq := ottlspan.NewConditionSequence(parsed, set, ottlspan.WithConditionSequenceErrorMode(ottl.IgnoreError))
	return &seq, nil
}

func validateConditions(cfgs []evaluators.Config) error {
	set := component.TelemetrySettings{Logger: zap.NewNop()}
	for _, c := range cfgs {
		if len(c.When) == 0 {
			continue
		}
		if _, err := parseWhen(c.When, set); err != nil {
			return fmt.Errorf("evaluator %q: when: %w", c.InstanceName(), err)
		}
	}
	return nil
}
