//go:build linux

package pagecache

import "golang.org/x/sys/unix"

// writeback is the Linux advice of a Writer: sync_file_range starts the
// writeback of each full window; the oldest window in flight past Ahead
// is waited for and dropped (posix_fadvise DONTNEED: a clean page goes,
// a dirty one would stay).
type writeback struct {
	fd      uintptr
	written int64 // bytes written so far
	started int64 // the writeback of [dropped, started) has been started
	dropped int64 // [0, dropped) is on disk and out of the page cache
	off     bool  // a call failed: no more advice
}

func (d *writeback) wrote(n int) {
	d.written += int64(n)
	fd := int(d.fd)
	for !d.off && d.written-d.started >= Window {
		if err := unix.SyncFileRange(fd, d.started, Window, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			d.off = true
			return
		}
		d.started += Window
		if d.started-d.dropped <= Ahead*Window {
			continue
		}
		if err := unix.SyncFileRange(fd, d.dropped, Window,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
			d.off = true
			return
		}
		if err := unix.Fadvise(fd, d.dropped, Window, unix.FADV_DONTNEED); err != nil {
			d.off = true
			return
		}
		d.dropped += Window
	}
}
