package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Why FreeAddr does more than listen on port 0 and close: a port the
// kernel picked for one test is back in its ephemeral pool as soon as it is
// closed, and `go test ./...` runs packages in parallel, each with httptest
// servers and outgoing connections taking ephemeral ports. Between FreeAddr
// and the collector's bind, one of those took the port ("bind: address
// already in use", CI, TestTwoPipelinesKeepTheirTenants). So the port comes
// from below the kernel's ephemeral range, where nothing is handed out
// implicitly, and is claimed for the life of the test binary by a lock file
// no other test process of the module can take.

const (
	// lowestTestPort is where the ports FreeAddr hands out start; below it
	// are well-known services' ports.
	lowestTestPort = 20000
	// fallbackEphemeralLow is Linux's default first ephemeral port, for a
	// machine whose range cannot be read.
	fallbackEphemeralLow = 32768
)

var (
	claimedMu sync.Mutex
	// claimed holds this process's lock files, open until it exits so that
	// their locks hold as long as a test may use the ports.
	claimed = map[int]*os.File{}
)

// FreeAddr is a loopback address ("127.0.0.1:port") nothing listens on now,
// whose port the kernel does not hand out to other sockets and no other
// FreeAddr of this module's test processes returns.
func FreeAddr(t testing.TB) string {
	t.Helper()
	low, high := lowestTestPort, ephemeralLow()
	if high-low < 1000 {
		return kernelPickedAddr(t)
	}
	for range 200 {
		port := low + rand.IntN(high-low)
		if claimPort(port) {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
	}
	t.Fatalf("no free loopback port in [%d, %d) after 200 tries", low, high)
	return ""
}

// claimPort takes port for this process: its lock file, then a bind to see
// that nothing outside the module's tests listens there.
func claimPort(port int) bool {
	claimedMu.Lock()
	defer claimedMu.Unlock()
	if _, ok := claimed[port]; ok {
		return false
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("evalbridge-test-port-%d.lock", port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	if !tryLock(lock) {
		lock.Close()
		return false
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		lock.Close()
		return false
	}
	l.Close()
	claimed[port] = lock
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallbackEphemeralLow
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return fallbackEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return fallbackEphemeralLow
	}
	return low
}

// kernelPickedAddr is the plain way, for a machine whose ephemeral range
// leaves no room below it.
func kernelPickedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// DownURL is an http:// URL where nothing listens, for an endpoint that is
// down: connection refused for the whole test. A closed httptest server's
// URL is not that: its port goes back to the kernel's ephemeral pool, and a
// parallel test's server can get it and answer.
func DownURL(t testing.TB) string {
	t.Helper()
	return "http://" + FreeAddr(t)
}
