package modelapi

import "bytes"

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	n     int    // 1-based number of the event in the stream (dispatched or skipped)
	typ   string // the event: field, "" when none was given
	data  []byte // data: lines joined with LF
	bytes int    // bytes of the event's lines on the wire
	id    string // the last event ID when the event was dispatched
}

// sseParser is an incremental parser of a text/event-stream, as the HTML
// standard defines it: lines end in LF, CR or CRLF (a CRLF split across two
// chunks counts once), a leading byte-order mark is dropped, a line
// beginning with a colon is a comment, data: lines join with LF, one space
// after the colon is dropped, and a blank line dispatches the event (an
// event without data is not dispatched). Memory is bounded by limit: an
// event whose lines exceed it is skipped without being buffered and
// reported through skip.
type sseParser struct {
	limit int
	emit  func(sseEvent)
	skip  func(n, bytes int)

	head      []byte // the first bytes, until the BOM question is settled
	started   bool
	pendingCR bool
	line      []byte
	lineOver  bool

	n       int
	typ     string
	data    []byte
	hasData bool
	evBytes int
	over    bool
	fields  bool // the event has had a line (for the end-of-stream report)

	bomLines int // lines after the stream's start that begin with a byte-order mark

	lastID  string // the last event ID buffer (id: lines)
	retry   int    // the reconnection time in ms of the last valid retry: line, -1 when none
	retryOK bool
}

var bom = []byte{0xEF, 0xBB, 0xBF}

func (p *sseParser) feed(b []byte) {
	if !p.started {
		p.head = append(p.head, b...)
		if len(p.head) < len(bom) && bytes.HasPrefix(bom, p.head) {
			return
		}
		p.started = true
		b = bytes.TrimPrefix(p.head, bom)
		p.head = nil
	}
	for len(b) > 0 {
		if p.pendingCR {
			p.pendingCR = false
			if b[0] == '\n' {
				p.evBytes++
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.addLine(b)
			return
		}
		p.addLine(b[:i])
		p.evBytes++
		if b[i] == '\r' {
			p.pendingCR = true
		}
		b = b[i+1:]
		p.endLine()
	}
}

// addLine appends a piece of the current line, up to the event limit.
func (p *sseParser) addLine(b []byte) {
	p.evBytes += len(b)
	if p.evBytes > p.limit {
		p.over = true
	}
	if p.lineOver || p.over {
		p.lineOver = true
		// keep only what names the field, so the line can still be told apart
		if len(p.line) < 16 {
			n := min(16-len(p.line), len(b))
			p.line = append(p.line, b[:n]...)
		}
		return
	}
	p.line = append(p.line, b...)
}

func (p *sseParser) endLine() {
	line := p.line
	p.line, p.lineOver = p.line[:0], false
	if len(line) == 0 {
		p.dispatch()
		return
	}
	p.fields = true
	if bytes.HasPrefix(line, bom) {
		// a field the standard does not know; the openai SDK decodes
		// each event's bytes on their own and drops the mark
		p.bomLines++
	}
	if line[0] == ':' || p.over {
		return
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		p.data = append(p.data, value...)
		p.data = append(p.data, '\n')
		p.hasData = true
	case "event":
		p.typ = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.lastID = string(value)
		}
	case "retry":
		if n, ok := sseDigits(value); ok {
			p.retry, p.retryOK = n, true
		}
	}
	// id and retry change nothing a reader of one model response needs;
	// an MCP client resuming a stream reads them (SSEParser)
}

func (p *sseParser) dispatch() {
	if p.fields || p.over {
		p.n++
	}
	switch {
	case p.over:
		p.skip(p.n, p.evBytes)
	case p.hasData:
		p.emit(sseEvent{n: p.n, typ: p.typ, data: bytes.TrimSuffix(p.data, []byte{'\n'}), bytes: p.evBytes, id: p.lastID})
	}
	p.typ, p.data, p.hasData, p.evBytes, p.over, p.fields = "", p.data[:0], false, 0, false, false
	if cap(p.data) > 64<<10 {
		p.data = nil // do not keep a large event's buffer
	}
	if cap(p.line) > 64<<10 {
		p.line = nil
	}
}

// drop marks the event being read over the limit and lets go of what it
// buffered, keeping only what names the field of the line being read.
func (p *sseParser) drop() {
	p.over, p.data, p.hasData = true, nil, false
	if len(p.line) > 16 {
		p.line = append([]byte(nil), p.line[:16]...)
	}
	p.lineOver = len(p.line) > 0
}

// pending reports the bytes of an event the stream ended inside (not
// dispatched, as the standard says).
func (p *sseParser) pending() int {
	n := p.evBytes + len(p.head)
	if !p.fields && len(p.line) == 0 && !p.over && len(p.head) == 0 {
		return 0
	}
	return n
}

// sseDigits reads a retry: value, which the standard takes only when it is
// ASCII digits; values past a day are capped there.
func sseDigits(v []byte) (int, bool) {
	if len(v) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < 86_400_000 {
			n = n*10 + int(c-'0')
		}
	}
	return min(n, 86_400_000), true
}
