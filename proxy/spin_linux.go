package proxy

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// spinBudget is how long the binary's forwarding loop keeps polling both
// line streams after the last line it forwarded, before it blocks
// (docs/design/proxy.md, "Latency").
var spinBudget = spinFromEnv()

func spinFromEnv() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("ATW_SPIN")); err == nil {
		return v
	}
	return 200 * time.Microsecond
}

// idleWait bounds one blocking wait of the loop, so that a stream closed
// by another goroutine (which does not wake poll(2)) is noticed.
const idleWait = 100 * time.Millisecond

// spinSide is one line stream of the spinning loop.
type spinSide struct {
	f    *os.File
	rc   syscall.RawConn
	p    *linePump
	done bool
}

// startSpinning starts the binary's two line streams (host -> server and
// server -> host) in one goroutine that, after each line it forwards,
// polls both inputs without blocking for spinBudget, so that the next
// message (typically the answer to the line just forwarded) is read
// without waiting for a thread to be woken; then it blocks in poll(2) on
// both. Recording is as in pumpLines (record, then forward). It needs both
// inputs to be non-blocking files (the host's stdin reopened by pollable);
// false if they are not, and nothing is started.
func (s *forwarding) startSpinning() bool {
	in, ok := s.stdin.(*os.File)
	if !ok || in == nil {
		return false
	}
	c, okc := newSpinSide(in, newLinePump(s.inW, C2S, s.rec, s.maxLine))
	o, oko := newSpinSide(s.outR, newLinePump(s.f.Stdout, S2C, s.rec, s.maxLine))
	if !okc || !oko {
		return false
	}
	go s.spin(c, o)
	return true
}

// newSpinSide wraps f, if it is a non-blocking file.
func newSpinSide(f *os.File, p *linePump) (*spinSide, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	nonblock := false
	if rc.Control(func(fd uintptr) {
		fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	}) != nil || !nonblock {
		return nil, false
	}
	return &spinSide{f: f, rc: rc, p: p}, true
}

// spin is the loop of startSpinning. When the server's output ends, the
// host's stream goes on alone in an ordinary blocking pumpLines loop.
func (s *forwarding) spin(c, o *spinSide) {
	buf := make([]byte, 64<<10)
	last := time.Now()
	for !o.done {
		progressed := false
		for _, sd := range []*spinSide{c, o} {
			if sd.done {
				continue
			}
			n, err, again := sd.read(buf)
			if n > 0 {
				progressed = true
				if !sd.p.take(buf[:n]) {
					sd.done = true
				}
			}
			if !sd.done && !again && err != nil {
				sd.p.end()
				sd.done = true
			}
			if sd.done {
				progressed = true
				if sd == c {
					s.hostEnded()
				} else {
					s.serverEnded()
				}
			}
		}
		if progressed {
			last = time.Now()
			continue
		}
		if time.Since(last) < spinBudget {
			if os.Getenv("ATW_SPIN_YIELD") != "" {
				_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
			continue
		}
		waitReadable(c, o)
		last = time.Time{} // after a blocking wait, spin again only after a forward
	}
	if !c.done {
		c.p.run(c.f, buf)
		s.hostEnded()
	}
}

// read is one non-blocking read(2); again says there was nothing to read
// yet. EOF is io.EOF-like: n 0 and a non-nil error.
func (sd *spinSide) read(buf []byte) (n int, err error, again bool) {
	cerr := sd.rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), buf)
			if err != syscall.EINTR {
				break
			}
		}
		return true
	})
	if cerr != nil {
		return 0, cerr, false
	}
	if err == syscall.EAGAIN {
		return 0, nil, true
	}
	if n < 0 {
		n = 0
	}
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err, false
}

// pollFd is struct pollfd of poll(2).
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1 // POLLIN

// waitReadable blocks until one of the streams not yet done can be read,
// has ended or failed, or idleWait has passed. The Go runtime sees the
// call as a system call (its P is released), so a garbage collection is
// not held up by it.
func waitReadable(sides ...*spinSide) {
	var fds []pollFd
	var wait func(i int)
	wait = func(i int) {
		if i == len(sides) {
			if len(fds) == 0 {
				return
			}
			ts := syscall.NsecToTimespec(int64(idleWait))
			_, _, _ = syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			return
		}
		if sides[i].done {
			wait(i + 1)
			return
		}
		// Control keeps the descriptor open (not reused) while poll(2) runs
		if sides[i].rc.Control(func(fd uintptr) {
			fds = append(fds, pollFd{fd: int32(fd), events: pollIn})
			wait(i + 1)
		}) != nil {
			return // closed: the next read says so at once
		}
	}
	wait(0)
}
