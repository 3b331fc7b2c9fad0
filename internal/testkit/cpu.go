package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is the user and system CPU time of this process so far
// (getrusage: finer than /proc's clock ticks). Benchmarks report CPU per
// item with it: steadier than wall time on a shared machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
