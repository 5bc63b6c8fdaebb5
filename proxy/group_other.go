//go:build !unix

package proxy

import (
	"os"
	"syscall"
)

// deathSignal returns no attribute: this system has no parent-death
// signal. Forwarder.Run refuses to start a server here before it gets this
// far (proctree.Supported).
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// blockingPipe returns an ordinary pipe.
func blockingPipe() (r, w *os.File, err error) { return os.Pipe() }
