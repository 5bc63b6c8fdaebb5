package modelapi

// SSEEvent is one dispatched server-sent event, as SSEParser reads it.
type SSEEvent struct {
	N     int    // 1-based number of the event in the stream (dispatched or skipped)
	Type  string // the event: field, "" when none was given
	Data  []byte // data: lines joined with LF; valid only during the emit call
	Bytes int    // bytes of the event's lines on the wire
	ID    string // the last event ID (id: lines) when the event was dispatched
}

// SSEParser is the one incremental text/event-stream parser of the witness
// (the model API reader's, shared with the MCP-over-HTTP reader of package
// httpproxy and the Streamable HTTP client of package capture): lines end
// in LF, CR or CRLF, a leading byte-order mark is dropped, comments are
// skipped, data: lines join with LF and a blank line dispatches the event;
// id: and retry: are kept for a client resuming the stream. Memory is
// bounded by the limit given to NewSSEParser: an event whose lines exceed
// it is skipped without being buffered, and reported.
type SSEParser struct{ p sseParser }

// NewSSEParser returns a parser that calls emit for each event with data
// and skip (may be nil) for each event over limit bytes (its number and
// size).
func NewSSEParser(limit int, emit func(SSEEvent), skip func(n, bytes int)) *SSEParser {
	if skip == nil {
		skip = func(int, int) {}
	}
	s := &SSEParser{}
	s.p = sseParser{limit: limit, skip: skip, emit: func(e sseEvent) {
		emit(SSEEvent{N: e.n, Type: e.typ, Data: e.data, Bytes: e.bytes, ID: e.id})
	}}
	return s
}

// Feed parses the next bytes of the stream, in any chunking.
func (s *SSEParser) Feed(b []byte) { s.p.feed(b) }

// Pending reports the bytes of an event the stream ended inside (not
// dispatched, as the standard says).
func (s *SSEParser) Pending() int { return s.p.pending() }

// LastEventID returns the last event ID buffer: what a client sends as
// Last-Event-ID to resume the stream ("" when no id: line came).
func (s *SSEParser) LastEventID() string { return s.p.lastID }

// Retry returns the reconnection time in milliseconds of the last valid
// retry: line, and whether there was one.
func (s *SSEParser) Retry() (ms int, ok bool) { return s.p.retry, s.p.retryOK }

// Over reports whether the event being read is already over the limit
// (it will be skipped): a reader can stop there instead of waiting for
// the event's end.
func (s *SSEParser) Over() bool { return s.p.over }

// Drop skips the event being read (or, between events, the next one) as
// if it were over the limit: what it buffered is let go, and skip reports
// it at its end. A reader that may hold no more (a memory budget spent)
// calls it.
func (s *SSEParser) Drop() { s.p.drop() }
