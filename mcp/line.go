package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the largest line (without its newline) a LineReader
// returns in one piece by default: 16 MiB, the go-sdk's cap.
const DefaultMaxLine = 16 << 20

// Line is one newline-delimited line of a stdio stream.
type Line struct {
	// Bytes are the exact bytes of the line without the terminating '\n'
	// ('\r' is kept). The slice is owned by the caller.
	Bytes []byte
	// Partial is set on the last line of a stream that ended without '\n'.
	Partial bool
	// More is set when the line is longer than the reader's maximum: Bytes
	// is a piece of exactly max bytes and the line continues in the next
	// Line(s). The last piece has More unset (and Partial set if the stream
	// ended without '\n'). Concatenating the pieces gives the line.
	More bool
	// Off is the byte offset of Bytes within the stream.
	Off int64
}

// LineTooLongError is returned with the first piece of a line longer than
// the maximum line size.
type LineTooLongError struct {
	Max int   // the maximum line size in bytes
	Off int64 // stream offset where the line starts
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line at byte offset %d exceeds the maximum line size of %s", e.Off, FormatSize(e.Max))
}

// FormatSize renders a byte count the way errors and docs name sizes.
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// LineReader splits a byte stream into lines on '\n', returning every byte
// exactly once, with memory bounded by the maximum line size.
type LineReader struct {
	r    io.Reader
	buf  []byte // unread bytes are buf[start:end]
	s, e int
	max  int
	off  int64
	err  error // sticky read error
	cont bool  // the previous Line had More set
}

// NewLineReader reads lines from r; max <= 0 means DefaultMaxLine.
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	size := 64 << 10
	if size > max+1 {
		size = max + 1
	}
	return &LineReader{r: r, buf: make([]byte, size), max: max}
}

// Max returns the maximum line size.
func (lr *LineReader) Max() int { return lr.max }

// Next returns the next line. At the end of the stream it returns io.EOF;
// a read error is returned after every buffered byte has been handed out.
// The first piece of an over-long line comes with a *LineTooLongError (and
// More set); reading may continue.
func (lr *LineReader) Next() (Line, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.s:lr.e], '\n'); i >= 0 && i <= lr.max {
			return lr.take(i, i+1, false, false), nil
		}
		if lr.e-lr.s > lr.max {
			wasCont := lr.cont
			off := lr.off
			l := lr.take(lr.max, lr.max, false, true)
			if !wasCont {
				return l, &LineTooLongError{Max: lr.max, Off: off}
			}
			return l, nil
		}
		if lr.err != nil {
			if lr.e > lr.s {
				return lr.take(lr.e-lr.s, lr.e-lr.s, true, false), nil
			}
			if errors.Is(lr.err, io.EOF) {
				return Line{}, io.EOF
			}
			return Line{}, lr.err
		}
		lr.fill()
	}
}

func (lr *LineReader) take(n, consume int, partial, more bool) Line {
	b := make([]byte, n)
	copy(b, lr.buf[lr.s:lr.s+n])
	l := Line{Bytes: b, Partial: partial, More: more, Off: lr.off}
	lr.s += consume
	lr.off += int64(consume)
	lr.cont = more
	return l
}

func (lr *LineReader) fill() {
	if lr.s > 0 {
		copy(lr.buf, lr.buf[lr.s:lr.e])
		lr.e -= lr.s
		lr.s = 0
	}
	if lr.e == len(lr.buf) {
		n := 2 * len(lr.buf)
		if n > lr.max+1 {
			n = lr.max + 1
		}
		nb := make([]byte, n)
		copy(nb, lr.buf[:lr.e])
		lr.buf = nb
	}
	n, err := lr.r.Read(lr.buf[lr.e:])
	lr.e += n
	if err != nil {
		lr.err = err
	}
}
