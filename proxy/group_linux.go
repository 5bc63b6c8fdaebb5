package proxy

import (
	"io"
	"os"
	"strconv"
	"syscall"
)

// deathSignal asks the kernel to SIGKILL the server when the proxy dies
// abruptly (Pdeathsig), so that a crashed proxy leaves no server behind.
func deathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// pollable returns a reader of the host's stdin that waits in the Go
// runtime's poller rather than in a blocking read(2), and the function
// that closes it. A blocking read keeps the goroutine in a system call,
// and the runtime then takes its P away on almost every read once the
// goroutine has run 10 ms without passing through the scheduler, which
// costs several thread wake-ups per round trip (docs/design/proxy.md,
// "Latency"). An inherited stdin is normally in blocking mode, and its
// open file description is shared with the host: setting O_NONBLOCK on it
// would change the host's file too. A pipe (the usual case) can instead
// be opened again through /proc/self/fd, which gives the proxy a file
// description of its own on the same pipe. Anything else (a socket, a
// terminal, a file, a reader that is not a file) is returned unchanged.
func pollable(r io.Reader) (io.Reader, func()) {
	nop := func() {}
	f, ok := r.(*os.File)
	if !ok {
		return r, nop
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return r, nop
	}
	fd := -1
	_ = rc.Control(func(u uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(u), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO {
			fd = int(u)
		}
	})
	if fd < 0 {
		return r, nop
	}
	nfd, err := syscall.Open("/proc/self/fd/"+strconv.Itoa(fd), syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return r, nop
	}
	nf := os.NewFile(uintptr(nfd), f.Name())
	return nf, func() { nf.Close() }
}
