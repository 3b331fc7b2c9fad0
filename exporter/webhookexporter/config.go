package webhookexporter

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"text/template"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/evalbridge/evalbridge/internal/redact"
)

// Payload formats.
const (
	FormatJSON     = "json"
	FormatSlack    = "slack"
	FormatTemplate = "template"
)

// Config is the `webhook` exporter's configuration.
//
// Only confighttp.ClientConfig is squashed: it carries `timeout` (the HTTP
// client's per-request timeout); the exporterhelper timeout is not exposed
// (set to 0, as otlphttp does) so the two never collide.
type Config struct {
	ClientConfig confighttp.ClientConfig                                  `mapstructure:",squash"`
	QueueConfig  configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig  configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`

	// Format of the request body: json (default), slack or template.
	Format string `mapstructure:"format"`
	// Template is a Go text/template executed over the Payload; required
	// with format: template.
	Template string `mapstructure:"template"`
	// Secret, when set, signs every request (X-Evalbridge-Signature).
	Secret configopaque.String `mapstructure:"secret"`
	// TraceURL is a link template with {trace_id} and {span_id} placeholders.
	TraceURL string `mapstructure:"trace_url"`
	// Evaluators limits alerts to these evaluator names; empty means all.
	Evaluators []string `mapstructure:"evaluators"`
	// MaxAlertsPerMinute caps alerts sent per rolling minute; 0 = unlimited.
	MaxAlertsPerMinute int `mapstructure:"max_alerts_per_minute"`
	// PerTraceAlerts keeps the per-failed-evaluation alerts of docs/contract.md
	// §9 (default true). Off, only monitors send anything.
	PerTraceAlerts bool `mapstructure:"per_trace_alerts"`
	// Monitors alert on an evaluator's pass rate or mean score over a
	// sliding window, per group (docs/contract.md §13).
	Monitors []MonitorConfig `mapstructure:"monitors"`
	// MaxGroups bounds the groups each monitor tracks (default
	// DefaultMaxGroups). Cases of further groups are counted, not tracked.
	MaxGroups int `mapstructure:"max_groups"`
	// Redaction masks personal data and secrets in every payload
	// (docs/redaction.md); the default runs every built-in detector, and
	// `detectors: []` turns them off. It validates itself.
	Redaction redact.Config `mapstructure:"redaction"`
	// Labels maps the score labels of result log records to pass and fail
	// (logs.go); it validates itself.
	Labels LabelsConfig `mapstructure:"labels"`

	// inline lets the push run in the caller (no queue): the package's
	// tests of the push function only. A user cannot set it.
	inline bool

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var evaluatorNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be specified"))
	} else if u, err := url.Parse(cfg.ClientConfig.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not quoted: a Slack incoming-webhook URL is a secret.
		errs = append(errs, errors.New("endpoint must be an http(s) URL with a host, e.g. https://hooks.example.com/evalbridge"))
	}
	switch cfg.Format {
	case "", FormatJSON, FormatSlack:
		if cfg.Template != "" {
			errs = append(errs, fmt.Errorf("template is only used with format: template (format is %q)", cfg.formatOrDefault()))
		}
	case FormatTemplate:
		if cfg.Template == "" {
			errs = append(errs, errors.New("format: template requires a template"))
		} else if _, err := parseTemplate(cfg.Template); err != nil {
			errs = append(errs, fmt.Errorf("template: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("format %q: must be json, slack or template", cfg.Format))
	}
	if !cfg.inline {
		errs = append(errs, validateQueue(cfg.QueueConfig)...)
	}
	if cfg.MaxAlertsPerMinute < 0 {
		errs = append(errs, fmt.Errorf("max_alerts_per_minute must be >= 0, got %d", cfg.MaxAlertsPerMinute))
	}
	seen := map[string]bool{}
	for _, n := range cfg.Evaluators {
		if !validEvaluationName(n) {
			errs = append(errs, fmt.Errorf("evaluators: %q is not a valid evaluator name (an evaluation name: no spaces)", n))
		}
		if seen[n] {
			errs = append(errs, fmt.Errorf("evaluators: %q listed twice", n))
		}
		seen[n] = true
	}
	if cfg.MaxGroups < 1 {
		errs = append(errs, fmt.Errorf("max_groups must be >= 1, got %d", cfg.MaxGroups))
	}
	if !cfg.PerTraceAlerts && len(cfg.Monitors) == 0 {
		errs = append(errs, errors.New("per_trace_alerts is false and no monitors are configured: the exporter would never send anything"))
	}
	monitorNames := map[string]bool{}
	for i := range cfg.Monitors {
		m := &cfg.Monitors[i]
		if err := m.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("monitors[%d] (%q): %w", i, m.Name, err))
		}
		if m.Name != "" && monitorNames[m.Name] {
			errs = append(errs, fmt.Errorf("monitors[%d]: name %q is used twice", i, m.Name))
		}
		monitorNames[m.Name] = true
	}
	return errors.Join(errs...)
}

// validateQueue keeps the exporter from ever holding back its pipeline
// (docs/contract.md §17): the alerts must go through a queue that refuses
// (and the exporter then drops and counts) rather than waits.
func validateQueue(q configoptional.Optional[exporterhelper.QueueBatchConfig]) []error {
	const why = ": a slow or down alert endpoint would hold back the other exporters of the pipeline (alerts that cannot be queued are dropped and counted instead)"
	if !q.HasValue() {
		return []error{errors.New("sending_queue must stay enabled" + why)}
	}
	var errs []error
	if q.Get().BlockOnOverflow {
		errs = append(errs, errors.New("sending_queue: block_on_overflow must be false"+why))
	}
	if q.Get().WaitForResult {
		errs = append(errs, errors.New("sending_queue: wait_for_result must be false"+why))
	}
	return errs
}

func (cfg *Config) formatOrDefault() string {
	if cfg.Format == "" {
		return FormatJSON
	}
	return cfg.Format
}

func parseTemplate(s string) (*template.Template, error) {
	return template.New("webhook").Option("missingkey=error").Funcs(templateFuncs).Parse(s)
}
