package evalmetricsconnector

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
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
	}
}

// reserved are the attributes the connector writes itself: a dimension of
// the same name would collide with them.
var reserved = []string{attrEvalName, attrScoreLabel, attrErrorType, attrOverflow, attrEvalVersion, attrEvalType}

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
	if !(c.MaxAbsScore > 0) || math.IsInf(c.MaxAbsScore, 0) {
		errs = append(errs, fmt.Errorf("max_abs_score: %v must be a positive finite number", c.MaxAbsScore))
	}
	return errors.Join(errs...)
}
