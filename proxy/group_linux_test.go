package proxy

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPollableStdin: a blocking pipe, as a host passes its stdin, is opened
// again as a file of the proxy's own that reads the same bytes, while the
// host's file keeps its blocking mode; what is not a pipe is returned as
// is.
func TestPollableStdin(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	got, closeIt := pollable(r)
	if got == io.Reader(r) {
		t.Fatal("a pipe was not opened again")
	}
	if _, err := w.WriteString("line\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := io.ReadAll(got)
	if err != nil || string(b) != "line\n" {
		t.Errorf("read %q, %v", b, err)
	}
	flags, err := fcntlGetfl(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Errorf("the host's file was made non-blocking")
	}
	closeIt()
	if _, err := got.(*os.File).Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("the reopened file was not closed: %v", err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if same, _ := pollable(f); same != io.Reader(f) {
		t.Errorf("a regular file was opened again")
	}
	if same, _ := pollable(strings.NewReader("x")); same == nil {
		t.Errorf("a reader that is not a file was lost")
	}
}

func fcntlGetfl(fd int) (int, error) {
	v, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}
