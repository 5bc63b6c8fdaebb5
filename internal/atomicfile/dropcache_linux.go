//go:build linux

package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropWindow is the span of a staged file written back and dropped from
// the page cache at once (Options.DropCache); dropAhead windows are being
// written back while the writer goes on.
const (
	dropWindow = 8 << 20
	dropAhead  = 4
)

// cacheDropper writes a file back to disk in windows as it is written and
// drops each window from the page cache once it is on disk
// (Options.DropCache). It is advice: the first call the kernel refuses
// ends it, and the file is written as any other.
type cacheDropper struct {
	fd      int
	written int64 // bytes written so far
	started int64 // the writeback of [dropped, started) has been started
	dropped int64 // [0, dropped) is on disk and out of the page cache
	off     bool  // a call failed: no more advice
}

// newCacheDropper returns the dropper of f.
func newCacheDropper(f *os.File) *cacheDropper { return &cacheDropper{fd: int(f.Fd())} }

// wrote accounts n more bytes written at the end of the file.
func (d *cacheDropper) wrote(n int) {
	d.written += int64(n)
	for !d.off && d.written-d.started >= dropWindow {
		if err := unix.SyncFileRange(d.fd, d.started, dropWindow, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			d.off = true
			return
		}
		d.started += dropWindow
		if d.started-d.dropped <= dropAhead*dropWindow {
			continue
		}
		// the oldest window in flight: wait for it, then let its pages go
		if err := unix.SyncFileRange(d.fd, d.dropped, dropWindow,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
			d.off = true
			return
		}
		if err := unix.Fadvise(d.fd, d.dropped, dropWindow, unix.FADV_DONTNEED); err != nil {
			d.off = true
			return
		}
		d.dropped += dropWindow
	}
}
