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
//
// Bounded against a broken or hostile server (§23): a window is never split
// below one second, so a server that ignores the window (every answer a
// full page) is reported after about log2(lookback in seconds) + 2
// requests; an answer larger than --max-answer-bytes is refused, and
// answers are decoded as they stream in, one trace at a time, so memory
// stays within a small multiple of one answer.
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
	// progressPeriod: a progress line on stderr at least this often while
	// paging, whatever was read.
	progressPeriod time.Duration
	maxAnswerBytes int64
	client         *http.Client
	now            func() time.Time
}

// Defaults of the §23 bounds.
const (
	defaultMaxAnswerBytes = 64 << 20
	// minWindow is the narrowest window asked: a full page for a window
	// this narrow means the server ignores the window (or holds more than
	// a page of traces in one second).
	minWindow = time.Second
)

// errNotTraceList: an /api/traces answer whose "data" is not a list.
var errNotTraceList = errors.New(`/api/traces: "data" is not a list of traces`)

// errAnswerTooLarge is returned by an answer's reader past --max-answer-bytes.
var errAnswerTooLarge = errors.New("answer too large")

// cappedReader reads at most max bytes of r, then fails with
// errAnswerTooLarge: a server that sends more is refused, not buffered.
type cappedReader struct {
	r        io.Reader
	n, max   int64
	exceeded bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		c.exceeded = true
		return 0, errAnswerTooLarge
	}
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.exceeded = true
		return n, errAnswerTooLarge
	}
	return n, err
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
	s := &jaegerSource{pageSize: 200, progressEvery: 500, progressPeriod: 5 * time.Second, now: time.Now}
	fs.StringVar(&s.url, "jaeger", "", "read traces from the Jaeger query API at `URL` (e.g. http://jaeger:16686) instead of INPUT files")
	fs.StringVar(&s.service, "service", "", "with --jaeger: the service whose traces are read (default: every service Jaeger knows)")
	fs.StringVar(&s.operation, "operation", "", "with --jaeger: only traces with a span of this operation (span name)")
	fs.Var(&s.tags, "tags", "with --jaeger: only traces with a span holding the attribute KEY=VALUE (repeatable; all must hold)")
	fs.DurationVar(&s.lookback, "lookback", 24*time.Hour, "with --jaeger: how far back from now to read")
	fs.IntVar(&s.limit, "limit", 1000, "with --jaeger: the most traces to read")
	fs.Int64Var(&s.maxAnswerBytes, "max-answer-bytes", defaultMaxAnswerBytes, "with --jaeger: refuse an answer of the Jaeger API larger than this many `bytes`")
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
	if s.maxAnswerBytes <= 0 {
		return fmt.Errorf("--max-answer-bytes %d: want a positive number of bytes", s.maxAnswerBytes)
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

// get asks the API and returns its "data", raw: for small answers (the
// service list).
func (s *jaegerSource) get(ctx context.Context, u *url.URL) (json.RawMessage, error) {
	var data json.RawMessage
	err := s.stream(ctx, u, func(dec *json.Decoder) error { return dec.Decode(&data) })
	return data, err
}

// getTraces asks /api/traces and returns the traces of its "data", decoded
// one at a time as the answer streams in.
func (s *jaegerSource) getTraces(ctx context.Context, u *url.URL) ([]json.RawMessage, error) {
	var traces []json.RawMessage
	err := s.stream(ctx, u, func(dec *json.Decoder) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok == nil { // "data": null
			return nil
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return errNotTraceList
		}
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			traces = append(traces, raw)
		}
		_, err = dec.Token() // ]
		return err
	})
	return traces, err
}

// stream asks the API and reads its envelope as it streams in: data reads
// the value of "data"; "errors" is kept for the message. The answer is
// refused past --max-answer-bytes. Errors name the URL without its query.
func (s *jaegerSource) stream(ctx context.Context, u *url.URL, data func(*json.Decoder) error) error {
	shown := httpclient.StripURL(u.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("--jaeger %s: %v", shown, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its text repeats the URL with the query
		}
		return fmt.Errorf("--jaeger %s: Jaeger query API not reachable: %v", shown, err)
	}
	defer resp.Body.Close()
	tooLarge := func() error {
		return fmt.Errorf("--jaeger %s: the answer is larger than --max-answer-bytes (%d bytes); refused. Narrow the search "+
			"(--service, --operation, --tags, a shorter --lookback) or raise --max-answer-bytes", shown, s.maxAnswerBytes)
	}
	if resp.ContentLength > s.maxAnswerBytes {
		return tooLarge()
	}
	body := &cappedReader{r: resp.Body, max: s.maxAnswerBytes}
	if resp.StatusCode != http.StatusOK {
		var ans jaegerErrors
		msg := ""
		if b, err := io.ReadAll(io.LimitReader(body, 64<<10)); err == nil && json.Unmarshal(b, &ans) == nil && len(ans.Errors) > 0 {
			msg = ": " + ans.Errors[0].Msg
		}
		return fmt.Errorf("--jaeger %s: HTTP %d%s (is this the Jaeger query service, port 16686?)", shown, resp.StatusCode, msg)
	}
	var ans jaegerErrors
	err = decodeEnvelope(json.NewDecoder(body), data, &ans)
	switch {
	case body.exceeded || errors.Is(err, errAnswerTooLarge):
		return tooLarge()
	case errors.Is(err, errNotTraceList):
		return fmt.Errorf("--jaeger %s: %v", httpclient.StripURL(s.url), err)
	case err != nil:
		return fmt.Errorf("--jaeger %s: the answer is not Jaeger's JSON (is this the Jaeger query service, port 16686?): %v", shown, err)
	case len(ans.Errors) > 0:
		return fmt.Errorf("--jaeger %s: Jaeger says: %s", shown, ans.Errors[0].Msg)
	}
	return nil
}

// jaegerErrors is the "errors" member of Jaeger's query API answers.
type jaegerErrors struct {
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

// decodeEnvelope reads one answer object: data reads the value of "data",
// "errors" goes to ans, other members are skipped.
func decodeEnvelope(dec *json.Decoder, data func(*json.Decoder) error, ans *jaegerErrors) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case "data":
			err = data(dec)
		case "errors":
			err = dec.Decode(&ans.Errors)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	_, err = dec.Token() // }
	return err
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
	if s.maxAnswerBytes <= 0 {
		s.maxAnswerBytes = defaultMaxAnswerBytes
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
	lastLine := began
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
			traces, err := s.getTraces(ctx, &u)
			if err != nil {
				return nil, err
			}
			pages++
			if now := s.now(); s.progressPeriod > 0 && now.Sub(lastLine) >= s.progressPeriod {
				lastLine = now
				fmt.Fprintf(stderr, "evalctl: jaeger: %d requests, %d traces read, asking %s..%s (%s)\n", pages, len(seen),
					time.UnixMicro(w.start).UTC().Format(time.RFC3339), time.UnixMicro(w.end).UTC().Format(time.RFC3339),
					now.Sub(began).Round(time.Millisecond))
			}
			if len(traces) >= s.pageSize {
				// A full page may have left traces out: ask for each half.
				// The later half is asked first (popped last-in), so a
				// --limit keeps the most recent traces. Never below a
				// second: a full page for one second means the server
				// ignores the window, and halving would never end.
				if w.end-w.start+1 < 2*minWindow.Microseconds() {
					return nil, fmt.Errorf("--jaeger %s: a window of %s (%s) still answers a full page of %d traces after %d requests: "+
						"the server ignores the time window (start, end), or holds more than %d matching traces in one second; "+
						"narrow the search with --service, --operation or --tags",
						httpclient.StripURL(s.url), time.Duration(w.end-w.start+1)*time.Microsecond,
						time.UnixMicro(w.start).UTC().Format(time.RFC3339), len(traces), pages, s.pageSize)
				}
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
