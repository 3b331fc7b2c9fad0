package evalmetricsconnector

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/evalbridge/evalbridge/internal/humanlabel"
)

// Config is the `connectors: evalmetrics:` block.
type Config struct {
	// Dimensions are the attributes copied onto every series, read from the
	// record's (or event's) attributes, else from its resource.
	Dimensions []string `mapstructure:"dimensions"`
	// ScoreBuckets are the explicit bounds of gen_ai.evaluation.score.
	ScoreBuckets []float64 `mapstructure:"score_buckets"`
	// MaxSeries caps the label sets of each metric; results with a further
	// label set are counted under otel.metric.overflow="true".
	MaxSeries int `mapstructure:"max_series"`
	// FlushInterval is how often the cumulative metrics are emitted.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// MaxAbsScore bounds the scores recorded in gen_ai.evaluation.score:
	// one of a larger magnitude (another producer's bug, a 1e308) would
	// make the cumulative _sum useless until a restart; it is counted, not
	// recorded.
	MaxAbsScore float64 `mapstructure:"max_abs_score"`
	// Agreement tunes the join of human labels with machine results
	// (docs/contract.md §25); the join always runs.
	Agreement AgreementConfig `mapstructure:"agreement"`

	_ struct{}
}

// Defaults (docs/contract.md §18).
var (
	DefaultDimensions = []string{
		"service.name", "service.version", "deployment.environment.name",
		"gen_ai.agent.name", "gen_ai.request.model",
	}
	DefaultScoreBuckets = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
)

const (
	DefaultMaxSeries     = 10000
	DefaultFlushInterval = 15 * time.Second
	DefaultMaxAbsScore   = 1e6
)

func createDefaultConfig() *Config {
	return &Config{
		Dimensions:    slices.Clone(DefaultDimensions),
		ScoreBuckets:  slices.Clone(DefaultScoreBuckets),
		MaxSeries:     DefaultMaxSeries,
		FlushInterval: DefaultFlushInterval,
		MaxAbsScore:   DefaultMaxAbsScore,
		Agreement: AgreementConfig{
			Labels: LabelMapping{
				Pass: slices.Clone(DefaultPassLabels),
				Fail: slices.Clone(DefaultFailLabels),
			},
			Window:     DefaultAgreementWindow,
			MaxPending: DefaultMaxPending,
		},
	}
}

// AgreementConfig is `evalmetrics: agreement:` (§25).
type AgreementConfig struct {
	// Pairs lists which human evaluation labels which machine evaluation;
	// empty: the same name on both sides.
	Pairs []AgreementPair `mapstructure:"pairs"`
	// Labels maps human score labels to pass and fail.
	Labels LabelMapping `mapstructure:"labels"`
	// Window is how long a result waits for its other side (and how long a
	// label is remembered, so a resend is not counted twice).
	Window time.Duration `mapstructure:"window"`
	// MaxPending bounds the results remembered; beyond it the oldest is
	// forgotten, and counted.
	MaxPending int `mapstructure:"max_pending"`
	// Storage is a storage extension where the waiting results are saved
	// (at every flush and at shutdown) and restored from at start.
	Storage *component.ID `mapstructure:"storage"`

	_ struct{}
}

// AgreementPair names a human evaluation and the machine one it labels.
type AgreementPair struct {
	Human   string `mapstructure:"human"`
	Machine string `mapstructure:"machine"`

	_ struct{}
}

// LabelMapping is which human score labels mean pass and which fail.
type LabelMapping struct {
	Pass []string `mapstructure:"pass"`
	Fail []string `mapstructure:"fail"`

	_ struct{}
}

// Defaults of agreement (§25).
var (
	DefaultPassLabels = humanlabel.DefaultPass
	DefaultFailLabels = humanlabel.DefaultFail
)

const (
	DefaultAgreementWindow = 168 * time.Hour
	DefaultMaxPending      = 1000000
)

// Validate checks agreement's settings; errors start with their key.
func (a *AgreementConfig) Validate() error {
	var errs []error
	seen := map[AgreementPair]bool{}
	for i, p := range a.Pairs {
		if p.Human == "" || p.Machine == "" {
			errs = append(errs, fmt.Errorf("agreement: pairs[%d]: both human and machine are required", i))
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("agreement: pairs[%d]: {human: %s, machine: %s} listed twice", i, p.Human, p.Machine))
		}
		seen[p] = true
	}
	if len(a.Labels.Pass) == 0 || len(a.Labels.Fail) == 0 {
		errs = append(errs, errors.New("agreement: labels: both pass and fail need at least one label"))
	}
	// Labels are compared as humanlabel reads them.
	both, blank := humanlabel.Overlap(a.Labels.Pass, a.Labels.Fail)
	for _, l := range both {
		errs = append(errs, fmt.Errorf("agreement: labels: %q is both pass and fail", l))
	}
	if blank {
		errs = append(errs, errors.New("agreement: labels: empty label"))
	}
	if a.Window <= 0 {
		errs = append(errs, fmt.Errorf("agreement: window: %v must be positive", a.Window))
	}
	if a.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("agreement: max_pending: %d must be at least 1", a.MaxPending))
	}
	return errors.Join(errs...)
}

// reserved are the attributes the connector writes itself: a dimension of
// the same name would collide with them.
var reserved = []string{attrEvalName, attrScoreLabel, attrErrorType, attrOverflow, attrEvalVersion, attrEvalType, attrMachineLabel, attrHumanLabel}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	seen := make(map[string]bool, len(c.Dimensions))
	for _, d := range c.Dimensions {
		switch {
		case d == "":
			errs = append(errs, errors.New("dimensions: empty attribute name"))
		case slices.Contains(reserved, d):
			errs = append(errs, fmt.Errorf("dimensions: %q is written by the connector itself", d))
		case seen[d]:
			errs = append(errs, fmt.Errorf("dimensions: %q listed twice", d))
		}
		seen[d] = true
	}
	if len(c.ScoreBuckets) == 0 {
		errs = append(errs, errors.New("score_buckets: at least one bound is required"))
	}
	for i := 1; i < len(c.ScoreBuckets); i++ {
		if !(c.ScoreBuckets[i] > c.ScoreBuckets[i-1]) {
			errs = append(errs, fmt.Errorf("score_buckets: bounds must increase strictly (%v after %v)",
				c.ScoreBuckets[i], c.ScoreBuckets[i-1]))
			break
		}
	}
	if c.MaxSeries < 1 {
		errs = append(errs, fmt.Errorf("max_series: %d must be at least 1", c.MaxSeries))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("flush_interval: %v must be positive", c.FlushInterval))
	}
	if err := c.Agreement.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !(c.MaxAbsScore > 0) || math.IsInf(c.MaxAbsScore, 0) {
		errs = append(errs, fmt.Errorf("max_abs_score: %v must be a positive finite number", c.MaxAbsScore))
	}
	return errors.Join(errs...)
}
