package httpclient

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/config/configopaque"
)

// Redacted replaces a secret in text.
const Redacted = "[REDACTED]"

// minSecretBytes: a value shorter than this is left alone when it appears
// in text (replacing "1" or "on" everywhere would mangle the text, and it
// is no secret worth the name). URLs are rewritten whatever their parts.
const minSecretBytes = 4

// Secrets are the credentials of one outbound client: what Redact removes
// from any text that may leave the collector (a reason, a log line, an
// error). The zero value and nil redact URLs only.
type Secrets struct {
	values []string // longest first, each in every form text may hold it
}

// NewSecrets gathers the credentials of a client: the endpoint's userinfo
// and query (whole and each value), every header value and the given keys
// (api_key, secret).
func NewSecrets(endpoint string, headers configopaque.MapList, keys ...configopaque.String) *Secrets {
	s := &Secrets{}
	add := func(v string) {
		if len(v) < minSecretBytes {
			return
		}
		forms := []string{v}
		if b, err := json.Marshal(v); err == nil { // echoed inside JSON: "\u0026", "\/"
			forms = append(forms, string(b[1:len(b)-1]))
		}
		// Other encoders escape "/" in JSON too; a URL echo holds it escaped.
		forms = append(forms, strings.ReplaceAll(forms[len(forms)-1], "/", `\/`), url.QueryEscape(v), url.PathEscape(v))
		for _, f := range forms {
			if len(f) >= minSecretBytes && !slices.Contains(s.values, f) {
				s.values = append(s.values, f)
			}
		}
	}
	for _, k := range keys {
		add(string(k))
	}
	for _, h := range headers {
		add(string(h.Value))
	}
	if u, err := url.Parse(endpoint); err == nil {
		if u.User != nil {
			add(u.User.String())
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
		if u.RawQuery != "" {
			add(u.RawQuery)
			for _, vs := range u.Query() {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	// Longest first: a value that holds a shorter one goes whole.
	slices.SortStableFunc(s.values, func(a, b string) int { return len(b) - len(a) })
	return s
}

// Redact removes the secrets from text, then writes every URL in it
// without userinfo and query. It must run on the whole text, before any
// clipping: a secret crossing the cut would escape it.
func (s *Secrets) Redact(text string) string {
	return urlRE.ReplaceAllStringFunc(s.RedactValues(text), StripURL)
}

// RedactValues removes the secrets only, leaving URLs as they are: for
// content that is not a message of ours (a judge's verdict quoting a link).
func (s *Secrets) RedactValues(text string) string {
	if s != nil {
		for _, v := range s.values {
			text = strings.ReplaceAll(text, v, Redacted)
		}
	}
	return text
}

// urlRE finds URLs in text; a quote, a space or an angle bracket ends one
// (net/http quotes the URL in its errors).
var urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// StripURL is a URL without userinfo, query and fragment: what may be
// written in a message. It works on text that does not parse as a URL too.
func StripURL(raw string) string {
	scheme, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q]
	}
	return scheme + rest
}
