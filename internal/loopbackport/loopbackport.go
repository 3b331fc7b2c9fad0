// Package loopbackport picks loopback ports for collectors a test or the
// load generator starts, ports nothing else takes before the collector
// binds them.
//
// Listening on port 0 and closing is not enough: the port the kernel picked
// is back in its ephemeral pool at once, and `go test ./...` runs packages
// in parallel, each with httptest servers and loopback connections taking
// ephemeral ports. Between the pick and the collector's bind one of those
// took the port ("bind: address already in use", CI,
// TestTwoPipelinesKeepTheirTenants); a collector restarted on its ports
// after SIGKILL has the same gap. So a port comes from below the kernel's
// ephemeral range, where nothing is handed out implicitly, and is claimed
// for the life of the process by a lock file that the module's other
// processes cannot take.
package loopbackport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

const (
	// lowest is where the ports handed out start; below it are
	// well-known services' ports.
	lowest = 20000
	// fallbackEphemeralLow is Linux's default first ephemeral port, for a
	// machine whose range cannot be read.
	fallbackEphemeralLow = 32768
	tries                = 200
)

var (
	claimedMu sync.Mutex
	// claimed holds this process's lock files, open until it exits so that
	// their locks hold as long as the ports may be used.
	claimed = map[int]*os.File{}
)

// Claim returns a loopback port nothing listens on now, that the kernel
// does not hand out to other sockets and that no other Claim, in this
// process or another, returns while this process lives.
func Claim() (int, error) {
	low, high := lowest, ephemeralLow()
	if high-low < 1000 {
		return kernelPicked()
	}
	for range tries {
		port := low + rand.IntN(high-low)
		if claim(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d) after %d tries", low, high, tries)
}

// lockPath is the file whose lock stands for port. The files stay behind
// (at most one per port below the ephemeral range): removing one while
// another process has it open would let a third lock a new file of the same
// name.
func lockPath(port int) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("evalbridge-port-%d.lock", port))
}

// claim takes port for this process: its lock file, then a bind to see
// that nothing else listens there.
func claim(port int) bool {
	claimedMu.Lock()
	defer claimedMu.Unlock()
	if _, ok := claimed[port]; ok {
		return false
	}
	lock, err := os.OpenFile(lockPath(port), os.O_CREATE|os.O_RDWR, 0o600)
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

// kernelPicked is the plain way, for a machine whose ephemeral range
// leaves no room below it.
func kernelPicked() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address: " + l.Addr().String())
	}
	return addr.Port, nil
}
