package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"

	"github.com/evalbridge/evalbridge/internal/httpclient"
	"github.com/evalbridge/evalbridge/internal/httpretry"
)

// ErrBudgetExhausted is returned (wrapped) when a call would exceed the
// judge's token or cost budget; evaluators report it as `skipped`, not as an error.
var ErrBudgetExhausted = errors.New("judge budget exhausted")

// ErrNotStarted is returned when Complete is called before Start.
var ErrNotStarted = errors.New("judge client not started")

// Message is one chat message of a judge prompt.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Client calls one configured judge. It is safe for concurrent use and starts
// no goroutine: rate limits are computed lazily and concurrency is a semaphore.
type Client struct {
	name   string
	cfg    Config
	set    component.TelemetrySettings
	logger *zap.Logger
	warn   *zap.Logger
	url    string

	http    httpclient.Client
	secrets *httpclient.Secrets

	sem    chan struct{}
	rpm    *rate.Limiter
	tpm    *rate.Limiter
	budget *budget
	cache  *lru
	// costBudget is budget.cost_per_hour/day in nano units; book sums the
	// replies' tokens by evaluator; est is set in estimate mode (cost.go).
	costBudget *budget
	book       *costBook
	est        *estimator
	tel        *telemetry

	now func() time.Time
}

// New builds a client for the judge `name` from a validated config. Nothing
// is started until Start.
func New(name string, cfg Config, set component.TelemetrySettings) (*Client, error) {
	cfg = cfg.normalized()
	if set.Logger == nil {
		set.Logger = zap.NewNop()
	}
	c := &Client{
		name:   name,
		cfg:    cfg,
		set:    set,
		logger: set.Logger.With(zap.String("judge", name)),
		// A judge that is down fails every call: warn a few times a minute
		// per message, not once per span (the metrics count every one).
		warn: set.Logger.With(zap.String("judge", name)).WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
			return zapcore.NewSamplerWithOptions(core, time.Minute, 3, 0)
		})),
		url:        chatCompletionsURL(cfg.Endpoint),
		secrets:    httpclient.NewSecrets(cfg.Endpoint, cfg.Headers, cfg.APIKey),
		sem:        make(chan struct{}, cfg.MaxConcurrency),
		budget:     &budget{perHour: cfg.Budget.TokensPerHour, perDay: cfg.Budget.TokensPerDay},
		costBudget: &budget{what: "cost", perHour: nanos(cfg.Budget.CostPerHour), perDay: nanos(cfg.Budget.CostPerDay)},
		book:       &costBook{judge: name, price: cfg.Price, by: map[string]*Spend{}},
		cache:      newLRU(cfg.CacheSize),
		now:        time.Now,
	}
	if cfg.RequestsPerMinute > 0 {
		c.rpm = rate.NewLimiter(rate.Limit(float64(cfg.RequestsPerMinute)/60), max(1, cfg.RequestsPerMinute/60))
	}
	if cfg.TokensPerMinute > 0 {
		c.tpm = rate.NewLimiter(rate.Limit(float64(cfg.TokensPerMinute)/60), cfg.TokensPerMinute)
	}
	tel, err := newTelemetry(name, set, c.budget, c.now, c.book)
	if err != nil {
		return nil, err
	}
	c.tel = tel
	return c, nil
}

// Name is the judge's name in `judges:`.
func (c *Client) Name() string { return c.name }

// MaxFieldBytes is how much of one span field may go into a prompt.
func (c *Client) MaxFieldBytes() int { return c.cfg.MaxFieldBytes }

// MaxConcurrency is the bound on requests in flight.
func (c *Client) MaxConcurrency() int { return c.cfg.MaxConcurrency }

// Start builds the HTTP client (TLS, proxy, auth extensions, headers).
func (c *Client) Start(ctx context.Context, host component.Host) error {
	if err := c.http.Start(ctx, &c.cfg.ClientConfig, host, c.set, c.secrets); err != nil {
		return fmt.Errorf("judge %q: %w", c.name, err)
	}
	return nil
}

// Shutdown closes idle connections and unregisters the metric callbacks. It
// is safe without Start and more than once.
func (c *Client) Shutdown(context.Context) error {
	c.http.Close()
	return c.tel.shutdown()
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

// Complete sends one chat-completions request and returns the reply's
// content. Identical prompts are answered from the cache when the earlier
// reply held a JSON object. Errors wrap ErrBudgetExhausted, or the caller's
// context error, and never contain the API key.
func (c *Client) Complete(ctx context.Context, msgs []Message) (string, error) {
	hc := c.http.Get()
	if hc == nil && c.est == nil {
		return "", fmt.Errorf("judge %q: %w", c.name, ErrNotStarted)
	}
	req := chatRequest{Model: c.cfg.Model, Messages: msgs, Temperature: c.cfg.Temperature, MaxTokens: c.cfg.MaxTokens}
	if c.cfg.JSONResponse {
		req.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("judge %q: encoding the request: %w", c.name, err)
	}
	key := cacheKey(body)
	if c.est != nil {
		return c.estimateCall(ctx, msgs, key)
	}
	if v, ok := c.cache.get(key); ok {
		c.tel.cacheHit(ctx)
		return v, nil
	}

	booked, bookedCost, err := c.reserve(ctx, msgs)
	if err != nil {
		return "", err
	}

	var usage usage
	content, _, err := c.do(ctx, hc, body, estimateTokens(msgs, c.cfg.MaxTokens), &usage)
	if err != nil {
		c.refund(booked, bookedCost)
		c.warn.Warn("judge request failed; the evaluation is reported as error or timeout and the spans go on",
			zap.String("error", err.Error()))
		return "", err
	}
	c.account(ctx, msgs, content, usage, booked, bookedCost)
	if _, perr := ExtractJSON(content); perr == nil {
		c.cache.put(key, content)
	} else {
		c.warn.Warn("judge reply holds no JSON object; the evaluation is reported as error and the spans go on",
			zap.Int("reply_bytes", len(content)))
	}
	return content, nil
}

// do runs the attempts; it returns the content and the tokens the reply
// reported (all of them, in and out, in *got).
func (c *Client) do(ctx context.Context, hc *http.Client, body []byte, est int64, got *usage) (string, int64, error) {
	attempts := c.cfg.Retry.MaxAttempts
	var last error
	for attempt := 1; attempt <= attempts; attempt++ {
		if err := c.pace(ctx, est); err != nil {
			if ctx.Err() == nil {
				// The limiter saw that the wait would pass the deadline.
				c.tel.request(ctx, "rate_limited", 0)
				return "", 0, fmt.Errorf("judge %q: %w: requests_per_minute/tokens_per_minute leave no slot before the evaluation's deadline (%v)",
					c.name, context.DeadlineExceeded, err)
			}
			c.tel.request(ctx, outcomeOf(ctx), 0)
			return "", 0, c.wrapCtx(ctx, err, last)
		}
		start := time.Now()
		content, usage, retryAfter, retryable, err := c.attempt(ctx, hc, body)
		elapsed := time.Since(start)
		if err == nil {
			c.tel.request(ctx, "ok", elapsed)
			c.tel.tokens(ctx, usage)
			*got = usage
			return content, usage.total(), nil
		}
		last = err
		if ctx.Err() != nil {
			c.tel.request(ctx, outcomeOf(ctx), elapsed)
			return "", 0, c.wrapCtx(ctx, ctx.Err(), last)
		}
		if !retryable || attempt == attempts {
			c.tel.request(ctx, "error", elapsed)
			return "", 0, fmt.Errorf("judge %q: %w (attempt %d of %d)", c.name, err, attempt, attempts)
		}
		wait, fits := c.cfg.Retry.NextWait(ctx, attempt, retryAfter)
		if !fits {
			c.tel.request(ctx, "error", elapsed)
			return "", 0, fmt.Errorf("judge %q: %w (attempt %d of %d; %s)", c.name, err, attempt, attempts, PastDeadline(wait))
		}
		c.tel.request(ctx, "retry", elapsed)
		c.logger.Debug("retrying judge request", zap.Int("attempt", attempt), zap.Duration("wait", wait), zap.String("error", err.Error()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.tel.request(ctx, outcomeOf(ctx), 0)
			return "", 0, c.wrapCtx(ctx, ctx.Err(), last)
		case <-t.C:
		}
	}
	return "", 0, fmt.Errorf("judge %q: %w", c.name, last)
}

// pace waits for the rate limits and a concurrency slot. The slot is taken
// here and released by attempt.
func (c *Client) pace(ctx context.Context, est int64) error {
	if c.rpm != nil {
		if err := c.rpm.Wait(ctx); err != nil {
			return err
		}
	}
	if c.tpm != nil {
		n := int(min(est, int64(c.tpm.Burst())))
		if err := c.tpm.WaitN(ctx, n); err != nil {
			return err
		}
	}
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type usage struct{ in, out, all int64 }

func (u usage) total() int64 {
	if u.all > 0 {
		return u.all
	}
	return u.in + u.out
}

// attempt makes one request; it releases the slot pace took.
func (c *Client) attempt(ctx context.Context, hc *http.Client, body []byte) (content string, u usage, retryAfter time.Duration, retryable bool, err error) {
	defer func() { <-c.sem }()
	req, err := httpclient.NewJSONRequest(ctx, c.url, c.cfg.APIKey, body)
	if err != nil {
		return "", u, 0, false, errors.New(c.redact(err.Error()))
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", u, 0, false, ctx.Err()
		}
		msg := c.redact(err.Error())
		if httpclient.IsRedirect(err) {
			return "", u, 0, false, fmt.Errorf("request failed: %s", msg)
		}
		if IsTimeout(err) {
			return "", u, 0, true, fmt.Errorf("request timed out after %v (the judge's `timeout`)", c.cfg.Timeout)
		}
		return "", u, 0, true, fmt.Errorf("request failed: %s", msg)
	}
	defer resp.Body.Close()
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if rerr != nil {
		if ctx.Err() != nil {
			return "", u, 0, false, ctx.Err()
		}
		return "", u, 0, true, fmt.Errorf("reading the reply: %s", c.redact(rerr.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		// Redact first, then clip: a key crossing the cut would escape a
		// redaction of the clipped text.
		err := fmt.Errorf("HTTP %d from the judge: %s", resp.StatusCode, clip(strings.TrimSpace(c.redact(string(data))), 300))
		retry, after := RetryableStatus(resp.StatusCode)
		if after {
			return "", u, httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), c.now()), retry, err
		}
		return "", u, 0, retry, err
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", u, 0, false, fmt.Errorf("the judge's HTTP reply is not a chat completion: %s (%d bytes, beginning %q)",
			c.redact(err.Error()), len(data), clip(c.redact(string(data)), excerptBytes))
	}
	if cr.Usage != nil {
		u = usage{in: cr.Usage.PromptTokens, out: cr.Usage.CompletionTokens, all: cr.Usage.TotalTokens}
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == nil {
		return "", u, 0, false, errors.New("the judge's reply has no choices[0].message.content")
	}
	// The content may quote the request (a proxy or a model echoing its
	// headers); everything downstream — parse errors, verdict reasons, the
	// cache — sees it redacted.
	return c.secrets.RedactValues(*cr.Choices[0].Message.Content), u, 0, false, nil
}

// wrapCtx reports the caller's deadline or cancellation, keeping the last
// attempt's error as context.
func (c *Client) wrapCtx(ctx context.Context, err, last error) error {
	cause := err
	if ctx.Err() != nil {
		cause = ctx.Err()
	}
	if last != nil {
		return fmt.Errorf("judge %q: %w (last attempt: %v)", c.name, cause, last)
	}
	return fmt.Errorf("judge %q: %w", c.name, cause)
}

func outcomeOf(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timeout"
	}
	return "canceled"
}

// excerptBytes is the most of a reply's text an error quotes.
const excerptBytes = 120

// redact removes the credentials (api_key, header values, the endpoint's
// userinfo and query) from text that may come from the transport or the
// server (an error, an echoed body), and writes URLs without userinfo and
// query. It must run on the whole text, before any clipping.
func (c *Client) redact(s string) string { return c.secrets.Redact(s) }

// estimateTokens is a guess (4 bytes a token, plus the reply's limit) the
// token rate (tokens_per_minute) paces by before the reply says; budgets
// book a bound instead (reserve).
func estimateTokens(msgs []Message, maxTokens int) int64 {
	n := int64(0)
	for _, m := range msgs {
		n += int64(len(m.Content))/4 + 8
	}
	if maxTokens > 0 {
		n += int64(maxTokens)
	} else {
		n += 256
	}
	return n
}

// chatCompletionsURL is {endpoint}/chat/completions with the path appended
// to the endpoint's path, so a query the endpoint carries (Azure OpenAI's
// `?api-version=…`) stays a query instead of swallowing the path.
func chatCompletionsURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil { // Validate rejects it; keep the plain form for configs built in code
		return strings.TrimRight(endpoint, "/") + "/chat/completions"
	}
	return u.JoinPath("chat", "completions").String()
}

func cacheKey(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}
