package webhookexporter

import (
	"errors"
	"fmt"
	"time"
)

// DefaultMaxGroups is the default of max_groups: groups tracked per monitor.
const DefaultMaxGroups = 1000

// minMonitorWindow keeps a bucket (window/windowBuckets) at 1/60 s or more.
const minMonitorWindow = time.Second

// MonitorConfig is one entry of `monitors:` (docs/contract.md §13).
type MonitorConfig struct {
	// Name identifies the monitor in notifications and metrics.
	Name string `mapstructure:"name"`
	// Evaluator is the evaluator instance whose results are watched.
	Evaluator string `mapstructure:"evaluator"`
	// GroupBy lists attributes of the evaluated span (span first, then its
	// resource) whose values form a group; empty means one group.
	GroupBy []string `mapstructure:"group_by"`
	// Window is the sliding window the figure is computed over.
	Window time.Duration `mapstructure:"window"`
	// MinCases is the number of scored cases in the window below which
	// there is no verdict (the state is kept). Omitted (0) means 1.
	MinCases int `mapstructure:"min_cases"`
	// PassRateBelow fires when passed/(passed+failed) is below it.
	PassRateBelow *float64 `mapstructure:"pass_rate_below"`
	// MeanScoreBelow fires when the mean score is below it.
	MeanScoreBelow *float64 `mapstructure:"mean_score_below"`
	// Renotify repeats a firing notification at most this often while the
	// window still shows the figure below the threshold; 0 never repeats.
	Renotify time.Duration `mapstructure:"renotify"`
	// Confidence, when set (0 < confidence < 1), makes the verdict account
	// for sample size: the group fires only when the whole interval of the
	// figure at this confidence is below the threshold (the Wilson score
	// interval of the pass rate; the normal interval of the mean score) and
	// resolves only when the whole interval is at or above it.
	Confidence *float64 `mapstructure:"confidence"`
	// MaxGroups overrides the exporter's max_groups for this monitor; 0
	// keeps the exporter's.
	MaxGroups int `mapstructure:"max_groups"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks one monitor.
func (m *MonitorConfig) Validate() error {
	var errs []error
	if !evaluatorNameRE.MatchString(m.Name) {
		errs = append(errs, fmt.Errorf("name %q must match [a-z0-9_]+", m.Name))
	}
	if !validEvaluationName(m.Evaluator) {
		errs = append(errs, fmt.Errorf("evaluator %q must be an evaluation name (an evaluator instance's, or any producer's): not empty, no spaces", m.Evaluator))
	}
	seen := map[string]bool{}
	for _, k := range m.GroupBy {
		if k == "" {
			errs = append(errs, errors.New("group_by: empty attribute name"))
		} else if seen[k] {
			errs = append(errs, fmt.Errorf("group_by: %q listed twice", k))
		}
		seen[k] = true
	}
	if m.Window < minMonitorWindow {
		errs = append(errs, fmt.Errorf("window must be at least %s, got %s", minMonitorWindow, m.Window))
	}
	if m.MinCases < 0 {
		errs = append(errs, fmt.Errorf("min_cases must be >= 0 (0 means 1), got %d", m.MinCases))
	}
	switch {
	case m.PassRateBelow == nil && m.MeanScoreBelow == nil:
		errs = append(errs, errors.New("set exactly one of pass_rate_below or mean_score_below"))
	case m.PassRateBelow != nil && m.MeanScoreBelow != nil:
		errs = append(errs, errors.New("pass_rate_below and mean_score_below are both set; set exactly one"))
	default:
		key, v := m.threshold()
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be in (0, 1], got %g", key, v))
		}
	}
	if m.Confidence != nil && !(*m.Confidence > 0 && *m.Confidence < 1) {
		errs = append(errs, fmt.Errorf("confidence must be between 0 and 1 (exclusive), e.g. 0.95, got %g", *m.Confidence))
	}
	if m.MaxGroups < 0 {
		errs = append(errs, fmt.Errorf("max_groups must be >= 0 (0 means the exporter's max_groups), got %d", m.MaxGroups))
	}
	if m.Renotify < 0 {
		errs = append(errs, fmt.Errorf("renotify must be >= 0 (0 never repeats), got %s", m.Renotify))
	}
	return errors.Join(errs...)
}

// minCases is min_cases with its default.
func (m *MonitorConfig) minCases() int { return max(m.MinCases, 1) }

// threshold returns the configured figure's key and threshold.
func (m *MonitorConfig) threshold() (string, float64) {
	if m.MeanScoreBelow != nil {
		return "mean_score_below", *m.MeanScoreBelow
	}
	if m.PassRateBelow != nil {
		return "pass_rate_below", *m.PassRateBelow
	}
	return "pass_rate_below", 0
}
