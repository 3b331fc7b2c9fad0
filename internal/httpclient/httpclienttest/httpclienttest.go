// Package httpclienttest holds what the credential tests of every outbound
// client share (docs/contract.md §17): a cross-host redirect, an address
// nothing listens on, and a check that no piece of a secret is in a text.
package httpclienttest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Redirect is an origin server that answers every request with a 307 to
// Other, a server on another port that counts what it receives.
type Redirect struct {
	Origin, Other         *httptest.Server
	originHits, otherHits atomic.Int32
}

// NewRedirect starts both servers; they are closed at the test's end.
func NewRedirect(t testing.TB) *Redirect {
	r := &Redirect{}
	r.Other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.otherHits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Other.Close)
	r.Origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.originHits.Add(1)
		http.Redirect(w, req, r.Other.URL+req.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(r.Origin.Close)
	return r
}

// OtherHost is the target's host:port, which an error must name.
func (r *Redirect) OtherHost() string { return strings.TrimPrefix(r.Other.URL, "http://") }

// OriginHits and OtherHits count the requests each server received.
func (r *Redirect) OriginHits() int32 { return r.originHits.Load() }
func (r *Redirect) OtherHits() int32  { return r.otherHits.Load() }

// Refused checks what a client given the redirect must have done: not
// followed it (Other received nothing), not retried it (Origin received one
// request), and said so naming the target's host in reported (its error,
// reason or log).
func (r *Redirect) Refused(t testing.TB, reported string) {
	t.Helper()
	if n := r.OtherHits(); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
	if n := r.OriginHits(); n != 1 {
		t.Errorf("a refused redirect was retried: %d requests", n)
	}
	if !strings.Contains(reported, r.OtherHost()) {
		t.Errorf("%q does not name the target host %s", reported, r.OtherHost())
	}
}

// Echo is a server that answers every request with a status and a body
// that quotes what echo takes from the request (its credentials), after
// as many padding bytes as SetPad last set: moved across an error's clip,
// the quote must never leave a piece of a secret.
type Echo struct {
	*httptest.Server
	pad atomic.Int32
}

// NewEcho starts an Echo; it is closed at the test's end.
func NewEcho(t testing.TB, status int, echo func(*http.Request) string) *Echo {
	e := &Echo{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.Repeat("x", int(e.pad.Load()))+echo(r))
	}))
	t.Cleanup(e.Close)
	return e
}

// SetPad sets the padding before the quote.
func (e *Echo) SetPad(n int) { e.pad.Store(int32(n)) }

// ClosedAddr is a host:port nothing listens on: a request there fails with
// an error in which net/http quotes the URL.
func ClosedAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// NoLeak fails when text holds any 8-byte piece of a secret (a whole
// secret, or the part a clip left).
func NoLeak(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for i := 0; i+8 <= len(s); i++ {
			if strings.Contains(text, s[i:i+8]) {
				t.Fatalf("%s holds %q of a secret: %s", where, s[i:i+8], text)
			}
		}
	}
}
