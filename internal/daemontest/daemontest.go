// Package daemontest runs long-lived peers in tests: a server, a proxy or
// a replaying server that listens on loopback until the test stops it.
// The test waits until the peer listens (on a known port, or at the URL
// it prints: "listening on http://HOST:PORT"), reads its output while it
// runs, and stops it with SIGTERM to check its exit code.
package daemontest

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// LockedBuffer is a bytes.Buffer a process writes to while the test reads.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listening matches the line the listening commands print on stderr.
var listening = regexp.MustCompile(`listening on (http://[0-9.]+:[0-9]+)`)

// Daemon is a long-running peer the test started.
type Daemon struct {
	Cmd    *exec.Cmd
	Stderr *LockedBuffer // its stdout and stderr
	URL    string        // where it listens
	limit  time.Duration
	done   chan struct{}
	err    error
}

// Start starts argv with env in a temporary folder and waits, at most
// limit, until it listens: on port when port is not 0, else at the URL it
// prints on stderr. The process is killed when the test ends.
func Start(t testing.TB, argv, env []string, port int, limit time.Duration) *Daemon {
	t.Helper()
	d := &Daemon{Stderr: &LockedBuffer{}, limit: limit, done: make(chan struct{})}
	d.Cmd = exec.Command(argv[0], argv[1:]...)
	d.Cmd.Dir = t.TempDir()
	d.Cmd.Env = env
	d.Cmd.Stderr = d.Stderr
	d.Cmd.Stdout = d.Stderr
	if err := d.Cmd.Start(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	go func() { d.err = d.Cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.Cmd.Process.Kill()
			<-d.done
		}
	})
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			t.Fatalf("%v ended before it listened: %v\n%s", argv, d.err, Tail(d.Stderr.String()))
		default:
		}
		if port == 0 {
			if m := listening.FindStringSubmatch(d.Stderr.String()); m != nil {
				d.URL = m[1]
				return d
			}
		} else if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			d.URL = "http://127.0.0.1:" + strconv.Itoa(port)
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%v did not listen within %v\n%s", argv, limit, Tail(d.Stderr.String()))
	return nil
}

// Stop sends SIGTERM and returns the exit code (-1: ended by a signal); a
// peer that does not stop within its limit is killed and fails the test.
func (d *Daemon) Stop(t testing.TB) int {
	t.Helper()
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(d.limit):
		d.Cmd.Process.Kill()
		<-d.done
		t.Fatalf("%v did not stop at SIGTERM\n%s", d.Cmd.Args, Tail(d.Stderr.String()))
	}
	var ee *exec.ExitError
	switch {
	case errors.As(d.err, &ee):
		return ee.ExitCode()
	case d.err != nil:
		t.Fatalf("%v: %v", d.Cmd.Args, d.err)
	}
	return 0
}

// FreePort returns a loopback port nobody listens on, for a peer that
// takes its port from its environment and prints no address.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Tail returns the last 4000 bytes of s, for failure messages.
func Tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
