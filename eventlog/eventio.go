package eventlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// maxLineBytes is the largest event line a Reader accepts by default.
const maxLineBytes = 64 << 20

// ParseError reports a bad line in an event log, naming file, line and field.
type ParseError struct {
	File  string
	Line  int64 // 1-based
	Field string
	Err   error
}

func (e *ParseError) Error() string {
	if le, ok := e.Err.(*jsonlimit.Error); ok && le.File != "" {
		return le.Error() // already names file, line and column
	}
	path := e.Field
	if path != "" && !strings.HasPrefix(path, "$") {
		path = "$." + path
	}
	return jsontree.Format(e.File, e.Line, 0, path, e.Err.Error())
}

func (e *ParseError) Unwrap() error { return e.Err }

// LineHash returns the sha256 hex of one log line without its newline.
func LineHash(line []byte) string {
	s := sha256.Sum256(line)
	return hex.EncodeToString(s[:])
}

// EncodeEvent returns the canonical bytes of e, without a newline.
func EncodeEvent(e *Event) ([]byte, error) {
	if b, err := encodeEventFast(e, false); err == nil {
		return b, nil
	}
	return encodeEventSlow(e)
}

// encodeEventSlow defines the bytes: the canonical form of encoding/json's
// encoding of e. encodeEventFast writes the same bytes directly.
func encodeEventSlow(e *Event) ([]byte, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return canon.Transform(raw)
}

// Writer appends events to a log, numbering them and chaining each line to
// the previous one. It is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	session string
	seq     int64
	head    string
}

// NewWriter starts a new log on w for the given session id.
func NewWriter(w io.Writer, session string) *Writer {
	return &Writer{w: w, session: session, head: genesisPrev}
}

// ResumeWriter continues a log whose last line had sequence number lastSeq and
// hash head.
func ResumeWriter(w io.Writer, session string, lastSeq int64, head string) *Writer {
	return &Writer{w: w, session: session, seq: lastSeq + 1, head: head}
}

// EventID returns the id of the event at position seq: "e<seq>".
func EventID(seq int64) string { return "e" + strconv.FormatInt(seq, 10) }

// Head returns the hash of the last line written (GenesisPrev before any).
func (w *Writer) Head() string { return w.head }

// Count returns the number of lines written so far.
func (w *Writer) Count() int64 { return w.seq }

// Session returns the session id.
func (w *Writer) Session() string { return w.session }

// Append fills the envelope of e (v, seq, id when empty, session, prev) and
// writes it as one canonical line.
//
// The id of an event is always "e<seq>": an event that comes with another id
// is refused. When e has a payload and no payload_sha256, the hash is
// computed; when it has both, they must agree.
func (w *Writer) Append(e *Event) error {
	id := EventID(w.seq)
	if e.ID != "" && e.ID != id {
		return fmt.Errorf("append event: id %q given, but the next event's id is %q", e.ID, id)
	}
	if e.Kind == "" || !knownKind(e.Kind) {
		return fmt.Errorf("append event %s: unknown kind %q", id, e.Kind)
	}
	if err := fillPayloadHash(e); err != nil {
		return fmt.Errorf("append event %s: %w", id, err)
	}
	e.V = FormatVersion
	e.Seq = w.seq
	e.ID = id
	e.Session = w.session
	e.Prev = w.head
	// the payload was made canonical above
	line, err := encodeEventFast(e, true)
	if err != nil {
		line, err = encodeEventSlow(e)
	}
	if err != nil {
		return fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(buf, line...)
	buf = append(buf, '\n')
	if _, err := w.w.Write(buf); err != nil {
		return fmt.Errorf("write event %s: %w", e.ID, err)
	}
	w.head = LineHash(line)
	w.seq++
	return nil
}

// Reader streams events from a log, one line at a time, with memory bounded
// by the longest line.
type Reader struct {
	br      *bufio.Reader
	name    string
	line    int64
	raw     []byte
	max     int
	partial bool
	fast    bool // DecodeEventFast (the same events but Wire, the same errors) but for session ends
	whole   bool // DecodeEventFastWhole (SetFastWhole)
}

// NewReader reads the log r; name is used in error messages.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), name: name, max: maxLineBytes}
}

// SetMaxLine changes the largest accepted line.
func (r *Reader) SetMaxLine(n int) { r.max = n }

// Line returns the 1-based number of the line last returned by Next.
func (r *Reader) Line() int64 { return r.line }

// Raw returns the bytes of the line last returned by Next, without the
// newline. The slice is valid until the next call to Next.
func (r *Reader) Raw() []byte { return r.raw }

// Partial reports whether the line last returned had no terminating newline
// (a cut-off tail).
func (r *Reader) Partial() bool { return r.partial }

// errLineTooLong is wrapped by the ParseError returned for an over-long line.
var errLineTooLong = errors.New("line exceeds the maximum line size")

// Next returns the next event, or io.EOF at the end. A line that is not a
// valid event yields a *ParseError; reading may continue after it.
func (r *Reader) Next() (*Event, error) {
	line, err := r.readLine()
	if err != nil {
		return nil, err
	}
	r.line++
	r.raw = line
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, &ParseError{File: r.name, Line: r.line, Err: errors.New("blank line")}
	}
	var ev *Event
	var perr *ParseError
	if r.whole {
		ev, perr = DecodeEventFastWhole(line)
	} else if r.fast {
		ev, perr = DecodeEventFast(line)
		if perr == nil && ev.Kind == KindSessionEnd {
			// whole (Wire too): its canonical form is checked and signed
			ev, perr = DecodeEvent(line)
		}
	} else {
		ev, perr = DecodeEvent(line)
	}
	if perr != nil {
		perr.locate(r.name, r.line)
		return nil, perr
	}
	return ev, nil
}

func (r *Reader) readLine() ([]byte, error) {
	var out []byte
	r.partial = false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(out)+len(chunk) > r.max+1 {
			// drain the rest of the line so that reading can resume
			for err == bufio.ErrBufferFull {
				_, err = r.br.ReadSlice('\n')
			}
			r.line++
			return nil, &ParseError{File: r.name, Line: r.line, Err: fmt.Errorf("%w (%d bytes)", errLineTooLong, r.max)}
		}
		out = append(out, chunk...)
		switch err {
		case nil:
			return out[:len(out)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(out) == 0 {
				return nil, io.EOF
			}
			r.partial = true
			return out, nil
		default:
			return nil, fmt.Errorf("read %s: %w", r.name, err)
		}
	}
}

// locate names the file and line of e (a line of an event log); a nesting
// error is placed there too, with its column.
func (e *ParseError) locate(file string, line int64) {
	e.File, e.Line = file, line
	if le, ok := e.Err.(*jsonlimit.Error); ok {
		e.Err = le.In(file, line)
	}
}

// DecodeEvent parses one line strictly: unknown fields are refused and the
// envelope fields must be present and well formed. A line nested deeper
// than jsonlimit.MaxDepth is refused first, in one pass (its Err is a
// *jsonlimit.Error).
func DecodeEvent(line []byte) (*Event, *ParseError) {
	if err := jsonlimit.Check(line); err != nil {
		return nil, &ParseError{Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var e Event
	if err := dec.Decode(&e); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, &ParseError{Field: ute.Field, Err: fmt.Errorf("expected %s, got %s", ute.Type, ute.Value)}
		}
		return nil, &ParseError{Err: fmt.Errorf("not a valid event: %w", err)}
	}
	if dec.More() {
		return nil, &ParseError{Err: errors.New("trailing data after the event object")}
	}
	if e.V != FormatVersion {
		return nil, &ParseError{Field: "v", Err: fmt.Errorf("unsupported format version %d (this witness reads %d)", e.V, FormatVersion)}
	}
	if e.ID == "" {
		return nil, &ParseError{Field: "id", Err: errors.New("missing")}
	}
	if e.Kind == "" {
		return nil, &ParseError{Field: "kind", Err: errors.New("missing")}
	}
	if !knownKind(e.Kind) {
		return nil, &ParseError{Field: "kind", Err: fmt.Errorf("unknown kind %q", e.Kind)}
	}
	if len(e.Prev) != 64 {
		return nil, &ParseError{Field: "prev", Err: errors.New("must be 64 hex characters")}
	}
	return &e, nil
}

func knownKind(k Kind) bool {
	switch k {
	case KindToolCall, KindToolResponse, KindModelInput, KindModelOutput, KindExternalEffect,
		KindNotification, KindMessage, KindAmbiguous, KindSessionStart, KindSessionEnd,
		KindMCPRequest, KindMCPResponse, KindUserInput:
		return true
	}
	return false
}
