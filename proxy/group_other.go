//go:build !unix

package proxy

import (
	"io"
	"syscall"
)

// deathSignal returns no attribute: this system has no parent-death
// signal. Forwarder.Run refuses to start a server here before it gets this
// far (proctree.Supported).
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// pollable returns r unchanged (see the Linux version).
func pollable(r io.Reader) (io.Reader, func()) { return r, func() {} }
