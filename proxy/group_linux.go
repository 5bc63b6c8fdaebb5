package proxy

import (
	"os"
	"syscall"
)

// deathSignal asks the kernel to SIGKILL the server when the proxy dies
// abruptly (Pdeathsig), so that a crashed proxy leaves no server behind.
func deathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// blockingPipe returns a pipe in blocking mode. Reads then block in the
// kernel instead of going through the runtime's poller, which saves two
// wake-ups per hop: the proxy's added latency is mostly wake-ups.
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
