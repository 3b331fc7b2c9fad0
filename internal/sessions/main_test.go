package sessions

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (an
// HTTP client's connections, a judge or remote call, a worker pool).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
