package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/evalbridge/evalbridge/internal/httpclient"
)

// jaegerSource reads the traces to score from a Jaeger query API
// (docs/contract.md §23): GET {url}/api/traces by service, operation, tags
// and lookback, bounded by --limit. It is the input of `evalctl run
// --jaeger` and `evalctl estimate --jaeger`.
//
// Jaeger's search has no cursor: it returns at most `limit` traces of those
// with a span that matches, in an order of its own (the memory store:
// most recently stored first). So the lookback is cut into time windows; a
// window whose answer is a full page is split in two and asked again, until
// every window answers less than a page (so nothing in it was left out) or
// --limit traces are in hand. Traces are told apart by id: one whose spans
// fall in two windows is read once.
type jaegerSource struct {
	url       string
	service   string
	operation string
	tags      tagFlags
	lookback  time.Duration
	limit     int
	pageSize  int
	// progressEvery: a progress line on stderr after this many traces (and
	// at the end of a pull that took more than one page).
	progressEvery int
	client        *http.Client
	now           func() time.Time
}

// tagFlags is the repeatable --tags k=v flag.
type tagFlags []string

func (t *tagFlags) String() string { return strings.Join(*t, ",") }

func (t *tagFlags) Set(v string) error {
	k, _, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*t = append(*t, v)
	return nil
}

// addJaegerFlags declares the §23 input flags on fs.
func addJaegerFlags(fs *flag.FlagSet) *jaegerSource {
	s := &jaegerSource{pageSize: 200, progressEvery: 500, now: time.Now}
	fs.StringVar(&s.url, "jaeger", "", "read traces from the Jaeger query API at `URL` (e.g. http://jaeger:16686) instead of INPUT files")
	fs.StringVar(&s.service, "service", "", "with --jaeger: the service whose traces are read (default: every service Jaeger knows)")
	fs.StringVar(&s.operation, "operation", "", "with --jaeger: only traces with a span of this operation (span name)")
	fs.Var(&s.tags, "tags", "with --jaeger: only traces with a span holding the attribute KEY=VALUE (repeatable; all must hold)")
	fs.DurationVar(&s.lookback, "lookback", 24*time.Hour, "with --jaeger: how far back from now to read")
	fs.IntVar(&s.limit, "limit", 1000, "with --jaeger: the most traces to read")
	return s
}

func (s *jaegerSource) enabled() bool { return s.url != "" }

// check validates the flags before any request: a bad URL is a usage error.
func (s *jaegerSource) check() error {
	u, err := url.Parse(s.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--jaeger %s: want an http:// or https:// URL of the Jaeger query service, e.g. http://localhost:16686", httpclient.StripURL(s.url))
	}
	if s.limit <= 0 {
		return fmt.Errorf("--limit %d: want a positive number of traces", s.limit)
	}
	if s.lookback <= 0 {
		return fmt.Errorf("--lookback %s: want a positive duration", s.lookback)
	}
	return nil
}

// base is the API root: the configured URL without a trailing slash and
// without an /api/traces the user may have pasted from a browser.
func (s *jaegerSource) base() (*url.URL, error) {
	u, err := url.Parse(s.url)
	if err != nil {
		return nil, err
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/traces")
	u.Path = strings.TrimSuffix(u.Path, "/search")
	return u, nil
}

// jaegerAnswer is the envelope of Jaeger's query API answers.
type jaegerAnswer struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

// get asks the API and decodes its envelope; errors name the URL without
// its query.
func (s *jaegerSource) get(ctx context.Context, u *url.URL) (json.RawMessage, error) {
	shown := httpclient.StripURL(u.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("--jaeger %s: %v", shown, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its text repeats the URL with the query
		}
		return nil, fmt.Errorf("--jaeger %s: Jaeger query API not reachable: %v", shown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, fmt.Errorf("--jaeger %s: reading the answer: %v", shown, err)
	}
	var ans jaegerAnswer
	jerr := json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusOK {
		msg := ""
		if jerr == nil && len(ans.Errors) > 0 {
			msg = ": " + ans.Errors[0].Msg
		}
		return nil, fmt.Errorf("--jaeger %s: HTTP %d%s (is this the Jaeger query service, port 16686?)", shown, resp.StatusCode, msg)
	}
	if jerr != nil {
		return nil, fmt.Errorf("--jaeger %s: the answer is not Jaeger's JSON (is this the Jaeger query service, port 16686?): %v", shown, jerr)
	}
	if len(ans.Errors) > 0 {
		return nil, fmt.Errorf("--jaeger %s: Jaeger says: %s", shown, ans.Errors[0].Msg)
	}
	return ans.Data, nil
}

// services lists the services to read: --service, or every service Jaeger
// knows.
func (s *jaegerSource) services(ctx context.Context, base *url.URL) ([]string, error) {
	if s.service != "" {
		return []string{s.service}, nil
	}
	u := *base
	u.Path += "/api/services"
	data, err := s.get(ctx, &u)
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return nil, fmt.Errorf("--jaeger %s: /api/services: not a list of names: %v", httpclient.StripURL(s.url), err)
	}
	sort.Strings(names)
	return names, nil
}

// window is a time range of the search, in µs since the epoch, inclusive.
type window struct{ start, end int64 }

// pull reads the traces and returns them as documents, as readInputs does
// for files.
func (s *jaegerSource) pull(ctx context.Context, stderr io.Writer) ([]document, error) {
	if s.client == nil {
		// A redirect to another host is refused as for every outbound call
		// (docs/contract.md §17): the URL's userinfo is a credential.
		s.client = &http.Client{Timeout: time.Minute, CheckRedirect: httpclient.CheckRedirect}
	}
	base, err := s.base()
	if err != nil {
		return nil, fmt.Errorf("--jaeger %s: %v", httpclient.StripURL(s.url), err)
	}
	services, err := s.services(ctx, base)
	if err != nil {
		return nil, err
	}
	var tagsJSON string
	if len(s.tags) > 0 {
		m := make(map[string]string, len(s.tags))
		for _, kv := range s.tags {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		b, _ := json.Marshal(m)
		tagsJSON = string(b)
	}
	began := s.now()
	end := began.UnixMicro()
	seen := map[string]bool{}
	var docs []document
	pages, spans, lastProgress := 0, 0, 0
	for _, svc := range services {
		todo := []window{{start: end - s.lookback.Microseconds(), end: end}}
		for len(todo) > 0 && len(seen) < s.limit {
			w := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			q := url.Values{}
			q.Set("service", svc)
			if s.operation != "" {
				q.Set("operation", s.operation)
			}
			if tagsJSON != "" {
				q.Set("tags", tagsJSON)
			}
			q.Set("start", strconv.FormatInt(w.start, 10))
			q.Set("end", strconv.FormatInt(w.end, 10))
			q.Set("limit", strconv.Itoa(s.pageSize))
			u := *base
			u.Path += "/api/traces"
			u.RawQuery = q.Encode()
			data, err := s.get(ctx, &u)
			if err != nil {
				return nil, err
			}
			pages++
			var traces []json.RawMessage
			if err := json.Unmarshal(data, &traces); err != nil {
				return nil, fmt.Errorf("--jaeger %s: /api/traces: \"data\" is not a list of traces: %v", httpclient.StripURL(s.url), err)
			}
			if len(traces) >= s.pageSize && w.end > w.start {
				// A full page may have left traces out: ask for each half.
				// The later half is asked first (popped last-in), so a
				// --limit keeps the most recent traces.
				mid := w.start + (w.end-w.start)/2
				todo = append(todo, window{w.start, mid}, window{mid + 1, w.end})
				continue
			}
			for _, raw := range traces {
				if len(seen) >= s.limit {
					break
				}
				var head struct {
					TraceID string `json:"traceID"`
				}
				if err := json.Unmarshal(raw, &head); err != nil || head.TraceID == "" {
					return nil, fmt.Errorf("--jaeger %s: /api/traces: a trace without a traceID", httpclient.StripURL(s.url))
				}
				id := strings.ToLower(strings.TrimLeft(head.TraceID, "0"))
				if seen[id] {
					continue
				}
				seen[id] = true
				td, err := jaegerToTraces(raw, "jaeger-trace")
				if err != nil {
					return nil, fmt.Errorf("--jaeger %s: trace %s: %w", httpclient.StripURL(s.url), head.TraceID, err)
				}
				spans += td.SpanCount()
				docs = append(docs, document{source: "jaeger trace " + head.TraceID, traces: td})
			}
			if len(seen)-lastProgress >= s.progressEvery {
				lastProgress = len(seen)
				fmt.Fprintf(stderr, "evalctl: jaeger: %d traces read (%d requests, %s)\n", len(seen), pages, s.now().Sub(began).Round(time.Millisecond))
			}
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("--jaeger %s: no traces found (%s)", httpclient.StripURL(s.url), s.describe(services))
	}
	fmt.Fprintf(stderr, "evalctl: jaeger: read %d traces, %d spans from %s in %d requests (%s)\n",
		len(docs), spans, httpclient.StripURL(s.url), pages, s.now().Sub(began).Round(time.Millisecond))
	return docs, nil
}

// describe says what was asked, for the "no traces found" message.
func (s *jaegerSource) describe(services []string) string {
	var parts []string
	switch {
	case s.service != "":
		parts = append(parts, "service "+s.service)
	case len(services) == 0:
		parts = append(parts, "Jaeger knows no service")
	default:
		parts = append(parts, fmt.Sprintf("%d services", len(services)))
	}
	if s.operation != "" {
		parts = append(parts, "operation "+s.operation)
	}
	for _, kv := range s.tags {
		parts = append(parts, "tag "+kv)
	}
	parts = append(parts, "lookback "+s.lookback.String())
	return strings.Join(parts, ", ")
}

// readSource reads the traces to score: from Jaeger when --jaeger is set,
// else from the INPUT files.
func readSource(ctx context.Context, jaeger *jaegerSource, inputs []string, stdin io.Reader, stderr io.Writer) ([]document, error) {
	if jaeger.enabled() {
		return jaeger.pull(ctx, stderr)
	}
	return readInputs(inputs, stdin)
}

// checkInputs says what is wrong with the choice between INPUT files and
// --jaeger (one of the two), and with the --jaeger flags; nil when nothing.
func (s *jaegerSource) checkInputs(inputs []string) error {
	switch {
	case len(inputs) == 0 && !s.enabled():
		return errors.New("give at least one INPUT (a file, or - for stdin), or --jaeger URL")
	case len(inputs) > 0 && s.enabled():
		return errors.New("give INPUT files or --jaeger URL, not both")
	case s.enabled():
		return s.check()
	}
	return nil
}
