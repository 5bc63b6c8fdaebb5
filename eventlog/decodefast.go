package eventlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"sync"
	"unicode/utf8"
)

// errSlow makes the fast event decoder hand a line to DecodeEvent.
var errSlow = errors.New("slow path")

// DecodeEventFast decodes one event line like DecodeEvent (same
// result, same errors), quickly for the common case: canonical lines whose
// keys it knows. Anything else (unknown keys, escapes it does not handle,
// nested headers, malformed input) goes to DecodeEvent. The graph
// does not use the wire field, so the fast path skips it (after checking it
// as DecodeEvent would) and leaves Event.Wire nil.
func DecodeEventFast(line []byte) (*Event, *ParseError) {
	return decodeEventFast(line, false)
}

// decodeEventFast is DecodeEventFast; shared as decodeFast's.
func decodeEventFast(line []byte, shared bool) (*Event, *ParseError) {
	e, err := decodeFast(line, shared)
	if err == nil {
		if pe := checkEnvelope(e); pe == nil {
			return e, nil
		}
	}
	return DecodeEvent(line)
}

// checkEnvelope repeats DecodeEvent's envelope checks; a failure
// sends the line to the slow path, which reports it.
func checkEnvelope(e *Event) error {
	if e.V != FormatVersion || e.ID == "" || e.Kind == "" || len(e.Prev) != 64 {
		return errSlow
	}
	switch e.Kind {
	case KindToolCall, KindToolResponse, KindModelInput, KindModelOutput, KindExternalEffect,
		KindNotification, KindMessage, KindAmbiguous, KindSessionEnd,
		KindMCPRequest, KindMCPResponse, KindUserInput:
		return nil
	}
	return errSlow // session_start (header) and unknown kinds
}

// fastMaxDepth bounds the fast scanner's recursion well below
// jsonlimit.MaxDepth: a deeper line goes to DecodeEvent, which
// applies the one limit exactly.
const fastMaxDepth = 200

type scanner struct {
	b []byte
	i int
	// arena, when set: unescaped strings are copied into it instead of
	// allocated one by one
	arena *decodeArena
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a JSON string and returns its value.
func (s *scanner) str() (string, error) {
	raw, esc, high, err := s.strScan()
	if err != nil {
		return "", err
	}
	if !esc {
		body := raw[1 : len(raw)-1]
		if high && !utf8.Valid(body) {
			return "", errSlow
		}
		if s.arena != nil {
			return s.arena.str(body), nil
		}
		return string(body), nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", errSlow
	}
	return v, nil
}

// strRaw returns the raw string token (quotes included) and whether it has
// escapes.
func (s *scanner) strRaw() ([]byte, bool, error) {
	raw, esc, _, err := s.strScan()
	return raw, esc, err
}

// SWAR constants of strScan: a byte in every lane of a word.
const (
	lanes1    = 0x0101010101010101
	lanesHigh = 0x8080808080808080
)

// plainWord returns, for the 8 bytes of x (little-endian), a mask whose
// lowest set bit is in the first byte that is '"', '\', below 0x20 or
// 0x80 and above; zero when none is. (A lane above the first such byte
// may be set wrongly by a borrow; the lowest never is.)
func plainWord(x uint64) uint64 {
	q := x ^ ('"' * lanes1)
	bs := x ^ ('\\' * lanes1)
	return ((q-lanes1)&^q | (bs-lanes1)&^bs | (x-0x20*lanes1)&^x | x) & lanesHigh
}

// strScan is strRaw, also saying whether the string has a byte of 0x80
// or above (when not, it is ASCII, so valid UTF-8). Runs of plain bytes
// are skipped eight at a time.
func (s *scanner) strScan() (raw []byte, esc, high bool, err error) {
	if s.peek() != '"' {
		return nil, false, false, errSlow
	}
	start := s.i
	s.i++
	b := s.b
	for {
		for s.i+8 <= len(b) {
			if m := plainWord(binary.LittleEndian.Uint64(b[s.i:])); m != 0 {
				s.i += bits.TrailingZeros64(m) / 8
				break
			}
			s.i += 8
		}
		if s.i >= len(b) {
			return nil, false, false, errSlow
		}
		c := b[s.i]
		switch {
		case c == '"':
			s.i++
			return b[start:s.i], esc, high, nil
		case c == '\\':
			esc = true
			if s.i+1 >= len(b) {
				return nil, false, false, errSlow
			}
			switch b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(b) {
					return nil, false, false, errSlow
				}
				for _, h := range b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false, errSlow
					}
				}
				s.i += 6
			default:
				return nil, false, false, errSlow
			}
		case c < 0x20:
			return nil, false, false, errSlow
		default:
			high = high || c >= 0x80
			s.i++
		}
	}
}

// integer reads a JSON integer without fraction or exponent.
func (s *scanner) integer() (int64, error) {
	start := s.i
	neg := false
	if s.peek() == '-' {
		neg = true
		s.i++
	}
	ds := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if s.i-ds >= 18 {
			return 0, errSlow
		}
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	if s.i == ds || (s.b[ds] == '0' && s.i-ds > 1) {
		return 0, errSlow
	}
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' {
		s.i = start
		return 0, errSlow
	}
	if neg {
		n = -n
	}
	return n, nil
}

func (s *scanner) lit(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

func (s *scanner) boolean() (bool, error) {
	switch {
	case s.lit("true"):
		return true, nil
	case s.lit("false"):
		return false, nil
	}
	return false, errSlow
}

// value skips one JSON value (validating it, no whitespace allowed outside
// strings except what skipWS accepts) and returns its bytes.
func (s *scanner) value(depth int) ([]byte, error) {
	if depth > fastMaxDepth {
		return nil, errSlow
	}
	s.ws()
	start := s.i
	switch c := s.peek(); {
	case c == '"':
		if _, _, err := s.strRaw(); err != nil {
			return nil, err
		}
	case c == '{':
		s.i++
		s.ws()
		if s.peek() == '}' {
			s.i++
			break
		}
		for {
			s.ws()
			if _, _, err := s.strRaw(); err != nil {
				return nil, err
			}
			s.ws()
			if s.peek() != ':' {
				return nil, errSlow
			}
			s.i++
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			s.ws()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == '}' {
				s.i++
				break
			}
			return nil, errSlow
		}
	case c == '[':
		s.i++
		s.ws()
		if s.peek() == ']' {
			s.i++
			break
		}
		for {
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			s.ws()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == ']' {
				s.i++
				break
			}
			return nil, errSlow
		}
	case c == 't':
		if !s.lit("true") {
			return nil, errSlow
		}
	case c == 'f':
		if !s.lit("false") {
			return nil, errSlow
		}
	case c == 'n':
		if !s.lit("null") {
			return nil, errSlow
		}
	case c == '-' || c >= '0' && c <= '9':
		if err := s.number(); err != nil {
			return nil, err
		}
	default:
		return nil, errSlow
	}
	return s.b[start:s.i], nil
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// number checks the JSON number grammar.
func (s *scanner) number() error {
	if s.peek() == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.peek() == '0' {
		s.i++
	} else if digits() == 0 {
		return errSlow
	}
	if s.peek() == '.' {
		s.i++
		if digits() == 0 {
			return errSlow
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return errSlow
		}
	}
	return nil
}

// decodeObject decodes the next value of s strictly into a new *T at dst;
// anything but an object (null leaves *dst nil in DecodeEvent) goes to
// the slow path.
func decodeObject[T any](s *scanner, dst **T) error {
	v, err := s.value(0)
	if err != nil {
		return err
	}
	if len(v) == 0 || v[0] != '{' {
		return errSlow // null leaves the field nil in DecodeEvent; the rest it refuses
	}
	*dst = new(T)
	return strictUnmarshal(v, *dst)
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errSlow
	}
	return nil
}

// key bits, to refuse duplicate keys (encoding/json keeps the last one;
// the slow path reproduces that).
const (
	kV = 1 << iota
	kSeq
	kID
	kSession
	kKind
	kTS
	kSource
	kPrev
	kCall
	kInput
	kCause
	kTool
	kMethod
	kRPCID
	kPayload
	kPayloadSHA
	kIsError
	kRPCError
	kRole
	kEffect
	kMessage
	kWire
	kEnd
	kLegacy
	kRedacted
	kNumbers
	kDirection
	kDuring
	kConcerns
)

// decodeFast decodes a canonical line the quick way, or returns errSlow.
// shared: the strings of the event are copied into a chunk shared with
// the events decoded near it, and the event comes from a slab
// (decodeArena); for readers whose events do not outlive their use, since
// any one string keeps its whole chunk alive.
func decodeFast(line []byte, shared bool) (*Event, error) { return decodeFastKeep(line, shared, false) }

// decodeFastKeep is decodeFast; wire: Event.Wire is decoded too
// (decodeWire, decodewhole.go).
//
// Its cyclomatic complexity (about 50) is that of a table-driven decoder:
// one switch arm per member of the event in canonical order, each a
// straight read of one field, on the hottest path of every verb (issue
// 33), where a call per member would only add cost. A member it does not
// expect sends the line to the general path.
func decodeFastKeep(line []byte, shared, wire bool) (*Event, error) {
	s := &scanner{b: line}
	var box *eventBox
	if shared {
		a := arenas.Get().(*decodeArena)
		defer arenas.Put(a)
		s.arena, box = a, a.box()
	} else {
		// the event, its is_error flag and its effect in one allocation
		box = &eventBox{}
	}
	e := &box.e
	// the raw JSON fields (payload, rpc_id), copied together at the end
	var payload, rpcID []byte
	seen, err := s.members(func(key []byte) (uint32, error) {
		var bit uint32
		var err error
		switch string(key) {
		case "v":
			bit = kV
			n, err := s.integer()
			if err != nil || n != int64(int(n)) {
				return 0, errSlow
			}
			e.V = int(n)
		case "seq":
			bit = kSeq
			e.Seq, err = s.integer()
		case "id":
			bit = kID
			e.ID, err = s.str()
		case "session":
			bit = kSession
			e.Session, err = s.str()
		case "kind":
			bit = kKind
			var k string
			k, err = s.str()
			e.Kind = Kind(k)
		case "ts":
			bit = kTS
			e.TS, err = s.str()
		case "source":
			bit = kSource
			var v string
			v, err = s.str()
			e.Source = Source(v)
		case "prev":
			bit = kPrev
			e.Prev, err = s.str()
		case "call":
			bit = kCall
			e.Call, err = s.str()
		case "input":
			bit = kInput
			e.Input, err = s.str()
		case "cause":
			bit = kCause
			e.Cause, err = s.str()
		case "direction":
			bit = kDirection
			e.Direction, err = s.str()
		case "during":
			bit = kDuring
			e.During, err = s.str()
		case "concerns":
			bit = kConcerns
			e.Concerns, err = s.str()
		case "tool":
			bit = kTool
			e.Tool, err = s.str()
		case "method":
			bit = kMethod
			e.Method, err = s.str()
		case "role":
			bit = kRole
			e.Role, err = s.str()
		case "payload_sha256":
			bit = kPayloadSHA
			e.PayloadSHA256, err = s.str()
		case "rpc_id":
			bit = kRPCID
			var v []byte
			if v, err = s.value(0); err == nil {
				if bytes.Equal(v, []byte("null")) {
					return 0, errSlow
				}
				rpcID = v
			}
		case "payload":
			bit = kPayload
			var v []byte
			if v, err = s.value(0); err == nil {
				if bytes.Equal(v, []byte("null")) {
					return 0, errSlow
				}
				payload = v
			}
		case "is_error":
			bit = kIsError
			box.isError, err = s.boolean()
			e.IsError = &box.isError
		case "rpc_error":
			bit = kRPCError
			e.RPCError, err = s.boolean()
		case "redacted":
			bit = kRedacted
			e.Redacted, err = s.boolean()
		case "wire":
			bit = kWire
			var w *WireRef
			err = decodeWire(s, &w) // checked as DecodeEvent checks it, kept if asked
			if wire {
				e.Wire = w
			}
		case "effect":
			bit = kEffect
			err = s.effect(e, &box.effect)
		case "message":
			bit = kMessage
			err = decodeObject(s, &e.Message)
		case "end":
			bit = kEnd
			err = decodeObject(s, &e.End)
		case "legacy":
			bit = kLegacy
			err = decodeObject(s, &e.Legacy)
		case "numbers":
			bit = kNumbers
			var v []byte
			if v, err = s.value(0); err == nil {
				if len(v) == 0 || v[0] != '{' {
					return 0, errSlow
				}
				err = strictUnmarshal(v, &e.Numbers)
			}
		}
		return bit, err
	})
	if err != nil || seen == 0 || s.i != len(line) {
		return nil, errSlow
	}
	if len(payload) > 0 && !utf8.Valid(payload) {
		return nil, errSlow
	}
	if len(payload)+len(rpcID) > 0 {
		var raw []byte
		if s.arena != nil {
			raw = s.arena.bytes(len(payload) + len(rpcID))
		} else {
			raw = make([]byte, len(payload)+len(rpcID))
		}
		copy(raw, payload)
		copy(raw[len(payload):], rpcID)
		if payload != nil {
			e.Payload = json.RawMessage(raw[:len(payload):len(payload)])
		}
		if rpcID != nil {
			e.RPCID = json.RawMessage(raw[len(payload):])
		}
	}
	return e, nil
}

// decodeArena is where the strings and the event boxes of
// decodeFast(shared) come from: strings are copied into a strings.Builder
// (the strings it returns are windows on its buffer, never changed once
// written) and boxes taken from a slab, so a line costs no allocation of
// its own. A chunk lives as long as one of its events: for the streams,
// whose events die once mapped (FastReader.ShareLines).
type decodeArena struct {
	lines strings.Builder
	boxes []eventBox
	raw   []byte // what is left of a chunk for raw JSON fields
}

// arenas holds the decodeArenas of the goroutines that decode at once
// (FastReader.DecodeLine may be called from several).
var arenas = sync.Pool{New: func() any { return new(decodeArena) }}

const (
	arenaLineBytes = 64 << 10 // a chunk of strings
	arenaBoxes     = 32       // a slab of event boxes
)

// str returns b as a string.
func (a *decodeArena) str(b []byte) string {
	if len(b) > arenaLineBytes/8 {
		return string(b)
	}
	if a.lines.Cap()-a.lines.Len() < len(b) {
		a.lines = strings.Builder{}
		a.lines.Grow(arenaLineBytes)
	}
	n := a.lines.Len()
	a.lines.Write(b)
	return a.lines.String()[n:]
}

// bytes returns n bytes of its own (capacity n: an append copies).
func (a *decodeArena) bytes(n int) []byte {
	if n > arenaLineBytes/8 {
		return make([]byte, n)
	}
	if len(a.raw) < n {
		a.raw = make([]byte, arenaLineBytes)
	}
	b := a.raw[:n:n]
	a.raw = a.raw[n:]
	return b
}

// box returns a new, zero eventBox.
func (a *decodeArena) box() *eventBox {
	if len(a.boxes) == 0 {
		a.boxes = make([]eventBox, arenaBoxes)
	}
	b := &a.boxes[0]
	a.boxes = a.boxes[1:]
	return b
}

// eventBox holds an event with what its pointers may point to, for one
// allocation instead of three.
type eventBox struct {
	e       Event
	isError bool
	effect  Effect
}

// effect decodes an effect object into dst and points e.Effect at it: the
// quick way for an object of string members op, target and reason, each at
// most once, else as decodeObject does.
func (s *scanner) effect(e *Event, dst *Effect) error {
	start := s.i
	if s.effectFast(dst) == nil {
		e.Effect = dst
		return nil
	}
	s.i = start
	*dst = Effect{}
	return decodeObject(s, &e.Effect)
}

func (s *scanner) effectFast(dst *Effect) error {
	_, err := s.members(func(key []byte) (uint32, error) {
		var f *string
		var bit uint32
		switch string(key) {
		case "op":
			f, bit = &dst.Op, 1
		case "target":
			f, bit = &dst.Target, 2
		case "reason":
			f, bit = &dst.Reason, 4
		default:
			return 0, nil
		}
		var err error
		*f, err = s.str()
		return bit, err
	})
	return err
}

// members reads the object at s the quick way: keys without escapes, each
// at most once (encoding/json keeps the last of a repeated key), no
// spaces. For each member, member reads the value (s at its first byte)
// and returns the key's bit, 0 for a key it does not take (encoding/json
// matches keys without regard to case). It returns the bits of the keys
// read (0 for {}); anything else, or an error of member, is errSlow.
func (s *scanner) members(member func(key []byte) (uint32, error)) (uint32, error) {
	if s.peek() != '{' {
		return 0, errSlow
	}
	s.i++
	var seen uint32
	if s.peek() == '}' {
		s.i++
		return 0, nil
	}
	for {
		kraw, esc, err := s.strRaw()
		if err != nil || esc || s.peek() != ':' {
			return 0, errSlow
		}
		s.i++
		bit, err := member(kraw[1 : len(kraw)-1])
		if err != nil || bit == 0 || seen&bit != 0 {
			return 0, errSlow
		}
		seen |= bit
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return seen, nil
		default:
			return 0, errSlow
		}
	}
}

// FastReader streams an event log like Reader, decoding each line with
// DecodeEventFast: same events (Wire aside), same errors. It is what the
// graph reads a log with.
type FastReader struct {
	br   *bufio.Reader
	name string
	line int64
	buf  []byte
	// partial: the line last read had no newline
	partial bool
	shared  bool
}

// ShareLines makes the strings of each event Next returns windows on a
// chunk shared with the events decoded near it (and the event itself
// part of a slab shared with its neighbours): no allocation per field,
// nor per line. Any one string (or event) then keeps its whole chunk (up
// to 64 KiB of strings, or 32 events) alive, so it is for callers that
// let events go once used and copy (strings.Clone) what they keep.
func (l *FastReader) ShareLines(on bool) { l.shared = on }

// NewFastReader returns a FastReader over the event log r (name is used in
// errors).
func NewFastReader(r io.Reader, name string) *FastReader {
	return &FastReader{br: bufio.NewReaderSize(r, 1<<20), name: name}
}

// Line returns the 1-based number of the line last returned by Next.
func (l *FastReader) Line() int64 { return l.line }

// Name returns the name given to NewFastReader.
func (l *FastReader) Name() string { return l.name }

// Next returns the next event, or io.EOF at the end. A line that is not a
// valid event yields a *ParseError.
func (l *FastReader) Next() (*Event, error) {
	line, num, partial, err := l.ReadLine()
	if err != nil {
		return nil, err
	}
	return l.DecodeLine(line, num, partial)
}

// ReadLine reads the next line for a caller that decodes it with
// DecodeLine, perhaps in other goroutines: the line without its newline
// (valid until the next call), its 1-based number and whether it had no
// newline (the log's cut-off last line). Its errors are Next's reading
// errors (io.EOF at the end, a *ParseError for a line too long).
func (l *FastReader) ReadLine() (line []byte, num int64, partial bool, err error) {
	line, err = l.readLine()
	if err != nil {
		return nil, l.line, false, err
	}
	l.line++
	return line, l.line, l.partial, nil
}

// DecodeLine decodes a line ReadLine returned as Next does (same event,
// same *ParseError). It only reads the FastReader's settings, so several
// goroutines may call it at once.
func (l *FastReader) DecodeLine(line []byte, num int64, partial bool) (*Event, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, &ParseError{File: l.name, Line: num, Err: errors.New("blank line")}
	}
	e, pe := decodeEventFast(line, l.shared)
	if pe != nil {
		if partial {
			pe.Err = fmt.Errorf("%w: %w", ErrCutOff, pe.Err)
		}
		pe.locate(l.name, num)
		return nil, pe
	}
	return e, nil
}

// ErrCutOff is wrapped by the ParseError FastReader returns for a last
// line that has no newline and is not a valid event: the log was cut off
// while that line was written (incomplete, not tampered; the rule of
// VerifyLog's "partial" finding).
var ErrCutOff = errors.New("the last line has no newline: the log was cut off while it was written")

func (l *FastReader) readLine() ([]byte, error) {
	l.buf = l.buf[:0]
	l.partial = false
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > maxLineBytes+1 {
			for err == bufio.ErrBufferFull {
				_, err = l.br.ReadSlice('\n')
			}
			l.line++
			return nil, &ParseError{File: l.name, Line: l.line, Err: fmt.Errorf("%w (%d bytes)", errLineTooLong, maxLineBytes)}
		}
		switch err {
		case nil:
			if len(l.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			l.buf = append(l.buf, chunk[:len(chunk)-1]...)
			return l.buf, nil
		case bufio.ErrBufferFull:
			l.buf = append(l.buf, chunk...)
			continue
		case io.EOF:
			l.buf = append(l.buf, chunk...)
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			l.partial = true
			return l.buf, nil
		default:
			return nil, fmt.Errorf("read %s: %w", l.name, err)
		}
	}
}
