package loopbackport

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Claimed ports stay out of the kernel's ephemeral range (where
// httptest servers and outgoing connections of parallel test processes take
// theirs), are never handed out twice, and are locked against the module's
// other processes.
func TestClaimedPortsAreTheClaimersAlone(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		port, err := Claim()
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		if low := ephemeralLow(); port < lowest || port >= low {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, low)
		}
		// What another test process would do: open the port's lock file
		// and try to take it.
		other, err := os.Open(lockPath(port))
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && tryLock(other) {
			t.Errorf("port %d's lock could be taken by another process", port)
		}
		other.Close()
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s cannot be listened on: %v", addr, err)
		}
		l.Close()
	}
}
