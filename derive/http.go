package derive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/modelapi"
	"io"
	"strings"
	"time"
)

// ExchangeDeriver turns the recorded exchanges of an HTTP session into
// events (model_input, model_output, ...). It is the one hook between the
// recording and what the bytes mean: the proxy records, the deriver reads
// the recorded (redacted) bytes.
//
// The proxy calls DeriveRequest once the request body is recorded (for a
// body the upstream reads to the end, that is when it has been forwarded),
// then DeriveResponse once the exchange is over: answered, failed, or cut
// off. Calls for one exchange come in that order, from its own goroutine;
// calls for different exchanges may run at the same time. The events
// returned are appended to the event log in order, together with the
// cassette record that ends the request (request_end) or the exchange
// (response_end, error), so that the log's order is the cassette's order
// of those records; the proxy fills their envelope (seq, id, session,
// prev), their ts when empty (the time of that record) and their source
// (observed) when empty. requestEvents are the ids the events of
// DeriveRequest got, so that a model_output can name its model_input
// (field input). An error is recorded as the failure of the session
// (session_end.end.failure) and the exchange's events are dropped; the
// proxy goes on.
//
// A deriver must depend on the exchange alone (not on the time, not on
// other exchanges), so that EventsFromCassette gives the same events
// later.
//
// Bodies are held for the deriver up to MaxDeriveBody bytes each
// (HTTPMessage.Truncated says when a body was longer).
type ExchangeDeriver interface {
	DeriveRequest(x *cassette.HTTPExchange) ([]eventlog.Event, error)
	DeriveResponse(x *cassette.HTTPExchange, requestEvents []string) ([]eventlog.Event, error)
}

// MaxDeriveBody is the most of one body held for the ExchangeDeriver.
const MaxDeriveBody = 16 << 20

// NopDeriver derives no events: the event log holds the session's start
// and its signed end.
type NopDeriver struct{}

// DeriveRequest implements ExchangeDeriver.
func (NopDeriver) DeriveRequest(*cassette.HTTPExchange) ([]eventlog.Event, error) { return nil, nil }

// DeriveResponse implements ExchangeDeriver.
func (NopDeriver) DeriveResponse(*cassette.HTTPExchange, []string) ([]eventlog.Event, error) {
	return nil, nil
}

// MethodHTTPExchange is the method of the notification a ModelDeriver
// writes for an exchange that is not a model call.
const MethodHTTPExchange = "witness/http-exchange"

// ModelDeriver is the deriver of `witness proxy --listen`: each model call
// (modelapi.Detect: OpenAI Chat Completions, OpenAI Responses, Anthropic
// Messages) becomes a model_input once its request is recorded and a
// model_output, whose input names it, once the exchange is over; their
// payloads are modelapi's (docs/formats/model-events.md). Any other
// exchange becomes one notification (MethodHTTPExchange) when it is over.
// Every event's wire names its exchange in the cassette.
type ModelDeriver struct {
	// Cassette is the cassette's file name in wire references; default
	// CassetteFile.
	Cassette string
}

func (d ModelDeriver) wire(x int64) *eventlog.WireRef {
	name := d.Cassette
	if name == "" {
		name = CassetteFile
	}
	return &eventlog.WireRef{Cassette: name, Offsets: []int64{}, X: x}
}

// exchange is what modelapi reads of a recorded exchange.
func exchange(x *cassette.HTTPExchange) modelapi.Exchange {
	me := modelapi.Exchange{Method: x.Request.Method, Path: x.Request.Path, RequestBody: x.Request.Body()}
	if r := x.Response; r != nil {
		me.Status, me.ContentType, me.ResponseBody = r.Status, r.HeaderValue("Content-Type"), r.Body()
		me.ContentEncoding = r.HeaderValue("Content-Encoding")
		me.Cut = !r.Ended || r.EndDetail != "" || r.Truncated
	}
	return me
}

// DeriveRequest implements ExchangeDeriver: the model_input of a model
// call, nothing for other exchanges.
func (d ModelDeriver) DeriveRequest(x *cassette.HTTPExchange) ([]eventlog.Event, error) {
	// the request alone: the response may be arriving meanwhile
	me := modelapi.Exchange{Method: x.Request.Method, Path: x.Request.Path, RequestBody: x.Request.Body()}
	api, in, _ := modelapi.Read(me)
	if api == modelapi.APINone {
		return nil, nil
	}
	if x.Request.Truncated {
		in.Problems = append(in.Problems, fmt.Sprintf("only the first %d of the body's %d bytes were read (the deriver's limit, or the proxy's memory budget); the cassette holds them all", len(me.RequestBody), x.Request.Bytes))
	}
	if x.Request.EndDetail != "" {
		in.Problems = append(in.Problems, "the request body did not end: "+x.Request.EndDetail)
	}
	if (x.Request.Truncated || x.Request.EndDetail != "") && in.Status == modelapi.InputOK {
		in.Status = modelapi.InputInvalid
	}
	return []eventlog.Event{{
		Kind: eventlog.KindModelInput, Payload: in.Payload(), Redacted: x.Request.Redacted(), Wire: d.wire(x.X),
	}}, nil
}

// DeriveResponse implements ExchangeDeriver: the model_output of a model
// call (linked to its model_input), a MethodHTTPExchange notification for
// other exchanges.
func (d ModelDeriver) DeriveResponse(x *cassette.HTTPExchange, requestEvents []string) ([]eventlog.Event, error) {
	me := exchange(x)
	api := modelapi.Detect(me.Method, me.Path)
	if api == modelapi.APINone {
		p, err := exchangeNote(x)
		if err != nil {
			return nil, err
		}
		red := x.Request.PathRedacted || x.Request.Redacted() || (x.Response != nil && x.Response.Redacted())
		return []eventlog.Event{{Kind: eventlog.KindNotification, Method: MethodHTTPExchange, Payload: p, Redacted: red, Wire: d.wire(x.X)}}, nil
	}
	var out *modelapi.Output
	if x.Response == nil {
		// no upstream answer: the agent got the witness's error (or
		// nothing); the model said nothing
		out = &modelapi.Output{API: api, Status: modelapi.StatusError, HTTPStatus: x.Status, Body: bodyRef(nil),
			Problems: []string{"no answer from the upstream: " + x.Error}}
		e, err := canon.Marshal(map[string]any{"type": "witness_no_answer", "message": x.Error})
		if err != nil {
			return nil, err
		}
		out.Error = e
	} else {
		_, _, out = modelapi.Read(me)
		if x.Response.Truncated {
			out.Problems = append(out.Problems, fmt.Sprintf("only the first %d of the body's %d bytes were read (the deriver's limit, or the proxy's memory budget); the cassette holds them all", len(me.ResponseBody), x.Response.Bytes))
		}
		if d := x.Response.EndDetail; d != "" {
			out.Problems = append(out.Problems, "the response "+d)
		}
	}
	e := eventlog.Event{Kind: eventlog.KindModelOutput, Payload: out.Payload(), Wire: d.wire(x.X)}
	e.Redacted = x.Response != nil && x.Response.Redacted()
	if len(requestEvents) > 0 {
		e.Input = requestEvents[0]
	}
	return []eventlog.Event{e}, nil
}

func bodyRef(b []byte) modelapi.BodyRef {
	h := sha256.Sum256(b)
	return modelapi.BodyRef{Bytes: int64(len(b)), SHA256: hex.EncodeToString(h[:])}
}

// exchangeNote is the payload of a MethodHTTPExchange notification: what
// the exchange was, its size and how it ended. The bytes, their hashes
// and the headers are in the cassette (wire.x).
func exchangeNote(x *cassette.HTTPExchange) (json.RawMessage, error) {
	type note struct {
		Method        string `json:"method"`
		Path          string `json:"path"`
		Status        int    `json:"status,omitempty"`
		ContentType   string `json:"content_type,omitempty"`
		RequestBytes  int64  `json:"request_bytes"`
		ResponseBytes *int64 `json:"response_bytes,omitempty"`
		RequestEnd    string `json:"request_end,omitempty"`
		ResponseEnd   string `json:"response_end,omitempty"`
		Error         string `json:"error,omitempty"`
		StatusSent    int    `json:"status_sent,omitempty"`
	}
	n := note{Method: x.Request.Method, Path: x.Request.Path, RequestBytes: x.Request.Bytes, RequestEnd: x.Request.EndDetail, Error: x.Error, StatusSent: x.Status}
	if r := x.Response; r != nil {
		b := r.Bytes
		n.Status, n.ContentType, n.ResponseBytes, n.ResponseEnd = r.Status, r.HeaderValue("Content-Type"), &b, r.EndDetail
	}
	return canon.Marshal(n)
}

// EventTime is the ts of events derived at a cassette record: the frozen
// time, or the cassette's start plus the record's offset in time, so that
// events derived later from the cassette carry the live ones' times.
func EventTime(h cassette.HTTPFileHeader, start time.Time, t int64) string {
	if h.Frozen || start.IsZero() {
		return h.Started
	}
	return eventlog.FormatTime(start.Add(time.Duration(t)))
}

// StartTime parses a cassette's start (Python isoformat or RFC 3339); the
// zero time when it does not parse.
func StartTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999-07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// logHeader is the event log header of an HTTP proxy session.
func logHeader(h cassette.HTTPFileHeader, seal *eventlog.SealRef, red *eventlog.Redaction) *eventlog.Header {
	return &eventlog.Header{Seal: seal, Redaction: red, Notes: []string{
		"HTTP proxy of " + h.Upstream + ": the exchanges are in " + CassetteFile + " (" + cassette.HTTPFormat + ")",
	}}
}

// Failures collects why the evidence of a session is incomplete, in the
// order of the cassette records that say so, at most 20 then a note.
type Failures struct{ List []string }

// Add adds a note, past 20 notes "more not listed" once.
func (f *Failures) Add(s string) {
	if len(f.List) < 20 {
		f.List = append(f.List, s)
	} else if len(f.List) == 20 {
		f.List = append(f.List, "more not listed")
	}
}

// ResponseNote is the failure note of an exchange whose response did not
// complete, or that got no answer ("" when it completed).
// A GET stream the client closed is the normal end of such a stream
// (the HTTP proxy writes these details only for one): no note.
func ResponseNote(x int64, rec *cassette.HTTPRecord) string {
	switch {
	case rec.Detail == "closed by the client" && rec.Rec == cassette.RecResponseEnd,
		rec.Detail == "closed by the client before the upstream answered" && rec.Rec == cassette.RecError:
		return ""
	case rec.Rec == cassette.RecError:
		return fmt.Sprintf("exchange %d: %s", x, rec.Detail)
	case rec.Detail != "":
		return fmt.Sprintf("exchange %d: response %s", x, rec.Detail)
	}
	return ""
}

// eventsFromHTTPCassette is EventsFromCassette of an HTTP cassette (name
// is its file name, for errors): the events the proxy wrote live, byte for
// byte, given the same seal, deriver (o.Exchanges) and end options — each
// exchange's request events at its request_end record, its response
// events at its response_end or error record, each with that record's
// time. Exchanges the cassette leaves open (cut off while it was written)
// derive nothing and are named in the end's failure.
func eventsFromHTTPCassette(r io.Reader, name string, out io.Writer, o Options) error {
	hr, err := cassette.NewHTTPReader(r, name)
	if err != nil {
		return err
	}
	h := hr.Header()
	var red *eventlog.Redaction
	if len(h.Redaction) > 0 {
		if err := json.Unmarshal(h.Redaction, &red); err != nil {
			return fmt.Errorf("%s: header: redaction: %w", name, err)
		}
	}
	w, err := eventlog.StartLog(out, logHeader(h, o.Seal, red), h.Started, eventlog.SourceObserved)
	if err != nil {
		return err
	}
	d := o.Exchanges
	if d == nil {
		d = ModelDeriver{Cassette: o.Cassette}
	}
	start := StartTime(h.Started)
	open := map[int64]*cassette.HTTPExchange{}
	reqIDs := map[int64][]string{}
	var fails Failures
	var n int64
	emit := func(evs []eventlog.Event, err error, rec *cassette.HTTPRecord, what string) ([]string, error) {
		if err != nil {
			fails.Add(fmt.Sprintf("derive the events of exchange %d's %s: %v", rec.X, what, err))
			return nil, nil
		}
		ids := make([]string, 0, len(evs))
		for i := range evs {
			e := &evs[i]
			if e.TS == "" {
				e.TS = EventTime(h, start, rec.T)
			}
			if e.Source == "" {
				e.Source = eventlog.SourceObserved
			}
			if err := w.Append(e); err != nil {
				return nil, err
			}
			ids = append(ids, e.ID)
		}
		return ids, nil
	}
	for {
		rec, err := hr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if rec.Rec == cassette.RecRequest {
			n++
			open[rec.X] = &cassette.HTTPExchange{X: rec.X, Request: cassette.HTTPMessage{Method: rec.Method, Path: rec.Path, Host: rec.Host, Proto: rec.Proto, Header: rec.Header, PathRedacted: rec.Redacted, Line: rec.Line, T: rec.T}}
			continue
		}
		x := open[rec.X] // the reader checked that the exchange was begun and is not over
		switch rec.Rec {
		case cassette.RecRequestBody:
			x.Request.AddChunk(cassette.HTTPChunk{Off: rec.Off, T: rec.T, Data: rec.Data, Redacted: rec.Redacted}, rec.Len(), MaxDeriveBody)
		case cassette.RecResponse:
			x.Response = &cassette.HTTPMessage{Status: rec.Status, Proto: rec.Proto, Header: rec.Header, Line: rec.Line, T: rec.T}
		case cassette.RecResponseBody:
			x.Response.AddChunk(cassette.HTTPChunk{Off: rec.Off, T: rec.T, Data: rec.Data, Redacted: rec.Redacted}, rec.Len(), MaxDeriveBody)
		case cassette.RecRequestEnd:
			x.Request.Ended, x.Request.EndDetail = true, rec.Detail
			evs, derr := d.DeriveRequest(x)
			if reqIDs[rec.X], err = emit(evs, derr, rec, "request"); err != nil {
				return err
			}
		case cassette.RecResponseEnd, cassette.RecError:
			if rec.Rec == cassette.RecError {
				x.Error, x.Status = rec.Detail, rec.Status
			} else {
				x.Response.Ended, x.Response.EndDetail = true, rec.Detail
			}
			if s := ResponseNote(rec.X, rec); s != "" {
				fails.Add(s)
			}
			evs, derr := d.DeriveResponse(x, reqIDs[rec.X])
			if _, err := emit(evs, derr, rec, "response"); err != nil {
				return err
			}
			delete(open, rec.X)
			delete(reqIDs, rec.X)
		}
	}
	for _, x := range hr.Open() {
		fails.Add(fmt.Sprintf("exchange %d: open at the end of the cassette", x))
	}
	eo := o.End
	if eo.Reason == "" {
		eo.Reason = fmt.Sprintf("completed; %d exchange(s); derived from %s", n, name)
	}
	eo.Failure = strings.Join(fails.List, "; ")
	return eventlog.FinishWith(w, eo)
}
