//go:build linux

package atomicfile

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident returns how many bytes of the file path are in the page cache
// (mincore of a mapping that touches nothing).
func resident(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += int64(page)
		}
	}
	return n
}

// A file published with DropCache holds what was written, and only the
// windows still being written back stay in the page cache; the same file
// published without it stays there whole (which shows the measurement can
// see pages).
func TestDropCache(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skip("the temporary folder is in memory: nothing is written back")
	}
	const size = 24 * dropWindow
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	want := sha256.New()
	for w := 0; w < size; w += len(chunk) {
		want.Write(chunk)
	}
	for _, drop := range []bool{false, true} {
		b, err := os.ReadFile(publishRun(t, filepath.Join(dir, fmt.Sprint("read-", drop)), drop, size, chunk))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); !bytes.Equal(got[:], want.Sum(nil)) {
			t.Fatalf("DropCache %v: the file does not hold what was written", drop)
		}
	}
	// measured on new files: the ones above were read back
	plain := publishRun(t, filepath.Join(dir, "plain"), false, size, chunk)
	dropped := publishRun(t, filepath.Join(dir, "dropped"), true, size, chunk)
	if r := resident(t, plain); r < size*9/10 {
		t.Skipf("without DropCache only %d of %d bytes stayed in the page cache: memory is short, nothing to compare", r, size)
	}
	limit := int64((dropAhead + 2) * dropWindow)
	if r := resident(t, dropped); r > limit {
		t.Errorf("with DropCache %d of %d bytes stayed in the page cache, want at most %d", r, size, limit)
	}
}

// publishRun publishes size bytes of repeated chunk at path, with or
// without DropCache, and returns path.
func publishRun(t *testing.T, path string, drop bool, size int, chunk []byte) string {
	t.Helper()
	err := Publish(path, Options{NoSync: true, DropCache: drop}, func(w io.Writer) error {
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}
