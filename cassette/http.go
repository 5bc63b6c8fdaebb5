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
	"sort"
	"strings"
	"sync"
	"time"
)

// HTTPFormat identifies an HTTP cassette in its header line
// (docs/formats/http-cassette.md). It shares Version with the stdio
// cassette.
const HTTPFormat = "witness-http-cassette"

// The kinds of HTTP cassette records ("rec").
const (
	RecRequest      = "request"       // the request head: method, path, host, proto, headers
	RecRequestBody  = "request_body"  // a chunk of the request body, as read from the client
	RecRequestEnd   = "request_end"   // the request body ended: bytes, sha256, error
	RecResponse     = "response"      // the response head: status, proto, headers
	RecResponseBody = "response_body" // a chunk of the response body, as read from the upstream
	RecResponseEnd  = "response_end"  // the response body ended: bytes, sha256, error
	RecError        = "error"         // the exchange failed without an upstream answer: detail, status sent
)

// Field is one HTTP header field, written as the JSON array [name, value].
type Field struct {
	Name  string
	Value string
}

// MarshalJSON writes the field as [name, value].
func (f Field) MarshalJSON() ([]byte, error) { return json.Marshal([2]string{f.Name, f.Value}) }

// UnmarshalJSON reads [name, value].
func (f *Field) UnmarshalJSON(b []byte) error {
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 2 {
		return fmt.Errorf("a header is [name, value], got %d strings", len(a))
	}
	f.Name, f.Value = a[0], a[1]
	return nil
}

// HTTPFileHeader is the first line of an HTTP cassette.
type HTTPFileHeader struct {
	Format   string `json:"format"`
	V        int    `json:"v"`
	Mode     string `json:"mode"`     // "proxy"
	Upstream string `json:"upstream"` // the upstream base URL
	Started  string `json:"started"`  // ATW_WITNESS_TS when frozen
	Frozen   bool   `json:"frozen,omitempty"`
	// HeaderKey is the key id of the keyed hashes that replace credential
	// headers: "sha256:<16 hex>" of the redaction key, or
	// "session:sha256:<16 hex>" when a key made for this session alone was
	// used (hashes then match within this cassette only).
	HeaderKey string `json:"header_key"`
	// RedactedHeaders are the (lower-case) names of the headers whose
	// values are replaced by keyed hashes, sorted.
	RedactedHeaders []string `json:"redacted_headers"`
	// RedactedQuery are the (lower-case) names of the query parameters
	// whose values are replaced by keyed hashes in every recorded path,
	// sorted (CredentialParams and the user's); absent in cassettes
	// written before query redaction.
	RedactedQuery []string `json:"redacted_query,omitempty"`
	// Redaction describes the body redaction rules, when any.
	Redaction json.RawMessage `json:"redaction,omitempty"`
}

// HTTPRecord is one line after the header of an HTTP cassette.
type HTTPRecord struct {
	Seq int64  // 0-based, monotonic over the cassette
	X   int64  // the exchange, 1-based in order of arrival
	Rec string // one of the Rec* kinds
	T   int64  // ns since the start; 0 when the cassette is frozen

	// request and response heads
	Method, Path, Host, Proto string
	Status                    int // response; error: the status the witness answered with (0: none)
	Header                    []Field

	// body chunks
	Off  int64  // offset of the chunk within the body as it was on the wire
	Data []byte // the bytes as recorded (redacted when Redacted)
	// Redacted: on a body chunk, Data is the redacted form of the wire
	// bytes (N is their length); on a request head, query values in Path
	// were replaced by keyed hashes.
	Redacted bool
	N        int64 // with Redacted: the length of the original bytes

	// ends
	Bytes  int64  // the body's length on the wire
	SHA256 string // hex sha256 of the body as recorded (after redaction)
	Detail string // request_end, response_end: why the body ended early; error: what failed

	Line int64 // set by the reader: the 1-based line in the file
}

// Len returns the number of wire bytes a body chunk stands for.
func (r *HTTPRecord) Len() int64 {
	if r.Redacted {
		return r.N
	}
	return int64(len(r.Data))
}

type httpWire struct {
	Seq      int64    `json:"seq"`
	X        int64    `json:"x"`
	Rec      string   `json:"rec"`
	Method   *string  `json:"method,omitempty"`
	Path     *string  `json:"path,omitempty"`
	Host     *string  `json:"host,omitempty"`
	Proto    *string  `json:"proto,omitempty"`
	Status   *int     `json:"status,omitempty"`
	Headers  *[]Field `json:"headers,omitempty"`
	Off      *int64   `json:"off,omitempty"`
	Text     *string  `json:"text,omitempty"`
	B64      *string  `json:"b64,omitempty"`
	Redacted bool     `json:"redacted,omitempty"`
	N        *int64   `json:"n,omitempty"`
	Bytes    *int64   `json:"bytes,omitempty"`
	SHA256   *string  `json:"sha256,omitempty"`
	Detail   *string  `json:"detail,omitempty"`
	T        int64    `json:"t,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// toWire encodes r; the fields of its kind only.
func (r *HTTPRecord) toWire() *httpWire {
	w := &httpWire{Seq: r.Seq, X: r.X, Rec: r.Rec, T: r.T}
	switch r.Rec {
	case RecRequest:
		w.Method, w.Path, w.Host, w.Proto = ptr(r.Method), ptr(r.Path), ptr(r.Host), ptr(r.Proto)
		w.Headers = ptr(nonNil(r.Header))
		w.Redacted = r.Redacted
	case RecResponse:
		w.Status, w.Proto = ptr(r.Status), ptr(r.Proto)
		w.Headers = ptr(nonNil(r.Header))
	case RecRequestBody, RecResponseBody:
		w.Off = ptr(r.Off)
		if useText(r.Data) {
			w.Text = ptr(string(r.Data))
		} else {
			w.B64 = ptr(base64.StdEncoding.EncodeToString(r.Data))
		}
		if r.Redacted {
			w.Redacted, w.N = true, ptr(r.N)
		}
	case RecRequestEnd, RecResponseEnd:
		w.Bytes, w.SHA256 = ptr(r.Bytes), ptr(r.SHA256)
		if r.Detail != "" {
			w.Detail = ptr(r.Detail)
		}
	case RecError:
		w.Detail = ptr(r.Detail)
		if r.Status != 0 {
			w.Status = ptr(r.Status)
		}
	}
	return w
}

func nonNil(h []Field) []Field {
	if h == nil {
		return []Field{}
	}
	return h
}

// body is the running state of one body (an exchange's request or
// response) while it is written or read.
type body struct {
	off      int64 // wire bytes so far
	h        hash.Hash
	redacted bool
}

type bodyKey struct {
	x    int64
	resp bool
}

// HTTPWriter writes an HTTP cassette. It is safe for concurrent use: the
// exchanges of concurrent requests interleave, each record names its
// exchange, and each record is written with one Write call.
type HTTPWriter struct {
	mu     sync.Mutex
	w      io.Writer
	h      HTTPFileHeader
	start  time.Time
	seq    int64
	nextX  int64
	bodies map[bodyKey]*body
	err    error
}

// NewHTTPWriter writes the header h (Format and V are set here) and
// returns the writer.
func NewHTTPWriter(w io.Writer, h HTTPFileHeader) (*HTTPWriter, error) {
	h.Format, h.V = HTTPFormat, version
	if h.RedactedHeaders == nil {
		h.RedactedHeaders = []string{}
	}
	b, err := marshal(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write cassette header: %w", err)
	}
	return &HTTPWriter{w: w, h: h, start: time.Now(), bodies: map[bodyKey]*body{}}, nil
}

// Header returns the header as written.
func (w *HTTPWriter) Header() HTTPFileHeader { return w.h }

// Err returns the error that stopped the writer, if any.
func (w *HTTPWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Exchanges returns the number of exchanges begun.
func (w *HTTPWriter) Exchanges() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nextX
}

// Request begins a new exchange with its request head (r.Rec, r.X and the
// body fields are set here) and returns the exchange number.
func (w *HTTPWriter) Request(r HTTPRecord) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	r.X, r.Rec = w.nextX+1, RecRequest
	if err := w.writeLocked(&r); err != nil {
		return 0, err
	}
	w.nextX++
	return r.X, nil
}

// Response writes the response head of exchange x.
func (w *HTTPWriter) Response(x int64, status int, proto string, header []Field) error {
	return w.write(&HTTPRecord{X: x, Rec: RecResponse, Status: status, Proto: proto, Header: header})
}

// Body writes a chunk of the request (resp false) or response body of
// exchange x: data as recorded and, when redacted, n the length of the
// original bytes. The offset is kept by the writer.
func (w *HTTPWriter) Body(x int64, resp bool, data []byte, redacted bool, n int64) error {
	rec := &HTTPRecord{X: x, Rec: RecRequestBody, Data: data, Redacted: redacted, N: n}
	if resp {
		rec.Rec = RecResponseBody
	}
	return w.write(rec)
}

// End writes the end of exchange x's request (resp false) or response
// body; detail, when not empty, says why it ended early. The length and
// hash come from the chunks written.
func (w *HTTPWriter) End(x int64, resp bool, detail string) error {
	_, err := w.EndRecord(x, resp, detail)
	return err
}

// EndRecord is End, and returns the record as written (its Seq, T, Bytes
// and SHA256), so that what is derived from it can carry its time.
func (w *HTTPWriter) EndRecord(x int64, resp bool, detail string) (HTTPRecord, error) {
	rec := &HTTPRecord{X: x, Rec: RecRequestEnd, Detail: detail}
	if resp {
		rec.Rec = RecResponseEnd
	}
	err := w.write(rec)
	return *rec, err
}

// Fail writes that exchange x failed without an upstream answer (detail),
// and the status the witness answered the client with (0: none).
func (w *HTTPWriter) Fail(x int64, detail string, status int) error {
	_, err := w.FailRecord(x, detail, status)
	return err
}

// FailRecord is Fail, and returns the record as written.
func (w *HTTPWriter) FailRecord(x int64, detail string, status int) (HTTPRecord, error) {
	rec := &HTTPRecord{X: x, Rec: RecError, Detail: detail, Status: status}
	err := w.write(rec)
	return *rec, err
}

func (w *HTTPWriter) write(r *HTTPRecord) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if r.X < 1 || r.X > w.nextX {
		return fmt.Errorf("cassette: exchange %d was not begun", r.X)
	}
	return w.writeLocked(r)
}

func (w *HTTPWriter) writeLocked(r *HTTPRecord) error {
	r.Seq = w.seq
	r.T = 0
	if !w.h.Frozen {
		if r.T = time.Since(w.start).Nanoseconds(); r.T == 0 {
			r.T = 1
		}
	}
	var bd *body
	switch r.Rec {
	case RecRequestBody, RecResponseBody, RecRequestEnd, RecResponseEnd:
		k := bodyKey{r.X, r.Rec == RecResponseBody || r.Rec == RecResponseEnd}
		if bd = w.bodies[k]; bd == nil {
			bd = &body{h: sha256.New()}
			w.bodies[k] = bd
		}
		if r.Rec == RecRequestBody || r.Rec == RecResponseBody {
			if !r.Redacted {
				r.N = 0
			}
			r.Off = bd.off
		} else {
			r.Bytes, r.SHA256 = bd.off, hex.EncodeToString(bd.h.Sum(nil))
			delete(w.bodies, k)
		}
	}
	b, err := marshal(r.toWire())
	if err != nil {
		return err
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("write cassette record %d: %w", r.Seq, err)
		return w.err
	}
	if bd != nil && (r.Rec == RecRequestBody || r.Rec == RecResponseBody) {
		bd.off += r.Len()
		bd.h.Write(r.Data)
	}
	w.seq++
	return nil
}

// Kind reads the format of a cassette from its first line: Format (a
// stdio cassette) or HTTPFormat. Anything else is an error naming file
// and line.
func Kind(first []byte, name string) (string, error) {
	var h struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(bytes.TrimRight(first, "\r\n"), &h); err != nil {
		return "", &ParseError{File: name, Line: 1, Err: fmt.Errorf("not a cassette header: %w", err)}
	}
	switch h.Format {
	case format, HTTPFormat:
		return h.Format, nil
	}
	return "", &ParseError{File: name, Line: 1, Field: "format", Err: fmt.Errorf("not a witness cassette: format is %q, want %q or %q", h.Format, format, HTTPFormat)}
}

// exchangeState is what an HTTP cassette reader knows of one exchange.
type exchangeState struct {
	reqEnded bool
	resp     int // 0 no response head, 1 head seen, 2 body ended
}

// HTTPReader streams an HTTP cassette, validating as it goes: the header,
// monotonic seq, exchanges begun in order, records of an exchange in
// order (a request before its body and end, a response head before its
// body and end, nothing after an exchange is over), contiguous body
// offsets, and each end's length and hash against its chunks.
type HTTPReader struct {
	lr     *Reader // the line reader of the stdio cassette (limits, positions)
	h      HTTPFileHeader
	seq    int64
	lastX  int64
	states map[int64]*exchangeState
	bodies map[bodyKey]*body
}

// NewHTTPReader reads the header of the HTTP cassette r (name is used in
// errors) and returns a reader positioned at the first record.
func NewHTTPReader(r io.Reader, name string) (*HTTPReader, error) {
	lr := &Reader{br: bufio.NewReaderSize(r, 64<<10), name: name}
	line, err := lr.readLine()
	if err == io.EOF {
		return nil, &ParseError{File: name, Line: 1, Err: errors.New("empty cassette (no header line)")}
	}
	if err != nil {
		return nil, err
	}
	if err := lr.checkDepth(line); err != nil {
		return nil, err
	}
	hr := &HTTPReader{lr: lr, states: map[int64]*exchangeState{}, bodies: map[bodyKey]*body{}}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hr.h); err != nil {
		return nil, lr.errf(fieldOf(err), "header: %v", err)
	}
	if hr.h.Format != HTTPFormat {
		return nil, lr.errf("format", "not an HTTP cassette: format is %q, want %q", hr.h.Format, HTTPFormat)
	}
	if hr.h.V != version {
		return nil, lr.errf("v", "unsupported cassette version %d (this witness reads %d)", hr.h.V, version)
	}
	if hr.h.Mode == "" {
		return nil, lr.errf("mode", "missing")
	}
	if !sort.StringsAreSorted(hr.h.RedactedHeaders) {
		return nil, lr.errf("redacted_headers", "not sorted")
	}
	for _, n := range hr.h.RedactedHeaders {
		if n != strings.ToLower(n) || n == "" {
			return nil, lr.errf("redacted_headers", "%q is not a lower-case header name", n)
		}
	}
	if !sort.StringsAreSorted(hr.h.RedactedQuery) {
		return nil, lr.errf("redacted_query", "not sorted")
	}
	for _, n := range hr.h.RedactedQuery {
		if n != strings.ToLower(n) || n == "" {
			return nil, lr.errf("redacted_query", "%q is not a lower-case parameter name", n)
		}
	}
	return hr, nil
}

// Header returns the cassette header.
func (r *HTTPReader) Header() HTTPFileHeader { return r.h }

// allowed lists the fields each kind of record carries besides seq, x,
// rec and t; required ones are marked "!".
var allowed = map[string][]string{
	RecRequest:      {"!method", "!path", "!host", "!proto", "!headers", "redacted"},
	RecResponse:     {"!status", "!proto", "!headers"},
	RecRequestBody:  {"!off", "text", "b64", "redacted", "n"},
	RecResponseBody: {"!off", "text", "b64", "redacted", "n"},
	RecRequestEnd:   {"!bytes", "!sha256", "detail"},
	RecResponseEnd:  {"!bytes", "!sha256", "detail"},
	RecError:        {"!detail", "status"},
}

func present(w *httpWire) map[string]bool {
	return map[string]bool{
		"method": w.Method != nil, "path": w.Path != nil, "host": w.Host != nil, "proto": w.Proto != nil,
		"status": w.Status != nil, "headers": w.Headers != nil, "off": w.Off != nil, "text": w.Text != nil,
		"b64": w.B64 != nil, "redacted": w.Redacted, "n": w.N != nil, "bytes": w.Bytes != nil,
		"sha256": w.SHA256 != nil, "detail": w.Detail != nil,
	}
}

// checkFields refuses a field the record's kind does not carry and a
// missing required one.
func (r *HTTPReader) checkFields(w *httpWire) error {
	spec, ok := allowed[w.Rec]
	if !ok {
		return r.lr.errf("rec", "unknown record kind %q", w.Rec)
	}
	has := present(w)
	want := map[string]bool{}
	for _, f := range spec {
		name := strings.TrimPrefix(f, "!")
		want[name] = true
		if f[0] == '!' && !has[name] {
			return r.lr.errf(name, "missing (a %s record carries it)", w.Rec)
		}
	}
	names := make([]string, 0, len(has))
	for f := range has {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if has[f] && !want[f] {
			return r.lr.errf(f, "a %s record does not carry it", w.Rec)
		}
	}
	return nil
}

// Next returns the next record, or io.EOF after the last one.
func (r *HTTPReader) Next() (*HTTPRecord, error) {
	line, err := r.lr.readLine()
	if err != nil {
		return nil, err
	}
	if err := r.lr.checkDepth(line); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w httpWire
	if err := dec.Decode(&w); err != nil {
		return nil, r.lr.errf(fieldOf(err), "not an HTTP cassette record: %v", err)
	}
	if dec.More() {
		return nil, r.lr.errf("", "trailing data after the record")
	}
	if w.Seq != r.seq {
		return nil, r.lr.errf("seq", "expected %d, got %d (records missing, reordered or inserted)", r.seq, w.Seq)
	}
	if r.h.Frozen && w.T != 0 {
		return nil, r.lr.errf("t", "a frozen cassette carries no times")
	}
	if w.T < 0 {
		return nil, r.lr.errf("t", "must not be negative")
	}
	if err := r.checkFields(&w); err != nil {
		return nil, err
	}
	rec := &HTTPRecord{Seq: w.Seq, X: w.X, Rec: w.Rec, T: w.T, Line: r.lr.line}
	if w.Headers != nil {
		rec.Header = *w.Headers
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	rec.Method, rec.Path, rec.Host, rec.Proto, rec.Detail = str(w.Method), str(w.Path), str(w.Host), str(w.Proto), str(w.Detail)
	if w.Rec == RecRequest {
		rec.Redacted = w.Redacted
	}
	if w.Status != nil {
		rec.Status = *w.Status
	}
	if err := r.order(rec, &w); err != nil {
		return nil, err
	}
	r.seq++
	return rec, nil
}

// order checks the record against its exchange's state and the body
// fields, and advances the state.
func (r *HTTPReader) order(rec *HTTPRecord, w *httpWire) error {
	if w.X < 1 {
		return r.lr.errf("x", "must be 1 or more")
	}
	if w.Rec == RecRequest {
		return r.orderRequest(w)
	}
	st := r.states[w.X]
	if st == nil && w.X <= r.lastX {
		return r.lr.errf("x", "exchange %d is already over", w.X)
	}
	if st == nil {
		return r.lr.errf("x", "exchange %d has no request record before this one", w.X)
	}
	switch w.Rec {
	case RecResponse:
		if st.resp != 0 {
			return r.lr.errf("rec", "a second response head for exchange %d", w.X)
		}
		if *w.Status < 100 || *w.Status > 999 {
			return r.lr.errf("status", "%d is not an HTTP status", *w.Status)
		}
		st.resp = 1
		return nil
	case RecError:
		if st.resp != 0 {
			return r.lr.errf("rec", "exchange %d failed after its response began (that is a response_end with detail)", w.X)
		}
		if w.Status != nil && (*w.Status < 100 || *w.Status > 999) {
			return r.lr.errf("status", "%d is not an HTTP status", *w.Status)
		}
		delete(r.states, w.X)
		delete(r.bodies, bodyKey{w.X, false})
		return nil
	case RecRequestBody, RecRequestEnd:
		if st.reqEnded {
			return r.lr.errf("rec", "exchange %d's request body already ended", w.X)
		}
	case RecResponseBody, RecResponseEnd:
		if st.resp != 1 {
			return r.lr.errf("rec", "exchange %d has no open response (a response record comes first)", w.X)
		}
	}
	resp := w.Rec == RecResponseBody || w.Rec == RecResponseEnd
	k := bodyKey{w.X, resp}
	bd := r.bodies[k]
	if bd == nil {
		bd = &body{h: sha256.New()}
		r.bodies[k] = bd
	}
	if w.Rec == RecRequestBody || w.Rec == RecResponseBody {
		return r.bodyChunk(rec, w, bd)
	}
	if err := r.bodyEnd(rec, w, bd); err != nil {
		return err
	}
	delete(r.bodies, k)
	if resp {
		st.resp = 2
	} else {
		st.reqEnded = true
	}
	if st.reqEnded && st.resp == 2 {
		delete(r.states, w.X)
	}
	return nil
}

// orderRequest checks a request record: the next exchange, a method and
// a path.
func (r *HTTPReader) orderRequest(w *httpWire) error {
	if w.X != r.lastX+1 {
		return r.lr.errf("x", "a new exchange is %d, got %d (exchanges missing or reordered)", r.lastX+1, w.X)
	}
	if *w.Method == "" {
		return r.lr.errf("method", "empty")
	}
	if !strings.HasPrefix(*w.Path, "/") && *w.Path != "*" {
		return r.lr.errf("path", "%q does not start with /", *w.Path)
	}
	r.lastX = w.X
	r.states[w.X] = &exchangeState{}
	return nil
}

// bodyChunk checks a body record (its offset follows the bytes before
// it; text or b64; n exactly when redacted) and adds it to the body.
func (r *HTTPReader) bodyChunk(rec *HTTPRecord, w *httpWire, bd *body) error {
	if *w.Off != bd.off {
		return r.lr.errf("off", "expected %d, got %d (bytes missing or inserted)", bd.off, *w.Off)
	}
	switch {
	case w.Text != nil && w.B64 != nil:
		return r.lr.errf("text", "a record carries text or b64, not both")
	case w.Text != nil:
		rec.Data = []byte(*w.Text)
	case w.B64 != nil:
		b, err := base64.StdEncoding.DecodeString(*w.B64)
		if err != nil {
			return r.lr.errf("b64", "invalid base64: %v", err)
		}
		rec.Data = b
	default:
		return r.lr.errf("text", "missing (a body record needs text or b64)")
	}
	if w.Redacted != (w.N != nil) {
		return r.lr.errf("n", "present exactly when the chunk is redacted")
	}
	if w.N != nil {
		if *w.N < 0 {
			return r.lr.errf("n", "must not be negative")
		}
		rec.Redacted, rec.N = true, *w.N
		bd.redacted = true
	}
	rec.Off = *w.Off
	bd.off += rec.Len()
	bd.h.Write(rec.Data)
	return nil
}

// bodyEnd checks an end record against the chunks of its body.
func (r *HTTPReader) bodyEnd(rec *HTTPRecord, w *httpWire, bd *body) error {
	if *w.Bytes != bd.off {
		return r.lr.errf("bytes", "%d, but the chunks hold %d bytes", *w.Bytes, bd.off)
	}
	if got := hex.EncodeToString(bd.h.Sum(nil)); got != *w.SHA256 {
		return r.lr.errf("sha256", "%s, but the chunks hash to %s", *w.SHA256, got)
	}
	rec.Bytes, rec.SHA256 = *w.Bytes, *w.SHA256
	return nil
}

// Open returns the exchanges begun and not yet over (at the end of a
// cassette: those cut off).
func (r *HTTPReader) Open() []int64 {
	var xs []int64
	for x := range r.states {
		xs = append(xs, x)
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	return xs
}

// HTTPExchange is one request and its answer, assembled from the records
// of an HTTP cassette (ReadHTTPExchanges) or as the proxy records them.
type HTTPExchange struct {
	X        int64
	Request  HTTPMessage
	Response *HTTPMessage // nil when the upstream never answered
	// Error says why the exchange failed without an answer (the upstream
	// could not be reached, the recording failed), when it did; Status is
	// then the status the witness answered with (0: none).
	Error  string
	Status int
}

// HTTPMessage is a request or a response: its head and its body chunks.
type HTTPMessage struct {
	Method, Path, Host, Proto string // requests
	Status                    int    // responses
	Header                    []Field
	// PathRedacted: query values in Path were replaced by keyed hashes
	// (the request record's "redacted").
	PathRedacted bool
	// Chunks are the body as recorded (redacted where Redacted), chunk by
	// chunk, up to the limit the reader or proxy keeps (Truncated).
	Chunks    []HTTPChunk
	Bytes     int64 // body bytes on the wire so far
	Truncated bool  // Chunks hold less than the body
	Ended     bool  // the body's end was recorded
	EndDetail string
	Line      int64 // the line of the head in the cassette, when read from one
	T         int64 // the head's time, ns since the start (0 when frozen)
	held      int64 // bytes in Chunks
}

// HTTPChunk is one body chunk as recorded.
type HTTPChunk struct {
	Off      int64
	T        int64
	Data     []byte
	Redacted bool
}

// Body returns the recorded body: the chunks joined.
func (m *HTTPMessage) Body() []byte {
	n := 0
	for _, c := range m.Chunks {
		n += len(c.Data)
	}
	b := make([]byte, 0, n)
	for _, c := range m.Chunks {
		b = append(b, c.Data...)
	}
	return b
}

// Redacted reports whether a chunk of the body was redacted.
func (m *HTTPMessage) Redacted() bool {
	for _, c := range m.Chunks {
		if c.Redacted {
			return true
		}
	}
	return false
}

// HeaderValue returns the first value of the header name (any letter case).
func (m *HTTPMessage) HeaderValue(name string) string {
	for _, f := range m.Header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// AddChunk appends a chunk, keeping at most limit bytes of body (limit < 0:
// no limit; 0: none); beyond it the message is marked Truncated and no
// later chunk is kept. wireLen is the chunk's length on the wire.
func (m *HTTPMessage) AddChunk(c HTTPChunk, wireLen int64, limit int64) {
	m.Bytes += wireLen
	if m.Truncated || limit == 0 || (limit > 0 && m.held+int64(len(c.Data)) > limit) {
		m.Truncated = true
		return
	}
	m.held += int64(len(c.Data))
	m.Chunks = append(m.Chunks, c)
}

// ReadHTTPExchanges reads a whole HTTP cassette into its exchanges, in
// exchange order, keeping at most maxBody bytes of each body (< 0: all).
// Exchanges cut off by the end of the file are returned as they are.
func ReadHTTPExchanges(r io.Reader, name string, maxBody int64) (HTTPFileHeader, []*HTTPExchange, error) {
	hr, err := NewHTTPReader(r, name)
	if err != nil {
		return HTTPFileHeader{}, nil, err
	}
	var out []*HTTPExchange
	for {
		rec, err := hr.Next()
		if errors.Is(err, io.EOF) {
			return hr.Header(), out, nil
		}
		if err != nil {
			return hr.Header(), nil, err
		}
		if rec.Rec == RecRequest {
			out = append(out, &HTTPExchange{X: rec.X, Request: HTTPMessage{Method: rec.Method, Path: rec.Path, Host: rec.Host, Proto: rec.Proto, Header: rec.Header, PathRedacted: rec.Redacted, Line: rec.Line, T: rec.T}})
			continue
		}
		x := out[rec.X-1] // the reader checked that the exchange was begun
		switch rec.Rec {
		case RecResponse:
			x.Response = &HTTPMessage{Status: rec.Status, Proto: rec.Proto, Header: rec.Header, Line: rec.Line, T: rec.T}
		case RecRequestBody:
			x.Request.AddChunk(HTTPChunk{Off: rec.Off, T: rec.T, Data: rec.Data, Redacted: rec.Redacted}, rec.Len(), maxBody)
		case RecResponseBody:
			x.Response.AddChunk(HTTPChunk{Off: rec.Off, T: rec.T, Data: rec.Data, Redacted: rec.Redacted}, rec.Len(), maxBody)
		case RecRequestEnd:
			x.Request.Ended, x.Request.EndDetail = true, rec.Detail
		case RecResponseEnd:
			x.Response.Ended, x.Response.EndDetail = true, rec.Detail
		case RecError:
			x.Error, x.Status = rec.Detail, rec.Status
		}
	}
}
