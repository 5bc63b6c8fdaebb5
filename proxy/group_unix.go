//go:build unix && !linux

package proxy

import (
	"io"
	"syscall"
)

// deathSignal returns no attribute: only Linux can kill the server when
// the proxy dies (Pdeathsig). Elsewhere a crashed proxy leaves the server
// to notice its closed stdin (docs/design/platforms.md).
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// pollable returns r unchanged: reopening a pipe through /dev/fd gives a
// new file description on Linux only (see the Linux version).
func pollable(r io.Reader) (io.Reader, func()) { return r, func() {} }
