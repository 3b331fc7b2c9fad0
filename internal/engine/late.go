package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/evaluators"
)

// Values of `late_results`.
const (
	LateResultsSpan = "span"
	LateResultsDrop = "drop"
)

// LateScopeName is the instrumentation scope of late-result spans.
const LateScopeName = "github.com/evalbridge/evalbridge/internal/engine"

// judgeTask is one judge evaluation of one case, run in the background
// by the engine's pool (it is a Task). When later evaluators of the case
// wait for its result (run_if), they are further steps of the same task,
// run in config order after it (runif.go).
type judgeTask struct {
	steps []taskStep
	c     *adapter.Case
	job   *judgeJob
	// prior are the case's results run_if may read that were known when
	// the task was built (the evaluators that ran inline); nil when no
	// step has run_if.
	prior map[string]evaluators.Result

	// mu guards the hand-over between the task and its trace's finisher:
	// a result that arrives before the finisher gave up goes into its
	// step's slot; one that arrives after (abandoned) is a late result.
	mu        sync.Mutex
	abandoned bool

	// What a late-result span needs, copied while the engine still owns the
	// trace's spans (they are forwarded once the finisher is done).
	target  *lateTarget
	started time.Time
}

// taskStep is one evaluator instance of a task and where its result goes.
type taskStep struct {
	in       *instance
	slot     *evaluators.Result
	finished bool
}

type lateTarget struct {
	traceID  pcommon.TraceID
	spanID   pcommon.SpanID
	spanName string
	resource pcommon.Resource
	// describing is the evaluated span's describing attributes
	// (annotator.Describing), so monitors group a late result by them as
	// they group results on time.
	describing pcommon.Map
	// info is the case's agent and model, for the result events.
	info annotator.CaseInfo
	// origin is what the caller's ScoreOptions.Origin said of the
	// evaluated span; the late sink gets it back.
	origin any
}

// LateSink takes a batch holding one late-result span, and what the
// scoring call's ScoreOptions.Origin said of the evaluated span (nil
// without one).
type LateSink func(td ptrace.Traces, origin any)

// SetLateResults sets where late results go: a function that takes a batch
// holding one late-result span. The processor forwards it to the next
// consumer. Without a sink (evalctl), or with `late_results: drop`, a judge
// that answers after its trace's timeout is not waited for.
func (e *Engine) SetLateResults(sink LateSink) {
	e.lateMu.Lock()
	e.lateSink = sink
	e.lateMu.Unlock()
}

func (e *Engine) sink() LateSink {
	e.lateMu.RLock()
	defer e.lateMu.RUnlock()
	if e.lateGrace <= 0 {
		return nil
	}
	return e.lateSink
}

// newJudgeTask builds the task of one judge instance on case c. target is
// the case's late target, shared by its tasks (only read once built): it is
// built on the first task that needs it, so a case with many judge
// evaluators copies its resource once.
func (e *Engine) newJudgeTask(in *instance, c *adapter.Case, ref adapter.SpanRef, origin func(adapter.SpanRef) any, target **lateTarget, slot *evaluators.Result) *judgeTask {
	t := &judgeTask{steps: []taskStep{{in: in, slot: slot}}, c: c}
	if e.sink() != nil {
		if *target == nil {
			res := pcommon.NewResource()
			ref.Resource().CopyTo(res)
			*target = &lateTarget{traceID: c.TraceID, spanID: c.SpanID, spanName: ref.Span.Name(), resource: res,
				describing: describingOf(ref.Span.Attributes()), info: annotator.CaseInfo{AgentName: c.AgentName, Model: c.Model}}
			if origin != nil {
				(*target).origin = origin(ref)
			}
		}
		t.target = *target
	}
	return t
}

// judgeJob is the judge work of one trace: its tasks, and the finish that
// runs once, when the last task is in or the trace's context ends,
// whichever comes first. No goroutine waits for it: the last task calls
// finish, or context.AfterFunc does at the deadline.
type judgeJob struct {
	e         *Engine
	jctx      context.Context
	cancel    context.CancelFunc
	tasks     []*judgeTask
	remaining atomic.Int32
	once      sync.Once
	finish    func()

	mu        sync.Mutex // guards stopAfter: the AfterFunc may fire before it is set
	stopAfter func() bool
}

// Run is the Task: run the evaluation, then count it in.
func (t *judgeTask) Run() {
	t.job.e.runJudgeTask(t.job.jctx, t)
	t.job.done()
}

func (j *judgeJob) done() {
	if j.remaining.Add(-1) == 0 {
		j.cancel() // the last task out releases the judge context
		j.finishOnce()
	}
}

func (j *judgeJob) finishOnce() {
	j.once.Do(func() {
		j.mu.Lock()
		stop := j.stopAfter
		j.mu.Unlock()
		if stop != nil {
			stop()
		}
		j.finish()
		j.e.background.Done()
	})
}

// runJudgeTasks queues the tasks on the engine's pool and arranges for
// finish to run once all are in or ctx has ended. Nothing here blocks the
// caller. A task the pool refuses (the backlog is at max_pending_judge_tasks,
// or the engine is not running) is reported `skipped` with the reason.
func (e *Engine) runJudgeTasks(ctx context.Context, tasks []*judgeTask, finish func()) {
	jctx, cancel := e.judgeContext(ctx)
	job := &judgeJob{e: e, jctx: jctx, cancel: cancel, tasks: tasks, finish: finish}
	job.remaining.Store(int32(len(tasks)) + 1) // +1 until every task is submitted
	e.background.Add(1)
	job.mu.Lock()
	job.stopAfter = context.AfterFunc(ctx, func() {
		e.abandon(tasks)
		job.finishOnce()
	})
	job.mu.Unlock()
	for _, t := range tasks {
		t.job = job
		key := laneOf(t.steps[0].in.Instance) // a task's later steps wait on its first: they share its lane
		if err := e.pool.submit(key, t); err != nil {
			t.refused(e.refusal(key, err))
			job.done()
		}
	}
	job.done()
}

// refusal is the result of a judge task the pool did not take: skipped
// when the backlog is full (the bound doing its job), error when the
// engine's workers are not running (a lifecycle mistake).
func (e *Engine) refusal(key string, err error) (evaluators.Status, string) {
	if errors.Is(err, errPoolFull) {
		return evaluators.StatusSkipped, fmt.Sprintf("not evaluated: %d tasks for %s are already waiting "+
			"(its share of max_pending_judge_tasks %d); it cannot keep up with the traces", e.pool.share(key), key, e.maxPending)
	}
	return evaluators.StatusError, "not evaluated: " + err.Error()
}

// refused records a task the pool did not take.
func (t *judgeTask) refused(status evaluators.Status, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.steps {
		st := &t.steps[i]
		st.finished = true
		if !t.abandoned {
			*st.slot = st.in.Stamp(evaluators.Result{Status: status, Reason: reason})
		}
	}
}

// judgeContext bounds a trace's judge calls. With late results on, a call
// may outlive the trace's deadline by lateGrace (and delivers its result as
// a span of its own); Shutdown cuts every call short via lateCtx.
func (e *Engine) judgeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.sink() == nil {
		jctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(e.lateCtx, cancel)
		return jctx, func() { stop(); cancel() }
	}
	jctx, cancel := context.WithCancel(e.lateCtx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		jctx, cancelDeadline = context.WithDeadline(jctx, deadline.Add(e.lateGrace))
		return jctx, func() { cancelDeadline(); cancel() }
	}
	return jctx, cancel
}

func (e *Engine) runJudgeTask(jctx context.Context, t *judgeTask) {
	// prior is shared by the case's tasks: a task of several steps reads
	// its own earlier results from a copy.
	seen, own := t.prior, false
	if seen != nil && len(t.steps) > 1 {
		seen, own = maps.Clone(seen), true
	}
	for i := range t.steps {
		st := &t.steps[i]
		t.started = time.Now()
		r := e.evaluate(jctx, st.in, t.c, seen)
		if own {
			seen[st.in.Name] = r
		}
		t.mu.Lock()
		st.finished = true
		if !t.abandoned {
			*st.slot = r
			t.mu.Unlock()
			continue
		}
		t.mu.Unlock()
		e.deliverLate(jctx, t, r)
	}
}

// abandon marks the tasks that have not answered as `timeout` on the trace;
// their results, when they come, are late.
func (e *Engine) abandon(tasks []*judgeTask) {
	reason := " did not answer within the trace's evaluation timeout"
	if e.sink() != nil {
		reason += "; a late result follows as a span linked to this one"
	}
	for _, t := range tasks {
		t.mu.Lock()
		for i := range t.steps {
			st := &t.steps[i]
			if st.finished {
				continue
			}
			who := "the judge"
			switch {
			case i > 0 && !t.steps[i-1].finished:
				who = "an evaluator its run_if waits for" // its turn had not come
			case st.in.Judge == "" && st.in.Async:
				who = "the remote evaluator" // an async evaluator without a judge
			}
			t.abandoned = true
			*st.slot = st.in.Stamp(evaluators.Result{Status: evaluators.StatusTimeout, Reason: who + reason})
		}
		t.mu.Unlock()
	}
}

// deliverLate emits a late result as its own span: in the evaluated span's
// trace, its child and linked to it, with the same eval.* attributes and
// gen_ai.evaluation.result event the evaluated span would have carried.
func (e *Engine) deliverLate(jctx context.Context, t *judgeTask, r evaluators.Result) {
	sink := e.sink()
	if sink == nil || t.target == nil || r.Status == evaluators.StatusTimeout || jctx.Err() != nil {
		e.logger.Debug("late judge result not delivered", zap.String("evaluator", r.Name),
			zap.String("status", string(r.Status)))
		return
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	t.target.resource.CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(LateScopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(t.target.traceID)
	sp.SetSpanID(newSpanID())
	sp.SetParentSpanID(t.target.spanID)
	sp.SetName("evaluation " + r.Name)
	sp.SetKind(ptrace.SpanKindInternal)
	now := time.Now()
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t.started))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	link := sp.Links().AppendEmpty()
	link.SetTraceID(t.target.traceID)
	link.SetSpanID(t.target.spanID)
	attrs := sp.Attributes()
	t.target.describing.CopyTo(attrs)
	copied := []string{AttrTargetSpanName}
	for k, v := range attrs.All() {
		if v.Type() == pcommon.ValueTypeStr {
			copied = append(copied, k)
		}
	}
	attrs.PutBool(AttrLate, true)
	attrs.PutBool(adapter.AttrGenerated, true) // never a case again (loop safety)
	attrs.PutStr(AttrTargetSpanName, t.target.spanName)
	results := []evaluators.Result{r}
	e.redactResults(results)
	e.redactCopied(attrs, copied...)
	annotator.AnnotateCase(sp, results, pcommon.NewTimestampFromTime(now), e.redactInfo(t.target.info))
	sink(td, t.target.origin)
}

// describingOf is a copy of the describing attributes of attrs, at most
// annotator.MaxDescribing.
func describingOf(attrs pcommon.Map) pcommon.Map {
	out := pcommon.NewMap()
	for k, v := range attrs.All() {
		if out.Len() == annotator.MaxDescribing {
			break
		}
		if annotator.Describing(k, v) {
			v.CopyTo(out.PutEmpty(k))
		}
	}
	return out
}

// Attributes of a late-result span besides the eval.<name>.* results.
const (
	AttrLate           = "eval.late"
	AttrTargetSpanName = annotator.AttrTargetSpanName
)

// NewSpanID is a random span id for a span evalbridge makes.
func NewSpanID() pcommon.SpanID { return newSpanID() }

func newSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}
