package evaluators

//go:generate go run ../internal/telemetrydoc/mdgen -metadata ../processor/evalprocessor/metadata.yaml

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/evaluators/internal/metadata"
	"github.com/evalbridge/evalbridge/internal/httpclient"
	"github.com/evalbridge/evalbridge/internal/httpretry"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// `type: remote` (docs/contract.md §15): the user's own check behind an HTTP
// endpoint, in any language. Each case is POSTed as
// {"evaluator": "<name>", "case": {…}} (the fields of caseView, free text
// clipped to max_field_bytes as in judge prompts); the reply is
// {"score": …, "reason": "…"} or {"skipped": "<reason>"}. The engine runs it
// in the background like a judge evaluator (factory.Async), so a slow
// endpoint delays only its trace, and its late answers go where judges' do.
// The HTTP handling (which statuses retry, backoff, Retry-After, redaction)
// is the judge client's.

type remoteOptions struct {
	// ClientConfig holds endpoint (the URL POSTed to), headers, tls,
	// proxy_url, auth and timeout (per attempt).
	confighttp.ClientConfig `mapstructure:",squash"`
	// APIKey is sent as `Authorization: Bearer <api_key>` when set.
	APIKey configopaque.String `mapstructure:"api_key"`
	// MaxConcurrency bounds the requests in flight to the endpoint.
	MaxConcurrency int               `mapstructure:"max_concurrency"`
	Retry          judge.RetryConfig `mapstructure:"retry"`
	// MaxFieldBytes clips each free-text field of the case.
	MaxFieldBytes int `mapstructure:"max_field_bytes"`
}

type remote struct {
	name string
	o    remoteOptions
	set  component.TelemetrySettings
	warn *zap.Logger
	sem  chan struct{}

	http     httpclient.Client
	secrets  *httpclient.Secrets
	requests atomic.Pointer[metric.Int64Counter]
	now      func() time.Time
	// redactBody masks the body (`redaction:`); nil sends it as built.
	redactBody func([]byte) []byte
}

// versionOptions: of a remote evaluator's options only max_field_bytes
// changes what the endpoint is asked; the rest say where and how often.
func (r *remote) versionOptions() map[string]any {
	return map[string]any{"max_field_bytes": r.o.MaxFieldBytes}
}

func newRemote(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	cc := confighttp.NewDefaultClientConfig()
	cc.Timeout = 10 * time.Second
	o := remoteOptions{
		ClientConfig:   cc,
		MaxConcurrency: 4,
		Retry:          judge.RetryConfig{MaxAttempts: 3, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 10 * time.Second},
		MaxFieldBytes:  8192,
	}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	secrets := httpclient.NewSecrets(o.Endpoint, o.Headers, o.APIKey)
	var errs []error
	if o.Endpoint == "" {
		errs = append(errs, errors.New("option `endpoint` is required: the URL each case is POSTed to"))
	} else if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("option `endpoint`: %q is not an http(s) URL", secrets.Redact(httpclient.StripURL(o.Endpoint))))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("option `timeout`: %v must be positive (a hung endpoint must not hold a case forever)", o.Timeout))
	}
	if o.MaxConcurrency <= 0 {
		errs = append(errs, fmt.Errorf("option `max_concurrency`: %d must be positive", o.MaxConcurrency))
	}
	if o.Retry.MaxAttempts <= 0 {
		errs = append(errs, fmt.Errorf("option `retry.max_attempts`: %d must be at least 1", o.Retry.MaxAttempts))
	}
	if o.Retry.InitialBackoff < 0 || o.Retry.MaxBackoff < o.Retry.InitialBackoff {
		errs = append(errs, errors.New("option `retry`: initial_backoff must not be negative nor above max_backoff"))
	}
	if o.MaxFieldBytes <= 0 {
		errs = append(errs, fmt.Errorf("option `max_field_bytes`: %d must be positive", o.MaxFieldBytes))
	}
	if err := o.ClientConfig.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("http client: %s", secrets.Redact(err.Error())))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	set := deps.Telemetry
	if set.Logger == nil {
		set.Logger = zap.NewNop()
	}
	if set.MeterProvider == nil {
		set.MeterProvider = noop.NewMeterProvider()
	}
	logger := set.Logger.With(zap.String("evaluator", deps.Name))
	return &remote{
		name: deps.Name, o: o, set: set, redactBody: deps.RedactBody, secrets: secrets,
		// An endpoint that is down fails every case: warn a few times a
		// minute per message, not once per case (the metric counts each).
		warn: logger.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
			return zapcore.NewSamplerWithOptions(core, time.Minute, 3, 0)
		})),
		sem: make(chan struct{}, o.MaxConcurrency),
		now: time.Now,
	}, nil
}

// MaxConcurrency is the bound on requests in flight; the engine sizes its
// background work with it as it does with a judge's.
func (r *remote) MaxConcurrency() int { return r.o.MaxConcurrency }

// Start builds the HTTP client with the host's extensions (auth).
func (r *remote) Start(ctx context.Context, host component.Host) error {
	tb, err := metadata.NewTelemetryBuilder(r.set)
	if err != nil {
		return err
	}
	r.requests.Store(&tb.ProcessorEvalRemoteRequests)
	if err := r.http.Start(ctx, &r.o.ClientConfig, host, r.set, r.secrets); err != nil {
		return fmt.Errorf("evaluator %q: %w", r.name, err)
	}
	return nil
}

// Shutdown closes idle connections; safe without Start and twice.
func (r *remote) Shutdown(context.Context) error {
	r.http.Close()
	return nil
}

// redact removes the credentials (api_key, header values, the endpoint's
// userinfo and query) and writes URLs without userinfo and query; before
// any clipping.
func (r *remote) redact(s string) string { return r.secrets.Redact(s) }

func (r *remote) count(ctx context.Context, outcome string) {
	if c := r.requests.Load(); c != nil {
		(*c).Add(ctx, 1, metric.WithAttributes(attribute.String("evaluator", r.name), attribute.String("outcome", outcome)))
	}
}

// remoteReply is what the endpoint answers.
type remoteReply struct {
	Score   *num    `json:"score"`
	Reason  string  `json:"reason"`
	Skipped *string `json:"skipped"`
}

func (r *remote) Evaluate(ctx context.Context, c *adapter.Case) Result {
	hc := r.http.Get()
	if hc == nil {
		return Errored("remote evaluator not started")
	}
	body, err := json.Marshal(map[string]any{"evaluator": r.name, "case": caseView(c, r.o.MaxFieldBytes)})
	if err != nil {
		return Errored("encoding the case: %v", err)
	}
	if r.redactBody != nil {
		body = r.redactBody(body)
	}
	reply, err := r.do(ctx, hc, body)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || judge.IsTimeout(err) {
			r.count(ctx, outcome(ctx, "timeout"))
			r.warn.Warn("remote evaluator did not answer in time; the evaluation is reported as timeout and the spans go on", zap.String("error", err.Error()))
			return Result{Status: StatusTimeout, Reason: clipText("the remote evaluator did not answer in time: "+err.Error(), 900)}
		}
		r.count(ctx, "error")
		r.warn.Warn("remote evaluator failed; the evaluation is reported as error and the spans go on", zap.String("error", err.Error()))
		return Errored("%s", clipText(err.Error(), 900))
	}
	if reply.Skipped != nil {
		r.count(ctx, "skipped")
		if strings.TrimSpace(*reply.Skipped) == "" {
			return Skipped("the remote evaluator skipped the case")
		}
		return Skipped("%s", clipText(*reply.Skipped, 900))
	}
	r.count(ctx, "ok")
	res := scoreFromNumber(reply.Score.v, "the remote evaluator returned score", nil)
	if res.Status == StatusError {
		return res
	}
	if s := strings.TrimSpace(reply.Reason); s != "" {
		res.Reason = clipText(s, 900)
	}
	return res
}

func outcome(ctx context.Context, deadline string) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return "canceled"
	}
	return deadline
}

// do runs the attempts: a retryable failure (network, attempt timeout, 429,
// 5xx) is retried after the backoff, or after Retry-After when the server
// gives one, unless that would pass ctx's deadline.
func (r *remote) do(ctx context.Context, hc *http.Client, body []byte) (*remoteReply, error) {
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free slot (max_concurrency %d): %w", r.o.MaxConcurrency, ctx.Err())
	}
	attempts := r.o.Retry.MaxAttempts
	for attempt := 1; ; attempt++ {
		reply, retryAfter, retryable, err := r.attempt(ctx, hc, body)
		if err == nil {
			return reply, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
		if !retryable || attempt >= attempts {
			return nil, fmt.Errorf("%w (attempt %d of %d)", err, attempt, attempts)
		}
		wait, fits := r.o.Retry.NextWait(ctx, attempt, retryAfter)
		if !fits {
			return nil, fmt.Errorf("%w (attempt %d of %d; %s)", err, attempt, attempts, judge.PastDeadline(wait))
		}
		r.count(ctx, "retry")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// errAttemptTimeout marks a request that ran out of the per-attempt
// `timeout`: the evaluation is then `timeout`, not `error`.
type errAttemptTimeout struct{ d time.Duration }

func (e errAttemptTimeout) Error() string {
	return fmt.Sprintf("no answer within the `timeout` of %v", e.d)
}
func (errAttemptTimeout) Timeout() bool { return true }

// transportError classifies a failure to send or read: the caller's
// context ending is final; an attempt timeout or a network error is retried.
func (r *remote) transportError(ctx context.Context, what string, err error) (retry bool, _ error) {
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case httpclient.IsRedirect(err):
		return false, fmt.Errorf("%s: %s", what, r.redact(err.Error()))
	case judge.IsTimeout(err):
		return true, errAttemptTimeout{r.o.Timeout}
	}
	return true, fmt.Errorf("%s: %s", what, r.redact(err.Error()))
}

func (r *remote) attempt(ctx context.Context, hc *http.Client, body []byte) (_ *remoteReply, retryAfter time.Duration, retryable bool, _ error) {
	req, err := httpclient.NewJSONRequest(ctx, r.o.Endpoint, r.o.APIKey, body)
	if err != nil {
		return nil, 0, false, errors.New(r.redact(err.Error()))
	}
	resp, err := hc.Do(req)
	if err != nil {
		retry, err := r.transportError(ctx, "request failed", err)
		return nil, 0, retry, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		retry, err := r.transportError(ctx, "reading the reply", err)
		return nil, 0, retry, err
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("HTTP %d from the remote evaluator: %s", resp.StatusCode, clipText(strings.TrimSpace(r.redact(string(data))), 300))
		retry, after := judge.RetryableStatus(resp.StatusCode)
		if after {
			retryAfter = httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), r.now())
		}
		return nil, retryAfter, retry, err
	}
	var reply remoteReply
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, 0, false, fmt.Errorf("the remote evaluator's reply is not {\"score\": …, \"reason\": …} nor {\"skipped\": …}: %s (body: %q)",
			r.redact(err.Error()), clipText(r.redact(string(data)), 200))
	}
	if reply.Skipped == nil && (reply.Score == nil || !reply.Score.ok) {
		return nil, 0, false, fmt.Errorf("the remote evaluator's reply has neither \"score\" nor \"skipped\" (body: %q)", clipText(r.redact(string(data)), 200))
	}
	return &reply, 0, false, nil
}
