package offheap

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestAllocRelease: buffers have the asked capacity, are zeroed and
// writable, are mappings where the system has them, and Release gives
// them back (twice is harmless).
func TestAllocRelease(t *testing.T) {
	a := New(Options{})
	for _, n := range []int{1, 4096, 4<<20 + 3} {
		b := a.Alloc(n)
		if len(b) != 0 || cap(b) != n {
			t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
		}
		b = b[:n]
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Alloc(%d): byte %d is %d", n, i, b[i])
			}
		}
		b[0], b[n-1] = 1, 2
	}
	if b := a.Alloc(0); b != nil {
		t.Fatalf("Alloc(0) = %v", b)
	}
	if mapsHere() && a.Mapped() != 1+4096+4<<20+3 {
		t.Fatalf("mapped %d bytes", a.Mapped())
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if a.Mapped() != 0 {
		t.Fatalf("mapped %d bytes after Release", a.Mapped())
	}
	// after Release: heap memory, still usable
	if b := a.Alloc(10); cap(b) != 10 || a.Mapped() != 0 {
		t.Fatalf("Alloc after Release: cap %d, mapped %d", cap(b), a.Mapped())
	}
}

// TestOffHeap: a mapped buffer does not count in the Go heap.
func TestOffHeap(t *testing.T) {
	if !mapsHere() {
		t.Skip("no mappings on " + runtime.GOOS)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := New(Options{})
	defer a.Release()
	b := a.Alloc(64 << 20)[:64<<20]
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Fatalf("the Go heap grew %d MiB for a 64 MiB mapping", grew>>20)
	}
}

// TestFaultAfterRelease: with FaultAfterRelease, reading a buffer after
// Release faults (a recoverable panic with debug.SetPanicOnFault), and
// reading it before does not.
func TestFaultAfterRelease(t *testing.T) {
	if !protectsHere() {
		t.Skip("no PROT_NONE on " + runtime.GOOS)
	}
	a := New(Options{FaultAfterRelease: true})
	b := a.Alloc(8192)[:8192]
	b[5000] = 7
	if faulted(b, 5000) {
		t.Fatal("reading before Release faulted")
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if !faulted(b, 5000) {
		t.Fatal("reading after Release did not fault")
	}
}

// TestHugePages: the advice changes nothing a buffer holds.
func TestHugePages(t *testing.T) {
	a := New(Options{HugePages: true})
	b := a.Alloc(4 << 20)[:4<<20]
	b[len(b)-1] = 9
	if b[0] != 0 || b[len(b)-1] != 9 {
		t.Fatal("huge page buffer")
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
}

// faulted reports whether reading b[i] faults.
func faulted(b []byte, i int) (f bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			_, f = r.(interface{ Addr() uintptr })
		}
	}()
	sink = b[i]
	return false
}

var sink byte

func mapsHere() bool {
	switch runtime.GOOS {
	case "windows", "js", "wasip1", "plan9":
		return false
	}
	return true
}

func protectsHere() bool {
	return runtime.GOOS == "linux" || runtime.GOOS == "darwin"
}
