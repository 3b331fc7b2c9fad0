//go:build unix

package loopbackport

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on f without waiting; the kernel drops it
// when the process exits, however it exits.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
