package cassette

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Format and Version identify the cassette format in its header line.
const (
	format  = "witness-cassette"
	version = 1
)

// Dir is the direction of a wire record.
type Dir string

const (
	C2S    Dir = "c2s"    // client to server (server stdin)
	S2C    Dir = "s2c"    // server to client (server stdout)
	Stderr Dir = "stderr" // server stderr, recorded in chunks as read
)

// Lifecycle events of the server process.
const (
	LifeSpawn       = "spawn"        // the process started
	LifeSpawnFailed = "spawn_failed" // the process could not start
	LifeStdinClosed = "stdin_closed" // the client closed the server's stdin
	LifeSignal      = "signal"       // a signal was sent to the process group (Signal)
	LifeEOF         = "eof"          // a stream (Dir) reached end of file
	LifeExit        = "exit"         // the process was reaped (Status, Code)
	LifeError       = "error"        // an error the client reported (Detail)
)

// Header is the first line of a cassette.
type Header struct {
	Format   string   `json:"format"`
	V        int      `json:"v"`
	Command  string   `json:"command"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`                // names of the environment variables given to the server, never values
	Protocol string   `json:"protocol,omitempty"` // protocol version pinned by the client, when known
	Started  string   `json:"started"`            // RFC 3339 UTC, ATW_WITNESS_TS when frozen
	Frozen   bool     `json:"frozen,omitempty"`   // time was frozen: records carry no "t"
	Mode     string   `json:"mode,omitempty"`     // "client" (witness capture) or "proxy"
	// Redaction describes the redaction applied to wire bytes before they
	// were written (rules and key id, never the key), when any.
	Redaction json.RawMessage `json:"redaction,omitempty"`
}

// Record is one line after the header: a wire record (Dir set) or a
// lifecycle record (Life set).
type Record struct {
	Seq     int64  // 0-based, monotonic over the whole cassette
	Dir     Dir    // wire records: the direction
	Off     int64  // wire records: offset of Data within the direction's byte stream
	Data    []byte // wire records: the exact bytes, without the line's '\n'
	Partial bool   // the stream ended without '\n' after Data
	// Redacted is set when Data is the redacted form of the bytes on the
	// wire; N is then their original length (what Off advances by).
	Redacted bool
	N        int64
	Cont     bool // Data is a piece of an over-long line that continues in the next record of Dir
	// LineBytes and LineSHA256 are set on the record that ends a line kept
	// in pieces (the first record of Dir after Cont records): the length of
	// the whole line as it was on the wire (without its '\n') and the hex
	// sha256 of those bytes.
	LineBytes  int64
	LineSHA256 string
	T          int64  // ns since the start; 0 when the cassette is frozen
	Life       string // lifecycle records: what happened
	Signal     string
	Status     string // exit: "exit status 0", "signal: killed"
	Code       *int   // exit: exit code, when the process exited normally
	Detail     string
	Stream     Dir   // lifecycle records about one stream (eof): which
	Line       int64 // set by Reader: the 1-based line number in the file
}

// End returns the stream offset just past this record's bytes (including
// the implied '\n' of a complete line).
func (r *Record) End() int64 {
	n := r.Off + int64(len(r.Data))
	if r.Redacted {
		n = r.Off + r.N
	}
	if r.Dir != Stderr && !r.Partial && !r.Cont {
		n++
	}
	return n
}

// Wire returns the record's bytes as they were on the wire, with the '\n'
// when the line had one.
func (r *Record) Wire() []byte {
	if r.Dir == Stderr || r.Partial || r.Cont {
		return r.Data
	}
	b := make([]byte, 0, len(r.Data)+1)
	return append(append(b, r.Data...), '\n')
}

type wireRecord struct {
	Seq      int64   `json:"seq"`
	Dir      Dir     `json:"dir,omitempty"`
	Off      *int64  `json:"off,omitempty"`
	Text     *string `json:"text,omitempty"`
	B64      *string `json:"b64,omitempty"`
	Partial  bool    `json:"partial,omitempty"`
	Cont     bool    `json:"cont,omitempty"`
	Redacted bool    `json:"redacted,omitempty"`
	N        *int64  `json:"n,omitempty"`
	LineN    *int64  `json:"line_bytes,omitempty"`
	LineSum  string  `json:"line_sha256,omitempty"`
	T        int64   `json:"t,omitempty"`
	Life     string  `json:"life,omitempty"`
	Signal   string  `json:"signal,omitempty"`
	Status   string  `json:"status,omitempty"`
	Code     *int    `json:"code,omitempty"`
	Detail   string  `json:"detail,omitempty"`
}

// Writer writes a cassette. It is safe for concurrent use; each record is
// written with a single Write call to the underlying writer, so a crash
// loses at most the record being written.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	h      Header
	start  time.Time
	seq    int64
	off    map[Dir]int64
	err    error
	notify func(*Record)
	redact func(Dir, []byte) ([]byte, bool)
	buf    []byte            // the encoded record, reused
	long   map[Dir]*pieceSum // lines being written in pieces
}

// pieceSum sums up a line written in pieces: its length and sha256 so far.
type pieceSum struct {
	n int64
	h hash.Hash
}

// NewWriter writes the header h to w and returns a Writer. h.Format and h.V
// are set by NewWriter. Env must hold names only.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format, h.V = format, version
	if h.Args == nil {
		h.Args = []string{}
	}
	if h.Env == nil {
		h.Env = []string{}
	}
	for _, n := range h.Env {
		if bytes.ContainsRune([]byte(n), '=') {
			return nil, fmt.Errorf("cassette header: env entry %q must be a name, not NAME=VALUE", n)
		}
	}
	b, err := marshal(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write cassette header: %w", err)
	}
	return &Writer{w: w, h: h, start: time.Now(), off: map[Dir]int64{}, long: map[Dir]*pieceSum{}}, nil
}

// Header returns the header as written.
func (w *Writer) Header() Header { return w.h }

// Err returns the error that stopped the writer, if any: after a failed
// write every later record fails with it.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Count returns the number of records written so far.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// OnRecord registers f to be called, under the writer's lock and after the
// record was written, with every record. Calls are therefore serialised in
// seq order; f must not call back into the Writer.
func (w *Writer) OnRecord(f func(*Record)) {
	w.mu.Lock()
	w.notify = f
	w.mu.Unlock()
}

// SetRedact makes the writer pass the bytes of every wire record through f
// before writing them; when f reports a change, the record holds the
// redacted bytes, "redacted":true and the original length "n". Secrets
// thus never reach the cassette, at the price of exactness for those
// records only.
func (w *Writer) SetRedact(f func(dir Dir, data []byte) ([]byte, bool)) {
	w.mu.Lock()
	w.redact = f
	w.mu.Unlock()
}

// Record writes one wire record. For c2s and s2c, line is a line without
// its '\n' and partial says the stream ended without one; for stderr, line
// is a chunk as read. It returns the record's sequence number.
func (w *Writer) Record(dir Dir, line []byte, partial bool) (int64, error) {
	return w.write(&Record{Dir: dir, Data: line, Partial: partial})
}

// RecordPiece writes a piece of an over-long line that continues in the next
// record of dir.
func (w *Writer) RecordPiece(dir Dir, piece []byte) (int64, error) {
	return w.write(&Record{Dir: dir, Data: piece, Cont: true})
}

// Lifecycle writes a lifecycle record; rec.Life must be set.
func (w *Writer) Lifecycle(rec Record) (int64, error) {
	rec.Dir, rec.Data, rec.Partial, rec.Cont = "", nil, false, false
	if rec.Stream != "" && rec.Stream != C2S && rec.Stream != S2C && rec.Stream != Stderr {
		return 0, fmt.Errorf("cassette: unknown stream %q", rec.Stream)
	}
	if rec.Life == "" {
		return 0, errors.New("cassette lifecycle record without life")
	}
	return w.write(&rec)
}

func (w *Writer) write(r *Record) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	r.Seq = w.seq
	r.T = 0
	if !w.h.Frozen {
		r.T = time.Since(w.start).Nanoseconds()
		if r.T == 0 {
			r.T = 1
		}
	}
	var sum *pieceSum
	if r.Dir != "" {
		switch r.Dir {
		case C2S, S2C, Stderr:
		default:
			return 0, fmt.Errorf("cassette: unknown direction %q", r.Dir)
		}
		r.Off = w.off[r.Dir]
		// a line kept in pieces: sum up the bytes as they were on the
		// wire (before redaction); its last record carries the sum
		if sum = w.long[r.Dir]; sum == nil && r.Cont {
			sum = &pieceSum{h: sha256.New()}
		}
		if sum != nil {
			sum.n += int64(len(r.Data))
			sum.h.Write(r.Data)
			if !r.Cont {
				r.LineBytes, r.LineSHA256 = sum.n, hex.EncodeToString(sum.h.Sum(nil))
			}
		}
		if w.redact != nil {
			if red, changed := w.redact(r.Dir, r.Data); changed {
				n := int64(len(r.Data))
				r.Data, r.Redacted, r.N = red, true, n
			}
		}
	}
	b := appendRecord(w.buf[:0], r)
	b = append(b, '\n')
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("write cassette record %d: %w", r.Seq, err)
		return 0, w.err
	}
	if cap(b) > 1<<20 {
		b = nil // do not keep a large buffer after a large record
	}
	w.buf = b
	if r.Dir != "" {
		w.off[r.Dir] = r.End()
		switch {
		case r.Cont:
			w.long[r.Dir] = sum
		case sum != nil:
			delete(w.long, r.Dir)
		}
	}
	w.seq++
	if w.notify != nil {
		w.notify(r)
	}
	return r.Seq, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode cassette record: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ParseError reports a bad cassette line, naming file, line and field (the
// one positioned error of witness's readers, internal/jsontree.Error).
type ParseError = jsontree.Error

// MaxRecordBytes bounds one cassette line when reading (a 16 MiB wire line
// becomes at most ~22 MiB of base64 plus the envelope).
const MaxRecordBytes = 64 << 20

// Reader streams a cassette, validating as it goes: the header, monotonic
// seq, contiguous per-direction offsets, and exactly one of text or b64.
type Reader struct {
	br   *bufio.Reader
	name string
	line int64
	h    Header
	seq  int64
	off  map[Dir]int64
	cont map[Dir]bool
	long map[Dir]*readSum
}

// readSum sums up a line read in pieces, to check the line_bytes and
// line_sha256 of its last record.
type readSum struct {
	n        int64
	h        hash.Hash
	redacted bool // a piece was redacted: its wire bytes are not in the cassette
}

// NewReader reads the header of the cassette r (name is used in errors) and
// returns a Reader positioned at the first record.
func NewReader(r io.Reader, name string) (*Reader, error) {
	cr := &Reader{br: bufio.NewReaderSize(r, 64<<10), name: name, off: map[Dir]int64{}, cont: map[Dir]bool{}, long: map[Dir]*readSum{}}
	line, err := cr.readLine()
	if err == io.EOF {
		return nil, &ParseError{File: name, Line: 1, Err: errors.New("empty cassette (no header line)")}
	}
	if err != nil {
		return nil, err
	}
	if err := cr.checkDepth(line); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cr.h); err != nil {
		return nil, cr.errf(fieldOf(err), "header: %v", err)
	}
	if cr.h.Format != format {
		return nil, cr.errf("format", "not a witness cassette: format is %q, want %q", cr.h.Format, format)
	}
	if cr.h.V != version {
		return nil, cr.errf("v", "unsupported cassette version %d (this witness reads %d)", cr.h.V, version)
	}
	return cr, nil
}

// Header returns the cassette header.
func (r *Reader) Header() Header { return r.h }

// checkDepth refuses a line nested deeper than jsonlimit.MaxDepth, in one
// pass, before it is decoded.
func (r *Reader) checkDepth(line []byte) error {
	if err := jsonlimit.CheckIn(line, r.name, r.line); err != nil {
		return &ParseError{File: r.name, Line: r.line, Err: err}
	}
	return nil
}

func (r *Reader) errf(field, format string, args ...any) *ParseError {
	return &ParseError{File: r.name, Line: r.line, Field: field, Err: fmt.Errorf(format, args...)}
}

func fieldOf(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return ute.Field
	}
	return ""
}

func (r *Reader) readLine() ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(out)+len(chunk) > MaxRecordBytes {
			r.line++
			return nil, r.errf("", "line longer than %d bytes", MaxRecordBytes)
		}
		out = append(out, chunk...)
		switch err {
		case nil:
			r.line++
			return out[:len(out)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(out) == 0 {
				return nil, io.EOF
			}
			r.line++
			return nil, r.errf("", "last line has no newline (cut-off cassette)")
		default:
			return nil, fmt.Errorf("read cassette %s: %w", r.name, err)
		}
	}
}

// sumPieces follows lines kept in pieces: the record that ends one may
// carry line_bytes and line_sha256 (cassettes written before these fields
// existed lack them), which must then match the pieces; no other record
// carries them.
func (r *Reader) sumPieces(rec *Record, wr *wireRecord) error {
	if (wr.LineN == nil) != (wr.LineSum == "") {
		return r.errf("line_sha256", "line_bytes and line_sha256 come together")
	}
	sum := r.long[rec.Dir]
	if sum == nil && rec.Cont {
		sum = &readSum{h: sha256.New()}
		r.long[rec.Dir] = sum
	}
	if sum == nil {
		if wr.LineN != nil {
			return r.errf("line_bytes", "only the record that ends a line kept in pieces carries it")
		}
		return nil
	}
	if rec.Redacted {
		sum.n += rec.N
		sum.redacted = true
	} else {
		sum.n += int64(len(rec.Data))
		sum.h.Write(rec.Data)
	}
	if rec.Cont {
		if wr.LineN != nil {
			return r.errf("line_bytes", "only the record that ends a line kept in pieces carries it")
		}
		return nil
	}
	delete(r.long, rec.Dir)
	if wr.LineN == nil {
		return nil
	}
	if *wr.LineN != sum.n {
		return r.errf("line_bytes", "%d, but the pieces of the line hold %d bytes", *wr.LineN, sum.n)
	}
	if got := hex.EncodeToString(sum.h.Sum(nil)); !sum.redacted && got != wr.LineSum {
		return r.errf("line_sha256", "%s, but the pieces of the line hash to %s", wr.LineSum, got)
	}
	rec.LineBytes, rec.LineSHA256 = *wr.LineN, wr.LineSum
	return nil
}

// Next returns the next record, or io.EOF after the last one.
func (r *Reader) Next() (*Record, error) {
	line, err := r.readLine()
	if err != nil {
		return nil, err
	}
	if err := r.checkDepth(line); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var wr wireRecord
	if err := dec.Decode(&wr); err != nil {
		return nil, r.errf(fieldOf(err), "not a cassette record: %v", err)
	}
	if dec.More() {
		return nil, r.errf("", "trailing data after the record")
	}
	if wr.Seq != r.seq {
		return nil, r.errf("seq", "expected %d, got %d (records missing, reordered or inserted)", r.seq, wr.Seq)
	}
	rec := &Record{Seq: wr.Seq, T: wr.T, Life: wr.Life, Signal: wr.Signal, Status: wr.Status, Code: wr.Code, Detail: wr.Detail, Line: r.line}
	if r.h.Frozen && wr.T != 0 {
		return nil, r.errf("t", "a frozen cassette carries no times")
	}
	if wr.Life != "" {
		if wr.Off != nil || wr.Text != nil || wr.B64 != nil || wr.Partial || wr.Cont || wr.Redacted || wr.N != nil || wr.LineN != nil || wr.LineSum != "" {
			return nil, r.errf("life", "a lifecycle record carries no wire bytes")
		}
		switch wr.Life {
		case LifeSpawn, LifeSpawnFailed, LifeStdinClosed, LifeSignal, LifeEOF, LifeExit, LifeError:
		default:
			return nil, r.errf("life", "unknown lifecycle event %q", wr.Life)
		}
		if wr.Dir != "" && wr.Dir != C2S && wr.Dir != S2C && wr.Dir != Stderr {
			return nil, r.errf("dir", "unknown direction %q", wr.Dir)
		}
		rec.Stream = wr.Dir
		r.seq++
		return rec, nil
	}
	switch wr.Dir {
	case C2S, S2C, Stderr:
	case "":
		return nil, r.errf("dir", "missing (a record needs dir or life)")
	default:
		return nil, r.errf("dir", "unknown direction %q", wr.Dir)
	}
	if wr.Off == nil {
		return nil, r.errf("off", "missing")
	}
	if *wr.Off != r.off[wr.Dir] {
		return nil, r.errf("off", "expected %d for %s, got %d (bytes missing or inserted)", r.off[wr.Dir], wr.Dir, *wr.Off)
	}
	switch {
	case wr.Text != nil && wr.B64 != nil:
		return nil, r.errf("text", "a record carries text or b64, not both")
	case wr.Text != nil:
		rec.Data = []byte(*wr.Text)
	case wr.B64 != nil:
		b, err := base64.StdEncoding.DecodeString(*wr.B64)
		if err != nil {
			return nil, r.errf("b64", "invalid base64: %v", err)
		}
		rec.Data = b
	default:
		return nil, r.errf("text", "missing (a wire record needs text or b64)")
	}
	if wr.Partial && wr.Cont {
		return nil, r.errf("cont", "a record cannot be both partial and continued")
	}
	if wr.Redacted != (wr.N != nil) {
		return nil, r.errf("n", "present exactly when the record is redacted")
	}
	if wr.N != nil {
		if *wr.N < 0 {
			return nil, r.errf("n", "must not be negative")
		}
		rec.Redacted, rec.N = true, *wr.N
	}
	rec.Dir, rec.Off, rec.Partial, rec.Cont = wr.Dir, *wr.Off, wr.Partial, wr.Cont
	if err := r.sumPieces(rec, &wr); err != nil {
		return nil, err
	}
	r.off[wr.Dir] = rec.End()
	r.seq++
	return rec, nil
}
