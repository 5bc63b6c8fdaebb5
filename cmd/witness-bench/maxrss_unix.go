//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// maxRSS returns the peak resident set size of this process in MiB, or -1.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) >> 20 // bytes on darwin
	}
	return int64(ru.Maxrss) >> 10 // KiB on Linux and the BSDs
}
