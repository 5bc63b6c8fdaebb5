//go:build linux

package graph

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) of the process so far: on
// a shared machine a benchmark's CPU time varies less than its wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
