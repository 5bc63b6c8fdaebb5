package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/modelapi"
)

// HTTPDeriver turns the records of an MCP session over Streamable HTTP
// (an HTTP cassette, docs/formats/http-cassette.md) into the JSON-RPC
// messages they carry and feeds those to a Deriver, the one that derives
// the events of a stdio session: the events are the same whatever the
// transport. Records are fed in seq order, live (HTTPWriter.OnRecord) or
// from a file (EventsFromHTTPCassette), which therefore give the same log.
//
// A POST's request body is one message from the client (c2s). A response
// body is read by its Content-Type: application/json is one message from
// the server (s2c), text/event-stream carries one message per event with
// data (an event without data, a priming event, carries none); other
// bodies carry no message. Each message goes to the Deriver as a wire
// record of its direction whose offset is the seq of the HTTP cassette
// record that completed the message (docs/design/mcp-http-client.md). An
// exchange that failed without an answer (an "error" record) is a capture
// error. Memory is bounded by MaxMessage per open body.
type HTTPDeriver struct {
	d      *Deriver
	max    int
	ex     map[int64]*httpDeriveEx
	seq    int64 // synthetic record numbers, in order
	offs   [2]int64
	cur    *cassette.HTTPRecord // the record being fed
	feedEr error
}

type httpDeriveEx struct {
	method   string
	req      []byte
	reqOver  bool
	redacted bool
	kind     string // "json", "sse" or "" (carries no message)
	resp     []byte
	respOver bool
	sse      *modelapi.SSEParser
}

// NewHTTPDeriver writes the events derived from the records of an HTTP
// cassette with header h to out. maxMessage bounds a message (0:
// mcp.DefaultMaxLine); a longer one is not read into events and recorded
// as over the limit.
func NewHTTPDeriver(out io.Writer, h cassette.HTTPFileHeader, o DeriveOptions, maxMessage int) *HTTPDeriver {
	if maxMessage <= 0 {
		maxMessage = mcp.DefaultMaxLine
	}
	return &HTTPDeriver{d: NewDeriver(out, DeriveHeader(h), o), max: maxMessage, ex: map[int64]*httpDeriveEx{}}
}

// DeriveHeader is the stdio cassette header the Deriver of an HTTP session
// is given: the server's URL stands where a stdio server's command stands.
func DeriveHeader(h cassette.HTTPFileHeader) cassette.Header {
	return cassette.Header{Format: cassette.Format, V: cassette.Version, Command: h.Upstream, Args: []string{}, Env: []string{},
		Started: h.Started, Frozen: h.Frozen, Mode: h.Mode, Redaction: h.Redaction}
}

// Deriver returns the stdio deriver the messages go to.
func (h *HTTPDeriver) Deriver() *Deriver { return h.d }

// Finish ends the event log (Deriver.Finish).
func (h *HTTPDeriver) Finish(o FinishOptions) error {
	if h.feedEr != nil {
		return h.feedEr
	}
	return h.d.Finish(o)
}

// Feed derives the messages of one HTTP cassette record. Errors (writing
// the log) are sticky.
func (h *HTTPDeriver) Feed(r *cassette.HTTPRecord) error {
	if h.feedEr != nil {
		return h.feedEr
	}
	h.cur = r
	h.feedEr = h.feed(r)
	h.cur = nil
	return h.feedEr
}

func (h *HTTPDeriver) feed(r *cassette.HTTPRecord) error {
	switch r.Rec {
	case cassette.RecRequest:
		h.ex[r.X] = &httpDeriveEx{method: r.Method}
		return nil
	case cassette.RecError:
		delete(h.ex, r.X)
		return h.life(cassette.LifeError, fmt.Sprintf("exchange %d: %s", r.X, r.Detail))
	}
	x := h.ex[r.X]
	if x == nil {
		return nil // a reader checks the order; nothing to derive from a stray record
	}
	switch r.Rec {
	case cassette.RecRequestBody:
		x.req, x.reqOver = appendBounded(x.req, r.Data, x.reqOver, h.max)
		x.redacted = x.redacted || r.Redacted
	case cassette.RecRequestEnd:
		req, over, red := x.req, x.reqOver, x.redacted
		x.req, x.redacted = nil, false
		if x.method == "POST" && (len(bytes.TrimSpace(req)) > 0 || over) {
			return h.message(cassette.C2S, req, over, red, r)
		}
	case cassette.RecResponse:
		x.kind = bodyKind(fieldValue(r.Header, "Content-Type"), fieldValue(r.Header, "Content-Encoding"))
		if x.kind == "sse" {
			x.sse = modelapi.NewSSEParser(h.max, func(e modelapi.SSEEvent) {
				// an event without a message (a priming event: an id and
				// empty data) is the transport's, not a message
				if h.feedEr == nil && len(bytes.TrimSpace(e.Data)) > 0 {
					h.feedEr = h.message(cassette.S2C, e.Data, false, h.cur.Redacted, h.cur)
				}
			}, func(int, int) {
				if h.feedEr == nil {
					h.feedEr = h.message(cassette.S2C, nil, true, h.cur.Redacted, h.cur)
				}
			})
		}
	case cassette.RecResponseBody:
		switch x.kind {
		case "json":
			x.resp, x.respOver = appendBounded(x.resp, r.Data, x.respOver, h.max)
			x.redacted = x.redacted || r.Redacted
		case "sse":
			x.sse.Feed(r.Data)
		}
	case cassette.RecResponseEnd:
		delete(h.ex, r.X)
		if x.kind == "json" && (len(bytes.TrimSpace(x.resp)) > 0 || x.respOver) {
			return h.message(cassette.S2C, x.resp, x.respOver, x.redacted, r)
		}
	}
	return nil
}

// message feeds one JSON-RPC message (or, over the limit, the fact of
// one) to the Deriver as a wire record completed by the HTTP record at.
func (h *HTTPDeriver) message(dir cassette.Dir, data []byte, over, redacted bool, at *cassette.HTTPRecord) error {
	data = bytes.TrimRight(data, "\r\n")
	rec := &cassette.Record{Seq: h.seq, Dir: dir, Off: at.Seq, T: at.T, Data: data, Redacted: redacted}
	if redacted {
		rec.N = int64(len(data))
	}
	h.seq++
	if over {
		// a message over the limit is what a stdio line over the maximum
		// line size is: a piece (Cont) and its end
		rec.Data, rec.Cont = nil, true
		if err := h.d.Feed(rec); err != nil {
			return err
		}
		end := &cassette.Record{Seq: h.seq, Dir: dir, Off: at.Seq, T: at.T, Data: []byte{}}
		h.seq++
		return h.d.Feed(end)
	}
	return h.d.Feed(rec)
}

func (h *HTTPDeriver) life(kind, detail string) error {
	var t int64
	if h.cur != nil {
		t = h.cur.T
	}
	rec := &cassette.Record{Seq: h.seq, Life: kind, Detail: detail, T: t}
	h.seq++
	return h.d.Feed(rec)
}

func appendBounded(buf, data []byte, over bool, max int) ([]byte, bool) {
	if over || len(buf)+len(data) > max {
		return nil, true
	}
	return append(buf, data...), false
}

// fieldValue returns the first value of header name (any letter case).
func fieldValue(h []cassette.Field, name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// bodyKind says how a response body carries messages: "json", "sse", or
// "" (none: another media type, or a content coding the witness did not
// ask for and does not undo).
func bodyKind(contentType, contentEncoding string) string {
	if ce := strings.TrimSpace(contentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	switch mt {
	case "application/json":
		return "json"
	case "text/event-stream":
		return "sse"
	}
	return ""
}

// EventsFromHTTPCassette re-derives the event log of an MCP session
// recorded over HTTP (witness capture --url): it reads the HTTP cassette
// (name is used in errors), feeds every record to an HTTPDeriver and
// finishes the log. The result equals the log the live session wrote when
// given the same options and end.
func EventsFromHTTPCassette(r io.Reader, name string, out io.Writer, o DeriveOptions, fo FinishOptions, maxMessage int) error {
	hr, err := cassette.NewHTTPReader(r, name)
	if err != nil {
		return err
	}
	d := NewHTTPDeriver(out, hr.Header(), o, maxMessage)
	for {
		rec, err := hr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := d.Feed(rec); err != nil {
			return fmt.Errorf("derive events from %s: %w", name, err)
		}
	}
	return d.Finish(fo)
}
