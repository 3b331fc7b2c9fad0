// Package engine is what the `eval` processor and `evalctl` share: the
// configuration (docs/contract.md §5) and the scoring of one trace — adapt its
// spans into cases, run the evaluators that apply, and write the results back.
// Both front ends call the same code, so they agree on every score.
package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configretry"

	"github.com/evalbridge/evalbridge/evaluators"
	"github.com/evalbridge/evalbridge/internal/configerr"
	"github.com/evalbridge/evalbridge/internal/judge"
	"github.com/evalbridge/evalbridge/internal/redact"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// Config is the `processors: eval:` block and the `evalctl --config` file.
type Config struct {
	// Wait is the time after a trace's last span before it is scored.
	Wait time.Duration `mapstructure:"wait"`
	// RootGrace, when set, scores a trace sooner: once its root span has
	// arrived and this much time has passed since its last span.
	RootGrace time.Duration `mapstructure:"root_grace"`
	// MaxTraces bounds the traces held at once; beyond it the oldest is
	// forwarded unscored (never dropped).
	MaxTraces int `mapstructure:"max_traces"`
	// Timeout is the deadline for one trace's evaluation.
	Timeout time.Duration `mapstructure:"timeout"`
	// LateResults says what happens to a judge's answer that arrives after
	// its trace's timeout: `span` emits it as a span linked to the evaluated
	// span; `drop` discards it (the evaluated span keeps `timeout`).
	LateResults string `mapstructure:"late_results"`
	// Workers bounds the traces scored at once.
	Workers int `mapstructure:"workers"`
	// Evaluators are the evaluator instances to run.
	Evaluators []evaluators.Config `mapstructure:"evaluators"`
	// Judges are the LLM judges by name; evaluators name one with `judge:`.
	Judges map[string]judge.Config `mapstructure:"judges"`
	// ResultLogRecords emits each result as a gen_ai.evaluation.result log
	// record too, while the `eval` processor is in a logs pipeline
	// (docs/logs.md). evalctl reads and ignores it.
	ResultLogRecords bool `mapstructure:"result_log_records"`
	// Storage names a storage extension (e.g. `file_storage/eval`) that
	// makes the processor's holding durable (docs/contract.md §12): held
	// spans and log records are persisted before they are acknowledged and
	// restored on start. evalctl reads and ignores it (it holds nothing
	// across runs); nil: holding is in memory only.
	Storage *component.ID `mapstructure:"storage"`
	// StorageFailure is what the processor does when that store cannot
	// be opened or read (docs/contract.md §22); it validates itself.
	// evalctl reads and ignores it.
	StorageFailure StorageFailure `mapstructure:"storage_failure"`
	// Sessions bounds the conversations kept for `case: session`
	// evaluators (docs/contract.md §14, docs/sessions.md). It validates
	// itself (confmap.Validate walks into it).
	Sessions sessions.Config `mapstructure:"sessions"`
	// MaxPendingJudgeTasks bounds the judge evaluations waiting for a
	// worker, across all traces; beyond it a judge evaluation is `skipped`
	// with the reason (and counted), so a slow judge cannot grow memory and
	// goroutines without bound.
	MaxPendingJudgeTasks int `mapstructure:"max_pending_judge_tasks"`
	// Sampling forwards a share of the scored traces by outcome
	// (docs/contract.md §19, sampling.go); it validates itself.
	Sampling SamplingConfig `mapstructure:"sampling"`
	// Redaction masks personal data and secrets in what leaves the
	// collector and what is written back (docs/contract.md §20,
	// docs/redaction.md). It validates itself (confmap.Validate walks into
	// it); the default runs every built-in detector.
	Redaction redact.Config `mapstructure:"redaction"`
	// MaxHold bounds how long one trace is held (docs/contract.md §17): it
	// is scored and released at most this long after its first span, however
	// long spans keep coming. evalctl reads and ignores it.
	MaxHold time.Duration `mapstructure:"max_hold"`
	// MaxTraceSpans bounds the spans plus GenAI log records held for one
	// trace; reaching it scores and releases the trace at once. evalctl
	// reads and ignores it.
	MaxTraceSpans int `mapstructure:"max_trace_spans"`
	// ReleaseRetry is how a release the next consumer refuses with a
	// retryable error is retried; past max_elapsed_time it is dropped,
	// logged and counted. evalctl reads and ignores it.
	ReleaseRetry configretry.BackOffConfig `mapstructure:"release_retry"`
	// Mode is how the processor treats the spans it scores
	// (docs/contract.md §26): `hold` keeps a GenAI trace's spans until it
	// is scored and writes the results onto them; `stream` lets every span
	// go on at once, keeps only what the cases read, and emits the results
	// as result spans and records. evalctl reads and ignores it.
	Mode string `mapstructure:"mode"`

	_ struct{}
}

// Values of `mode`.
const (
	ModeHold   = "hold"
	ModeStream = "stream"
)

// Defaults of the §17 bounds.
const (
	DefaultMaxHold       = 5 * time.Minute
	DefaultMaxTraceSpans = 100000
)

// NewDefaultReleaseRetry is release_retry when not set: configretry's
// shape, 1s to 30s, given up after 5 minutes.
func NewDefaultReleaseRetry() configretry.BackOffConfig {
	r := configretry.NewDefaultBackOffConfig()
	r.InitialInterval = time.Second
	r.MaxInterval = 30 * time.Second
	r.MaxElapsedTime = 5 * time.Minute
	return r
}

// NewDefaultConfig returns the defaults of docs/contract.md §5.
func NewDefaultConfig() Config {
	return Config{
		Wait:      5 * time.Second,
		MaxTraces: 50000,
		Timeout:   60 * time.Second,
		Workers:   4,

		LateResults:      LateResultsSpan,
		ResultLogRecords: true,
		StorageFailure:   StorageFailureContinue,
		Sessions:         sessions.NewDefaultConfig(),

		MaxPendingJudgeTasks: DefaultMaxPendingJudgeTasks,
		Sampling:             NewDefaultSamplingConfig(),
		Redaction:            redact.NewDefaultConfig(),
		MaxHold:              DefaultMaxHold,
		MaxTraceSpans:        DefaultMaxTraceSpans,
		ReleaseRetry:         NewDefaultReleaseRetry(),
		Mode:                 ModeHold,
	}
}

// DefaultMaxPendingJudgeTasks is max_pending_judge_tasks when not set.
const DefaultMaxPendingJudgeTasks = 10000

// Validate checks the whole configuration, naming what is wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Wait < 0 {
		errs = append(errs, fmt.Errorf("wait: %v must not be negative", c.Wait))
	}
	if c.RootGrace < 0 || (c.RootGrace > 0 && c.RootGrace > c.Wait) {
		errs = append(errs, fmt.Errorf("root_grace: %v must be within [0, wait]", c.RootGrace))
	}
	errs = append(errs, configerr.Positive("max_traces", c.MaxTraces))
	errs = append(errs, configerr.Positive("timeout", c.Timeout))
	if c.LateResults != LateResultsSpan && c.LateResults != LateResultsDrop {
		errs = append(errs, fmt.Errorf("late_results: %q must be span or drop", c.LateResults))
	}
	errs = append(errs, configerr.Positive("max_pending_judge_tasks", c.MaxPendingJudgeTasks))
	// max_hold below wait is allowed (every trace then goes at max_hold):
	// a config written before max_hold existed, with a long wait, still loads.
	errs = append(errs, configerr.Positive("max_hold", c.MaxHold))
	errs = append(errs, configerr.Positive("max_trace_spans", c.MaxTraceSpans))
	// release_retry validates itself (confmap.Validate walks into it).
	errs = append(errs, configerr.Positive("workers", c.Workers))
	switch c.Mode {
	case ModeHold:
	case ModeStream:
		if !c.Sampling.All() {
			errs = append(errs, errors.New("sampling: needs held spans to drop and cannot be used with mode: stream (every span goes on at once); remove sampling or use mode: hold"))
		}
	default:
		errs = append(errs, fmt.Errorf("mode: %q must be hold or stream", c.Mode))
	}
	if len(c.Evaluators) == 0 {
		errs = append(errs, errors.New("evaluators: at least one evaluator is required"))
	}
	// Each entry validates itself (confmap.Validate walks into the slice);
	// what only the whole list can tell is whether names are unique.
	if err := evaluators.UniqueNames(c.Evaluators); err != nil {
		errs = append(errs, err)
	}
	// run_if reads only evaluators defined earlier, of the same case level.
	if err := evaluators.ValidateRunIf(c.Evaluators); err != nil {
		errs = append(errs, err)
	}
	// Each judge validates itself (confmap.Validate walks into the map);
	// what only the whole config can tell is whether the names resolve.
	for i := range c.Evaluators {
		ev := &c.Evaluators[i]
		if ev.Judge == "" {
			continue
		}
		if _, ok := c.Judges[ev.Judge]; !ok {
			errs = append(errs, fmt.Errorf("evaluator %q: judge %q is not configured under `judges:` (configured: %s)",
				ev.InstanceName(), ev.Judge, judgeNames(c.Judges)))
		}
	}
	if err := validateConditions(c.Evaluators); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func judgeNames(m map[string]judge.Config) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
