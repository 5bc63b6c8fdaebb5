package httpproxy

import (
	"bytes"
	"github.com/agent-trace-witness/witness/derive"
	"io"
	"time"
)

// chunkSize is the largest chunk read at once from a body.
const chunkSize = 32 << 10

// headFlushDelay is how long the head of an answer waits for the first
// body bytes, to go out with them in one write (one wake-up of the
// client instead of two), before it is sent alone.
const headFlushDelay = 20 * time.Millisecond

// maxRedactLine is the longest body line held back for redaction: with
// body redaction on, bodies are recorded (and forwarded) at line ends, so
// that a JSON body or an SSE data line is redacted whole; a longer line is
// recorded in pieces of this size, with only the regular-expression rules
// applied to each piece (docs/design/http-proxy.md).
const maxRedactLine = 16 << 20

// tap reads a body and records every byte before handing it on: each Read
// returns only bytes that are already in the cassette. Without redaction a
// chunk is what one Read of the source gave; with it, chunks end at line
// ends (or at MaxRedactLine, or where the memory budget was spent, or at
// the end of the body).
type tap struct {
	src    io.Reader
	record func(raw []byte) error // writes raw (redacted as needed) to the cassette
	lines  bool                   // redaction on: cut at line ends
	max    int                    // the longest line held (lines mode)
	buf    []byte                 // read, not yet recorded (lines mode)
	out    []byte                 // recorded, not yet handed out (lines mode)
	err    error                  // the source's error, handed out once out is empty
	// mem holds buf and out's bytes, taken from the memory budget (nil:
	// no budget); refused, the line is cut there, and cut (may be nil)
	// is told, once per body
	mem    *lease
	cut    func()
	wasCut bool
}

// holds takes n bytes held in lines mode from the budget.
func (t *tap) holds(n int) bool {
	return t.mem == nil || t.mem.setTo(n)
}

func (t *tap) Read(p []byte) (int, error) {
	if !t.lines {
		if t.err != nil {
			return 0, t.err
		}
		n, err := t.src.Read(p)
		if n > 0 {
			if rerr := t.record(p[:n]); rerr != nil {
				t.err = rerr
				return 0, rerr // read but never handed on: nothing unrecorded is forwarded
			}
		}
		if err != nil {
			t.err = err
		}
		return n, err
	}
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		var tmp [chunkSize]byte
		n, err := t.src.Read(tmp[:])
		t.buf = append(t.buf, tmp[:n]...)
		cut := bytes.LastIndexByte(t.buf, '\n') + 1
		switch {
		case err != nil:
			cut, t.err = len(t.buf), err
		case cut == 0 && len(t.buf) >= t.max:
			cut = len(t.buf)
		case cut == 0 && !t.holds(len(t.buf)):
			// the budget is spent: the line is recorded in pieces, as a
			// line over max is
			cut = len(t.buf)
			if !t.wasCut && t.cut != nil {
				t.cut()
			}
			t.wasCut = true
		}
		if cut == 0 {
			continue
		}
		if rerr := t.record(t.buf[:cut]); rerr != nil {
			t.err = rerr
			return 0, rerr
		}
		t.out = append(t.out[:0], t.buf[:cut]...)
		if rest := t.buf[cut:]; cap(t.buf) > 2*chunkSize && len(rest) <= chunkSize {
			t.buf = append([]byte(nil), rest...) // let a long line's buffer go
		} else {
			t.buf = append(t.buf[:0], rest...)
		}
		t.holds(len(t.buf) + len(t.out)) // no more than held before the cut
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	if len(t.out) == 0 {
		if cap(t.out) > 2*chunkSize {
			t.out = nil
		}
		t.holds(len(t.buf))
	}
	return n, nil
}

// redactBody redacts a run of body lines with the body rules
// (derive.RedactBodyLines, shared with the HTTP capture client).
func redactBody(r *derive.Redactor, raw []byte) ([]byte, bool) {
	return derive.RedactBodyLines(r, raw)
}
