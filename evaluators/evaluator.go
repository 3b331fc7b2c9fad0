// Package evaluators holds the evaluator interface, the registry of evaluator
// types keyed by `type`, and every evaluator, one family per file.
package evaluators

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/evalbridge/evalbridge/adapter"
)

// Status is the outcome of one evaluation (docs/contract.md §4).
type Status string

const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
	StatusError   Status = "error"
	StatusTimeout Status = "timeout"
)

// Result is what one evaluator instance concluded about one case.
type Result struct {
	// Name is the evaluator instance's name, Type its type.
	Name string
	Type string
	// Version and EvaluatorType are the instance's provenance
	// (docs/contract.md §24; Instance.Version), set with Name.
	Version       string
	EvaluatorType string
	// Status is passed or failed when the case was scored.
	Status Status
	// Score is in [0,1], higher is better; meaningful only when Scored().
	Score     float64
	Threshold float64
	// Reason says why, in words a person can act on.
	Reason string
	// Metrics are the intermediate counts behind the score (matched, expected, …).
	Metrics map[string]float64
}

// metricsOff is embedded by evaluators that leave Result.Metrics nil when
// built with Deps.NoMetrics.
type metricsOff bool

// counts is countMetrics, nil when metrics are off.
func (off metricsOff) counts(matched, expected, actual int) map[string]float64 {
	if off {
		return nil
	}
	return countMetrics(matched, expected, actual)
}

// Scored reports whether the result carries a score.
func (r Result) Scored() bool { return r.Status == StatusPassed || r.Status == StatusFailed }

// Evaluator scores one case. An implementation returns Scored(score, …) —
// the instance decides passed or failed from its threshold — or Skipped /
// Errored when it cannot score.
type Evaluator interface {
	Evaluate(ctx context.Context, c *adapter.Case) Result
}

// Lifecycle is implemented by evaluators that hold resources (the remote
// evaluator's HTTP client): the host starts them before the first case, with
// its extensions so auth extensions apply, and shuts them down at the end.
// Start with a nil host must work (evalctl has none).
type Lifecycle interface {
	Start(ctx context.Context, host component.Host) error
	Shutdown(ctx context.Context) error
}

// Scored is a result with a score; the status is set by the instance.
func Scored(score float64, reason string, metrics map[string]float64) Result {
	return Result{Status: StatusPassed, Score: clamp01(score), Reason: reason, Metrics: metrics}
}

// Skipped is the result when the inputs an evaluator needs are absent.
func Skipped(format string, args ...any) Result {
	return Result{Status: StatusSkipped, Reason: fmt.Sprintf(format, args...)}
}

// Errored is the result when evaluation failed.
func Errored(format string, args ...any) Result {
	return Result{Status: StatusError, Reason: fmt.Sprintf(format, args...)}
}

func clamp01(v float64) float64 {
	switch {
	case v != v: // NaN
		return 0
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}
