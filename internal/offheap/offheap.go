// Package offheap hands out byte buffers that live outside the Go heap:
// memory the garbage collector neither scans nor paces against.
//
// Why: the collector lets the heap grow to about twice the live heap
// (GOGC=100) before it collects. A stream that keeps large, long-lived
// buffers (the external sort's runs of graph.StreamNQuads) thereby also
// grants garbage that much more room, and every fresh page the garbage
// fills is a page fault; on some machines a fault costs as much as
// touching the page many times over. Buffers taken from an Arena do not
// count towards the live heap, so the collector's goal stays near what
// the program really keeps on the heap.
//
// On linux, darwin and the other unix systems whose syscall package has
// Mmap, an Arena's buffers are anonymous private mappings, returned to
// the system by Release. Elsewhere (windows, wasm), or when a mapping
// fails, they are plain Go slices, which the collector frees as usual.
// No unsafe conversion is involved: a mapping is a []byte.
//
// The one rule: nothing may touch a buffer after Release. The owner of
// an Arena releases it once every goroutine that can reach its buffers
// has ended; Options.FaultAfterRelease turns a breach of that rule into
// an immediate fault, for tests.
package offheap

import (
	"errors"
	"fmt"
	"sync"
)

// Options configure an Arena.
type Options struct {
	// FaultAfterRelease makes Release turn the mappings inaccessible
	// (PROT_NONE) instead of unmapping them, so that any access after
	// Release faults at once, where an unmapped range could be mapped
	// again and read without a fault. The address space is never given
	// back (on linux the pages are): for tests only. Where the system
	// cannot protect memory, Release unmaps as usual.
	FaultAfterRelease bool
	// HugePages asks the system (linux only: madvise MADV_HUGEPAGE) to
	// back the mappings with transparent huge pages.
	HugePages bool
}

// Arena allocates buffers outside the Go heap and releases them all at
// once. Its methods may be called from several goroutines.
type Arena struct {
	opts     Options
	mu       sync.Mutex
	maps     [][]byte // the mappings, as mmap returned them
	mapped   int
	released bool
}

// New returns an empty Arena.
func New(o Options) *Arena {
	return &Arena{opts: o}
}

// Alloc returns a buffer of length 0 and capacity n (nil for n <= 0),
// zeroed. It comes from a mapping when the system allows one and the
// Arena is not released, else from the Go heap (so does a nil Arena);
// either way it is valid until Release.
func (a *Arena) Alloc(n int) []byte {
	if n <= 0 {
		return nil
	}
	if a == nil {
		return make([]byte, 0, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return make([]byte, 0, n)
	}
	b, err := mapAnon(n)
	if err != nil {
		return make([]byte, 0, n)
	}
	if a.opts.HugePages {
		// advice only: the mapping works without it
		_ = adviseHuge(b)
	}
	a.maps = append(a.maps, b)
	a.mapped += len(b)
	return b[:0]
}

// Mapped returns the bytes of the Arena's live mappings (0 after Release
// and where buffers come from the Go heap).
func (a *Arena) Mapped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped
}

// Release gives the Arena's mappings back to the system (or, with
// FaultAfterRelease, makes them inaccessible). No buffer of the Arena may
// be used afterwards. Releasing twice does nothing. The error names the
// first mapping that could not be released; the others are released
// all the same.
func (a *Arena) Release() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return nil
	}
	a.released = true
	var errs []error
	for i, b := range a.maps {
		var err error
		if a.opts.FaultAfterRelease {
			err = protectNone(b)
			if errors.Is(err, errors.ErrUnsupported) {
				err = unmap(b)
			}
		} else {
			err = unmap(b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("offheap: release mapping %d of %d (%d bytes): %w", i+1, len(a.maps), len(b), err))
		}
	}
	a.maps, a.mapped = nil, 0
	return errors.Join(errs...)
}
