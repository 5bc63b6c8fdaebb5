package modelapi

// SSEEvent is one dispatched server-sent event, as SSEParser reads it.
type SSEEvent struct {
	N     int    // 1-based number of the event in the stream (dispatched or skipped)
	Type  string // the event: field, "" when none was given
	Data  []byte // data: lines joined with LF; valid only during the emit call
	Bytes int    // bytes of the event's lines on the wire
}

// SSEParser is the one incremental text/event-stream parser of the witness
// (the model API reader's, shared with the MCP-over-HTTP reader of package
// httpproxy): lines end in LF, CR or CRLF, a leading byte-order mark is
// dropped, comments are skipped, data: lines join with LF and a blank line
// dispatches the event. Memory is bounded by the limit given to
// NewSSEParser: an event whose lines exceed it is skipped without being
// buffered, and reported.
type SSEParser struct{ p sseParser }

// NewSSEParser returns a parser that calls emit for each event with data
// and skip for each event over limit bytes (its number and size).
func NewSSEParser(limit int, emit func(SSEEvent), skip func(n, bytes int)) *SSEParser {
	s := &SSEParser{}
	s.p = sseParser{limit: limit, skip: skip, emit: func(e sseEvent) {
		emit(SSEEvent{N: e.n, Type: e.typ, Data: e.data, Bytes: e.bytes})
	}}
	return s
}

// Feed parses the next bytes of the stream, in any chunking.
func (s *SSEParser) Feed(b []byte) { s.p.feed(b) }

// Pending reports the bytes of an event the stream ended inside (not
// dispatched, as the standard says).
func (s *SSEParser) Pending() int { return s.p.pending() }
