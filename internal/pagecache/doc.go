// Package pagecache keeps a large file written once, in order, from
// filling the page cache: a Writer writes the file back to disk in
// windows as it goes and drops each window once it is on disk. The pages
// then cycle through a few windows of memory instead of one page per 4
// KiB of the file.
//
// Why: on a virtual machine whose free memory goes back to the host (the
// bench VM of issue 17), every page the guest touches for the first time
// in a while costs a fault in the host, ~12-17 us, so that writing a 2 GB
// output costs seconds of system time in page allocation alone
// (docs/design/scale-history.md, "Outputs through a few windows of page cache").
// Outside Linux a Writer is the plain file. It is advice to the kernel: it
// never makes a write fail, and the first call the kernel refuses ends it
// for that file.
package pagecache

import "os"

// Window is the span written back, or dropped, at once; Ahead windows
// are being written back while a Writer goes on.
const (
	Window = 8 << 20
	Ahead  = 4
)

// Writer writes a file from its current offset 0 on, in order, and keeps
// only the last few windows of what it wrote in the page cache.
type Writer struct {
	f *os.File
	w writeback
}

// NewWriter returns a Writer of f, which is at offset 0 and written only
// through the Writer.
func NewWriter(f *os.File) *Writer { return &Writer{f: f, w: writeback{fd: f.Fd()}} }

// Write writes p to the file.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.w.wrote(n)
	return n, err
}
