package main

import (
	"context"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/annotator"
	"github.com/evalbridge/evalbridge/internal/otlphttpbody"
)

// arrival is what the sink saw of one generated span.
type arrival struct {
	count    int
	first    time.Time
	statuses map[string]string // evaluator name -> eval.<name>.status, of the last copy with any
	failed   bool              // eval.failed present
	// badResource: a copy arrived under a resource other than the one the
	// load generator sent (holding splits requests by resource and trace
	// and puts them together again on release).
	badResource bool
}

// sentResource is the resource every generated span is sent under.
var sentResource = func() pcommon.Map {
	m := pcommon.NewMap()
	newGenerator(0, 1).resource(m)
	return m
}()

// sink is the capture backend: an OTLP/HTTP traces endpoint on loopback (or
// the address given) that the collector exports to. It can be taken down and
// brought back up on the same address to simulate a backend outage.
type sink struct {
	addr string

	mu    sync.Mutex
	bySeq map[int64]*arrival
	// Stream mode's result spans (eval.generated) carry the results of
	// the span they are a child of: by its span id, joined with the
	// generated span of that id (seqByID) in snapshot.
	resultsFor map[pcommon.SpanID]*arrival
	seqByID    map[pcommon.SpanID]int64
	results    int               // result spans received
	bytes      int64             // OTLP protobuf bytes of what was received
	foreign    int               // spans without a loadgen.seq attribute
	spans      int               // spans received, copies included
	last       time.Time         // time of the last request with spans
	leaks      int               // spans holding a fragment of secret
	secret     string            // the judge key to look for; "" for none
	leakSeen   map[string]string // one example per leak place, for the report
	delay      time.Duration     // answer each request this late: a remote backend's latency

	srv *http.Server
	ln  net.Listener
}

// newSinkState is a sink that records, not yet serving.
func newSinkState() *sink {
	return &sink{bySeq: map[int64]*arrival{}, leakSeen: map[string]string{},
		resultsFor: map[pcommon.SpanID]*arrival{}, seqByID: map[pcommon.SpanID]int64{}}
}

func newSink(addr string) (*sink, error) {
	s := newSinkState()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

func (s *sink) serve(ln net.Listener) {
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	go func() { _ = srv.Serve(ln) }()
}

// stop takes the backend down: connections are refused until start.
func (s *sink) stop() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = srv.Close()
}

// start brings the backend back on the same address.
func (s *sink) start() error {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger for a moment
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	s.serve(ln)
	return nil
}

func (s *sink) close() { s.stop() }

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	td, ok := otlphttpbody.Traces(w, r)
	if !ok {
		return
	}
	s.record(td, time.Now())
	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
	}
	otlphttpbody.Accept(w)
}

// record counts the spans of td.
func (s *sink) record(td ptrace.Traces, now time.Time) {
	size := (&ptrace.ProtoMarshaler{}).TracesSize(td)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = now
	s.bytes += int64(size)
	adapter.ForEachSpan(td, func(r adapter.SpanRef) { s.recordSpan(r.Span, r.Resource(), now) })
}

func (s *sink) recordSpan(sp ptrace.Span, res pcommon.Resource, now time.Time) {
	s.spans++
	if s.secret != "" {
		s.checkLeak(sp)
	}
	v, ok := sp.Attributes().Get(attrSeq)
	var a *arrival
	switch {
	case ok && v.Type() == pcommon.ValueTypeInt:
		s.seqByID[sp.SpanID()] = v.Int()
		if a = s.bySeq[v.Int()]; a == nil {
			a = &arrival{first: now}
			s.bySeq[v.Int()] = a
		}
		a.count++
	case isResultSpan(sp):
		s.results++
		if a = s.resultsFor[sp.ParentSpanID()]; a == nil {
			a = &arrival{first: now}
			s.resultsFor[sp.ParentSpanID()] = a
		}
	default:
		s.foreign++
		return
	}
	if !res.Attributes().Equal(sentResource) {
		a.badResource = true
	}
	readResults(sp, a)
}

// isResultSpan: a span stream mode made for the results of its parent.
func isResultSpan(sp ptrace.Span) bool {
	g, ok := sp.Attributes().Get(adapter.AttrGenerated)
	return ok && g.Type() == pcommon.ValueTypeBool && g.Bool() && !sp.ParentSpanID().IsEmpty()
}

// readResults notes the eval.* results sp carries in a.
func readResults(sp ptrace.Span, a *arrival) {
	sp.Attributes().Range(func(k string, v pcommon.Value) bool {
		if k == annotator.AttrFailed {
			a.failed = true
			return true
		}
		if name, ok := strings.CutSuffix(strings.TrimPrefix(k, annotator.AttrPrefix), ".status"); ok && strings.HasPrefix(k, annotator.AttrPrefix) && k == annotator.StatusKey(name) {
			if a.statuses == nil {
				a.statuses = map[string]string{}
			}
			a.statuses[name] = v.AsString()
		}
		return true
	})
}

// checkLeak looks for any 8-byte window of the secret in the span's
// attribute and event attribute values (a clipped key is still a leak).
func (s *sink) checkLeak(sp ptrace.Span) {
	found := false
	look := func(where string, m pcommon.Map) {
		m.Range(func(k string, v pcommon.Value) bool {
			if frag := secretFragment(v.AsString(), s.secret); frag != "" {
				found = true
				s.leakSeen["span attribute "+k] = frag
			}
			return true
		})
	}
	look("attributes", sp.Attributes())
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		look("event", evs.At(i).Attributes())
	}
	if found {
		s.leaks++
	}
}

// secretFragment returns a fragment (8 bytes or more) of secret found in
// text, or "".
func secretFragment(text, secret string) string {
	const window = 8
	if len(secret) < window || len(text) < window {
		return ""
	}
	for i := 0; i+window <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+window]) {
			return secret[i : i+window]
		}
	}
	return ""
}

// quiet waits until no spans arrived for idle, or until deadline, and
// reports whether the sink went quiet and wantSeen (when > 0) spans were seen.
func (s *sink) quiet(ctx context.Context, idle time.Duration, deadline time.Time, want func() bool) bool {
	for {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if want() && time.Since(last) >= idle {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bytesReceived is the OTLP protobuf size of all the sink received.
func (s *sink) bytesReceived() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// resultSpans is how many result spans (stream mode) arrived.
func (s *sink) resultSpans() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.results
}

// snapshot copies the arrivals for the accounting; a result span's results
// count as its evaluated span's.
func (s *sink) snapshot() (map[int64]arrival, int, int, int, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]arrival, len(s.bySeq))
	for k, v := range s.bySeq {
		out[k] = *v
	}
	// Result spans: their results count as the evaluated span's; one
	// whose evaluated span never arrived is foreign.
	foreign := s.foreign
	for id, r := range s.resultsFor {
		seq, ok := s.seqByID[id]
		a, arrived := out[seq]
		if !ok || !arrived {
			foreign++
			continue
		}
		a.failed = a.failed || r.failed
		a.badResource = a.badResource || r.badResource
		if len(r.statuses) > 0 {
			st := make(map[string]string, len(a.statuses)+len(r.statuses))
			maps.Copy(st, a.statuses)
			maps.Copy(st, r.statuses)
			a.statuses = st
		}
		out[seq] = a
	}
	leaks := map[string]string{}
	for k, v := range s.leakSeen {
		leaks[k] = v
	}
	return out, s.spans, foreign, s.leaks, leaks
}
