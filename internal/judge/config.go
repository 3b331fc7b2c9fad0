// Package judge is the client for LLM judges: any OpenAI-compatible
// chat-completions endpoint (OpenAI, Azure OpenAI, Ollama, vLLM, LiteLLM),
// with the controls a production judge needs: bounded concurrency, request
// and token rates, a rolling token budget, hard timeouts, retries honouring
// Retry-After, an LRU cache of verdicts, and a limit on how much of each span
// field goes into a prompt. docs/contract.md §10.
package judge

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/internal/httpclient"
)

// Config is one entry of `judges:`.
type Config struct {
	// ClientConfig holds endpoint (the API base, e.g. https://api.openai.com/v1;
	// the client POSTs to {endpoint}/chat/completions), headers (Azure's
	// api-key), tls, proxy_url and timeout (per attempt).
	confighttp.ClientConfig `mapstructure:",squash"`

	// Model is sent as `model`.
	Model string `mapstructure:"model"`
	// APIKey is sent as `Authorization: Bearer <api_key>` when set.
	APIKey configopaque.String `mapstructure:"api_key"`
	// Temperature is sent as `temperature` (0 by default: judges should be
	// as repeatable as the model allows).
	Temperature float64 `mapstructure:"temperature"`
	// MaxTokens is sent as `max_tokens` (the reply's length limit); 0 omits it.
	MaxTokens int `mapstructure:"max_tokens"`
	// JSONResponse sends `response_format: {type: json_object}`.
	JSONResponse bool `mapstructure:"json_response"`

	// MaxConcurrency bounds the requests in flight to this judge.
	MaxConcurrency int `mapstructure:"max_concurrency"`
	// RequestsPerMinute and TokensPerMinute pace the requests; 0 is unlimited.
	RequestsPerMinute int `mapstructure:"requests_per_minute"`
	TokensPerMinute   int `mapstructure:"tokens_per_minute"`
	// Budget bounds the tokens, and the cost, spent per rolling hour and
	// day; past it, judge evaluators report `skipped`.
	Budget BudgetConfig `mapstructure:"budget"`
	// Price turns the tokens each reply reports into money (docs/cost.md):
	// the cost metric, the cost budget and evalctl's summary use it.
	Price PriceConfig `mapstructure:"price"`
	// Retry retries 429, 5xx, network errors and attempt timeouts.
	Retry RetryConfig `mapstructure:"retry"`
	// CacheSize is the number of verdicts kept for identical prompts; 0 disables the cache.
	CacheSize int `mapstructure:"cache_size"`
	// MaxFieldBytes limits how much of each span field (input, output, one
	// document, one tool result …) goes into a prompt.
	MaxFieldBytes int `mapstructure:"max_field_bytes"`

	_ struct{}
}

// BudgetConfig is a token and cost budget over rolling windows; 0 is
// unlimited. The cost windows are in the price's currency and need `price`.
type BudgetConfig struct {
	TokensPerHour int64   `mapstructure:"tokens_per_hour"`
	TokensPerDay  int64   `mapstructure:"tokens_per_day"`
	CostPerHour   float64 `mapstructure:"cost_per_hour"`
	CostPerDay    float64 `mapstructure:"cost_per_day"`
}

// PriceConfig is what the judge's provider charges per million tokens.
type PriceConfig struct {
	InputPerMillionTokens  float64 `mapstructure:"input_per_million_tokens"`
	OutputPerMillionTokens float64 `mapstructure:"output_per_million_tokens"`
	// Currency names the unit of the prices, the cost metric and the cost
	// budget (e.g. USD); required with a price.
	Currency string `mapstructure:"currency"`
}

// Set says a price is configured.
func (p PriceConfig) Set() bool {
	return p.InputPerMillionTokens != 0 || p.OutputPerMillionTokens != 0 || p.Currency != ""
}

// Cost is what in input and out output tokens cost: (in × input price +
// out × output price) / 1,000,000, in float64 and in this order, so a
// cost recomputed from the same token counts agrees to the last bit.
func (p PriceConfig) Cost(in, out int64) float64 {
	return (float64(in)*p.InputPerMillionTokens + float64(out)*p.OutputPerMillionTokens) / 1e6
}

// RetryConfig says how failed requests are retried.
type RetryConfig struct {
	// MaxAttempts counts the first attempt: 1 never retries.
	MaxAttempts int `mapstructure:"max_attempts"`
	// InitialBackoff doubles per attempt up to MaxBackoff. A Retry-After
	// header on 429 or 503 is honoured instead (bounded by the caller's deadline).
	InitialBackoff time.Duration `mapstructure:"initial_backoff"`
	MaxBackoff     time.Duration `mapstructure:"max_backoff"`
}

const (
	defaultTimeout        = 30 * time.Second
	defaultMaxTokens      = 1024
	defaultMaxConcurrency = 4
	defaultCacheSize      = 1000
	defaultMaxFieldBytes  = 8192
)

// NewDefaultConfig returns the defaults every `judges:` entry starts from.
func NewDefaultConfig() Config {
	cc := confighttp.NewDefaultClientConfig()
	cc.Timeout = defaultTimeout
	return Config{
		ClientConfig:   cc,
		MaxTokens:      defaultMaxTokens,
		MaxConcurrency: defaultMaxConcurrency,
		Retry:          RetryConfig{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
		CacheSize:      defaultCacheSize,
		MaxFieldBytes:  defaultMaxFieldBytes,
	}
}

// Unmarshal starts every entry of `judges:` from the defaults, so a map
// entry that sets only endpoint and model gets them too.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	*c = NewDefaultConfig()
	return conf.Unmarshal(c)
}

// Validate names the option that is wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: required (the API base, e.g. https://api.openai.com/v1)"))
	} else if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("endpoint: %q is not an http(s) URL", httpclient.StripURL(c.Endpoint)))
	}
	if c.Model == "" {
		errs = append(errs, errors.New("model: required"))
	}
	if !(c.Temperature >= 0 && c.Temperature <= 2) { // NaN too: it cannot be encoded as JSON
		errs = append(errs, fmt.Errorf("temperature: %v must be within [0, 2]", c.Temperature))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens: %d must not be negative", c.MaxTokens))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %v must not be negative", c.Timeout))
	}
	if c.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("max_concurrency: %d must be positive", c.MaxConcurrency))
	}
	if c.RequestsPerMinute < 0 {
		errs = append(errs, fmt.Errorf("requests_per_minute: %d must not be negative (0 is unlimited)", c.RequestsPerMinute))
	}
	if c.TokensPerMinute < 0 {
		errs = append(errs, fmt.Errorf("tokens_per_minute: %d must not be negative (0 is unlimited)", c.TokensPerMinute))
	}
	if c.Budget.TokensPerHour < 0 {
		errs = append(errs, fmt.Errorf("budget.tokens_per_hour: %d must not be negative (0 is unlimited)", c.Budget.TokensPerHour))
	}
	if c.Budget.TokensPerDay < 0 {
		errs = append(errs, fmt.Errorf("budget.tokens_per_day: %d must not be negative (0 is unlimited)", c.Budget.TokensPerDay))
	}
	errs = append(errs, c.validateCost()...)
	if c.Retry.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("retry.max_attempts: %d must be at least 1", c.Retry.MaxAttempts))
	}
	if c.Retry.InitialBackoff < 0 {
		errs = append(errs, fmt.Errorf("retry.initial_backoff: %v must not be negative", c.Retry.InitialBackoff))
	}
	if c.Retry.MaxBackoff < 0 || (c.Retry.MaxBackoff > 0 && c.Retry.MaxBackoff < c.Retry.InitialBackoff) {
		errs = append(errs, fmt.Errorf("retry.max_backoff: %v must be at least retry.initial_backoff", c.Retry.MaxBackoff))
	}
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("cache_size: %d must not be negative (0 disables the cache)", c.CacheSize))
	}
	if c.MaxFieldBytes < 0 {
		errs = append(errs, fmt.Errorf("max_field_bytes: %d must be positive", c.MaxFieldBytes))
	}
	return errors.Join(errs...)
}

// normalized fills zero values that would make the client unusable with the
// defaults (for configs built in code rather than unmarshalled).
func (c Config) normalized() Config {
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = defaultMaxConcurrency
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = 1
	}
	if c.Retry.MaxBackoff == 0 {
		c.Retry.MaxBackoff = 30 * time.Second
	}
	if c.MaxFieldBytes == 0 {
		c.MaxFieldBytes = defaultMaxFieldBytes
	}
	return c
}

// validateCost checks price and the cost budget (docs/contract.md §21).
func (c *Config) validateCost() []error {
	var errs []error
	finite := func(v float64) bool { return v >= 0 && v <= math.MaxFloat64 } // false for NaN, -x, +Inf
	if !finite(c.Price.InputPerMillionTokens) {
		errs = append(errs, fmt.Errorf("price.input_per_million_tokens: %v must be a finite number >= 0", c.Price.InputPerMillionTokens))
	}
	if !finite(c.Price.OutputPerMillionTokens) {
		errs = append(errs, fmt.Errorf("price.output_per_million_tokens: %v must be a finite number >= 0", c.Price.OutputPerMillionTokens))
	}
	if c.Price.Set() && strings.TrimSpace(c.Price.Currency) == "" {
		errs = append(errs, errors.New("price.currency: required with a price (e.g. USD)"))
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"cost_per_hour", c.Budget.CostPerHour}, {"cost_per_day", c.Budget.CostPerDay}} {
		switch {
		case !finite(w.v) || w.v > maxCostBudget:
			errs = append(errs, fmt.Errorf("budget.%s: %v must be within [0, %g] (0 is unlimited)", w.name, w.v, float64(maxCostBudget)))
		case w.v > 0 && !c.Price.Set():
			errs = append(errs, fmt.Errorf("budget.%s: needs `price` (input_per_million_tokens, output_per_million_tokens, currency) to turn tokens into cost", w.name))
		}
	}
	return errs
}
