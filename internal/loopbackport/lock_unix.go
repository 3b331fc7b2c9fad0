//go:build unix

package loopbackport

import (
	"os"
	"syscall"
)

// TryLock takes an exclusive lock on f without waiting; the kernel drops it
// when the process exits, however it exits.
func TryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
