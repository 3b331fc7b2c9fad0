// Package httpclient is what every evalbridge client of a user-configured
// HTTP endpoint (the judges, the `remote` evaluator, the webhook exporter)
// shares about credentials (docs/contract.md §17): the client built from
// confighttp refuses a redirect to another scheme, host or port, and the
// text of an error, a reason or a log line is redacted — api_key, secret,
// every configured header value, the endpoint's userinfo and query, and
// every URL written without userinfo and query — before it is clipped.
// Retry-After is internal/httpretry's.
package httpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
)

// NewJSONRequest is a POST of the JSON body to url that accepts JSON and,
// when apiKey is set, sends `Authorization: Bearer <api_key>`: the request
// of the judges and the `remote` evaluator.
func NewJSONRequest(ctx context.Context, url string, apiKey configopaque.String, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+string(apiKey))
	}
	return req, nil
}

// maxRedirects is the most same-origin redirects followed, as net/http's
// default policy.
const maxRedirects = 10

// RedirectError is a redirect that was not followed because it leads to
// another scheme, host or port than the configured endpoint: the headers
// (Authorization, api keys) and the body would go there.
type RedirectError struct {
	// From and To are scheme://host[:port], without path, userinfo or query.
	From, To string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the endpoint redirected to %s, another scheme, host or port than the configured endpoint (%s); "+
		"the redirect is not followed, so that no credential or content goes there", e.To, e.From)
}

// IsRedirect says err is (or wraps) a redirect that was refused: retrying
// it is pointless.
func IsRedirect(err error) bool {
	var re *RedirectError
	return errors.As(err, &re)
}

// CheckRedirect is the http.Client redirect policy of every outbound
// client: a redirect is followed only to the scheme, host and port of the
// first request (so a chain that leaves them is stopped too), at most
// maxRedirects times.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if !sameOrigin(first, req.URL) {
		return &RedirectError{From: origin(first), To: origin(req.URL)}
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port(u))
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// New builds the client of a confighttp config (TLS, proxy, auth
// extensions, headers) with the redirect policy CheckRedirect. ext may be
// nil (evalctl has no host). An error is redacted by s.
func New(ctx context.Context, cc *confighttp.ClientConfig, ext map[component.ID]component.Component,
	set component.TelemetrySettings, s *Secrets,
) (*http.Client, error) {
	hc, err := cc.ToClient(ctx, ext, set)
	if err != nil {
		return nil, errors.New(s.Redact(err.Error()))
	}
	hc.CheckRedirect = CheckRedirect
	return hc, nil
}

// Client is the HTTP client of a confighttp config, built at Start with
// the host's extensions (auth) and closed at Shutdown. It is safe for
// concurrent use; Get returns nil before Start and after Close.
type Client struct {
	mu sync.Mutex
	hc *http.Client
}

// Start builds the client (New). host may be nil (evalctl has none).
func (h *Client) Start(ctx context.Context, cc *confighttp.ClientConfig, host component.Host,
	set component.TelemetrySettings, s *Secrets,
) error {
	var ext map[component.ID]component.Component
	if host != nil {
		ext = host.GetExtensions()
	}
	hc, err := New(ctx, cc, ext, set, s)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.hc = hc
	h.mu.Unlock()
	return nil
}

// Get is the client, nil when not started.
func (h *Client) Get() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hc
}

// Close closes idle connections; safe without Start and twice.
func (h *Client) Close() {
	h.mu.Lock()
	hc := h.hc
	h.hc = nil
	h.mu.Unlock()
	if hc != nil {
		hc.CloseIdleConnections()
	}
}
