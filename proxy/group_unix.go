//go:build unix && !linux

package proxy

import (
	"os"
	"syscall"
)

// deathSignal returns no attribute: only Linux can kill the server when
// the proxy dies (Pdeathsig). Elsewhere a crashed proxy leaves the server
// to notice its closed stdin (docs/design/platforms.md).
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// blockingPipe returns a pipe in blocking mode (see the Linux version). Without
// pipe2, close-on-exec is set under syscall.ForkLock, so that no child
// started meanwhile inherits the descriptors.
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(fds[:])
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("pipe", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
