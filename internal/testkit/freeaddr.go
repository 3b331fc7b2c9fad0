package testkit

import (
	"net"
	"strconv"
	"testing"

	"github.com/evalbridge/evalbridge/internal/loopbackport"
)

// FreeAddr is a loopback address ("127.0.0.1:port") nothing listens on now,
// whose port nothing else takes before the test binds it
// (internal/loopbackport says why listening on port 0 is not enough).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := loopbackport.Claim()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// DownURL is an http:// URL where nothing listens, for an endpoint that is
// down: connection refused for the whole test. A closed httptest server's
// URL is not that: its port goes back to the kernel's ephemeral pool, and a
// parallel test's server can get it and answer.
func DownURL(t testing.TB) string {
	t.Helper()
	return "http://" + FreeAddr(t)
}
