//go:build linux

package pagecache

import (
	"bytes"
	"crypto/sha256"
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

const testSize = 24 * Window

// writeFile writes testSize bytes of repeated chunk at path, through a
// Writer (drop) or to the file, and returns their sha256.
func writeFile(t *testing.T, path string, drop bool) []byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var w io.Writer = f
	if drop {
		w = NewWriter(f)
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096+1) // not a divisor of the window
	h := sha256.New()
	for n := 0; n < testSize; n += len(chunk) {
		c := chunk[:min(len(chunk), testSize-n)]
		if _, err := w.Write(c); err != nil {
			t.Fatal(err)
		}
		h.Write(c)
	}
	return h.Sum(nil)
}

// diskFolder returns a temporary folder, skipping the test when it is in
// memory (nothing is written back there).
func diskFolder(t *testing.T) string {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skip("the temporary folder is in memory: nothing is written back")
	}
	return dir
}

// A file written through a Writer holds what was written, and only the
// windows still being written back stay in the page cache; the same file
// written directly stays there whole (which shows the measurement sees
// pages).
func TestWriter(t *testing.T) {
	dir := diskFolder(t)
	plain, dropped := filepath.Join(dir, "plain"), filepath.Join(dir, "dropped")
	writeFile(t, plain, false)
	want := writeFile(t, dropped, true)
	if r := resident(t, plain); r < testSize*9/10 {
		t.Skipf("written directly, only %d of %d bytes stayed in the page cache: memory is short, nothing to compare", r, testSize)
	}
	limit := int64((Ahead + 2) * Window)
	if r := resident(t, dropped); r > limit {
		t.Errorf("written through a Writer, %d of %d bytes stayed in the page cache, want at most %d", r, testSize, limit)
	}
	// read after the count: reading brings the pages back
	b, err := os.ReadFile(dropped)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(b); !bytes.Equal(got[:], want) {
		t.Fatal("written through a Writer, the file does not hold what was written")
	}
}
