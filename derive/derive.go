package derive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/mcp"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Methods of the notification events the witness itself writes for what it
// saw on the wire that is not a JSON-RPC message it can pair.
const (
	MethodInvalidLine       = "witness/invalid-line"           // a server line that is not a JSON-RPC message
	methodLineTooLong       = "witness/line-too-long"          // a server line over the maximum line size
	methodUnmatchedResponse = eventlog.MethodUnmatchedResponse // a response whose id matches no pending request
	// methodOpenRequestsLimit: more requests of one direction are open
	// (sent, not answered) than the deriver tracks (MaxOpenRequests); the
	// requests past the limit are still events, but their answers will
	// not be paired
	methodOpenRequestsLimit  = "witness/open-requests-limit"
	maxBufferedBeforeHeader  = 4096
	maxInvalidLineInEventLen = 4096
)

// maxOpenRequests bounds the requests of one direction the deriver keeps
// open for pairing, so that a flood of unanswered requests cannot grow its
// memory without limit.
const maxOpenRequests = 4096

// Methods whose exchanges are not mcp_request/mcp_response events
// (docs/design/mcp-surface.md, decision 2).
const (
	methodToolsCall   = mcp.MethodToolsCall
	methodSampling    = mcp.MethodSamplingCreateMessage
	methodElicitation = mcp.MethodElicitationCreate
)

// EffectFunc decides whether a call of tool with args has an external effect
// (a configured mapping); ok false means the mapping says nothing.
type EffectFunc func(tool string, args json.RawMessage) (eff eventlog.Effect, ok bool)

// Options configure how events are derived from a recording: by the live
// recorders (NewDeriver, the HTTP proxy's ExchangeDeriver) and by
// EventsFromCassette, which given the same options derives the same log.
type Options struct {
	Seal     *eventlog.SealRef
	Redactor *Redactor  // message cassettes: the redaction the header names
	Cassette string     // cassette file name put in wire refs (default CassetteFile)
	Effects  EffectFunc // optional mapping, consulted before tool annotations
	Notes    []string   // extra notes for the session header
	// Exchanges makes the events of each exchange of an HTTP cassette; nil:
	// ModelDeriver, the deriver of `witness proxy --listen`.
	Exchanges ExchangeDeriver
	// End: the signers, time, reason and failure of the session_end
	// EventsFromCassette writes (Deriver.Finish takes its own). For an
	// HTTP cassette, Failure is derived from the cassette (exchanges cut
	// off or unanswered, open at its end) and a Reason left empty says the
	// log was derived.
	End eventlog.EndOptions
}

// pendingReq is an open request: sent in direction dir, not yet answered.
type pendingReq struct {
	method string
	tool   string
	callID string // event id of the request (set once written; empty for an ambiguous line)
	args   json.RawMessage
	seq    int64
	dir    cassette.Dir
	id     json.RawMessage // the exact id token
	token  string          // params._meta.progressToken (exact token), "" when none
	// ambiguous: the line has no single reading (an ambiguous event, not a
	// request event): its answer is never paired by guess
	ambiguous bool
	// cancelled: a notifications/cancelled named it; it is no longer open
	// for during, but a late answer still pairs with it
	cancelled bool
}

// Deriver turns cassette records, fed in seq order, into events. The live
// client feeds it from the cassette writer (under its lock), and
// EventsFromCassette feeds it from a cassette file; both therefore derive
// the same events from the same records.
//
// Every JSON-RPC request, in either direction, and its answer become
// events (docs/design/mcp-surface.md): tool_call/tool_response for
// tools/call, an observed model_input/model_output for the server's
// sampling/createMessage, mcp_request and user_input for elicitation/create,
// mcp_request/mcp_response for every other method; answers pair with the
// open request sent the other way by the exact id token; notifications in
// both directions are events, naming the request they concern. The open
// requests of each direction are bounded (MaxOpenRequests).
//
// Events before the first tools/call (the handshake's requests, answers and
// notifications) are held until the session header is known, that is until
// the initialize result and every page of tools/list have been seen.
type Deriver struct {
	out  io.Writer
	ch   cassette.Header
	o    Options
	w    *eventlog.Writer
	rec  *Recorder
	held []func() error
	// callHeld: a tools/call is held until initialize and tools/list are answered
	callHeld bool

	start time.Time
	// open requests of each direction by exact id token (pending: host
	// requests, spending: server requests), and by progress token; each
	// holds at most maxOpen requests
	pending   map[string]*pendingReq
	spending  map[string]*pendingReq
	progress  map[cassette.Dir]map[string]*pendingReq
	maxOpen   int
	atLimit   map[cassette.Dir]bool // the limit notification was written and the set is still full
	untracked map[string]int        // requests over the limit, by method family ("tools/call", "other")
	server    eventlog.ServerInfo
	tools     []json.RawMessage
	toolNames map[string]int
	annots    map[string]json.RawMessage
	longLine  map[cassette.Dir]bool
	frag      []byte // c2s: an unfinished JSON value a stream decoder would join with the next line
	exit      string
	firstErr  string
	signals   []string
	lastTS    string
	err       error
	// overLimit names the lines the deriver could not read because they
	// were kept in pieces (over the maximum line size); heldBytes counts
	// the wire bytes of the records held before the header.
	overLimit []string
	heldBytes int
}

// maxHeldBytes bounds the wire bytes held before the session header: past
// it the header is written with what is known, so that memory stays
// bounded whatever a server sends before the first tools/call.
const maxHeldBytes = 32 << 20

// NewDeriver writes the events derived from a cassette with header h to out.
func NewDeriver(out io.Writer, h cassette.Header, o Options) *Deriver {
	if o.Cassette == "" {
		o.Cassette = CassetteFile
	}
	d := &Deriver{out: out, ch: h, o: o, pending: map[string]*pendingReq{}, spending: map[string]*pendingReq{},
		progress: map[cassette.Dir]map[string]*pendingReq{cassette.C2S: {}, cassette.S2C: {}},
		maxOpen:  maxOpenRequests, atLimit: map[cassette.Dir]bool{}, untracked: map[string]int{},
		toolNames: map[string]int{}, annots: map[string]json.RawMessage{}, longLine: map[cassette.Dir]bool{}}
	d.server.Command, d.server.Args = h.Command, h.Args
	if t, err := parseAnyTime(h.Started); err == nil {
		d.start = t
	}
	return d
}

func parseAnyTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999-07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an RFC 3339 time: %q", s)
}

// ts is the event time of a record: the frozen time, or the cassette start
// plus the record's offset in time, so that events derived later from the
// cassette carry the same times as the live ones.
func (d *Deriver) ts(r *cassette.Record) string {
	if d.ch.Frozen || d.start.IsZero() {
		return d.ch.Started
	}
	return eventlog.FormatTime(d.start.Add(time.Duration(r.T)))
}

// Err returns the first error the deriver met (writing the log).
func (d *Deriver) Err() error { return d.err }

// Server returns what the deriver knows of the server so far.
func (d *Deriver) Server() eventlog.ServerInfo { return d.server }

// Writer returns the event log writer once the session header was written.
func (d *Deriver) Writer() *eventlog.Writer { return d.w }

// Feed derives the events of one record. Errors are sticky. The deriver
// may keep r (and r.Data) until the session header is known: the caller
// must not change r.Data after the call.
func (d *Deriver) Feed(r *cassette.Record) error {
	if d.err != nil {
		return d.err
	}
	if r.Cont && !d.longLine[r.Dir] {
		d.overLimit = append(d.overLimit, fmt.Sprintf("%s line at byte offset %d", r.Dir, r.Off))
	}
	if err := d.feed(r); err != nil {
		d.err = err
		return err
	}
	if !d.headerDone() && r.Dir != "" {
		if d.heldBytes += len(r.Data); d.heldBytes > maxHeldBytes {
			if err := d.startLog(); err != nil {
				d.err = err
			}
		}
	}
	return d.err
}

func (d *Deriver) feed(r *cassette.Record) error {
	if r.Life != "" {
		d.lastTS = d.ts(r)
		switch r.Life {
		case cassette.LifeExit:
			d.exit = r.Status
		case cassette.LifeError:
			if d.firstErr == "" {
				d.firstErr = r.Detail
			}
		case cassette.LifeSignal:
			d.signals = append(d.signals, r.Signal)
		}
		return nil
	}
	if r.Dir == cassette.Stderr {
		return nil
	}
	// wire refs are byte offsets within the record's direction (c2s for
	// tool_call events, s2c for the others), which, unlike record numbers,
	// do not depend on how stderr chunks interleave
	wire := &eventlog.WireRef{Cassette: d.o.Cassette, Offsets: []int64{r.Off}}
	ts := d.ts(r)
	d.lastTS = ts
	if r.Cont || d.longLine[r.Dir] {
		first := !d.longLine[r.Dir]
		d.longLine[r.Dir] = r.Cont
		if first && r.Dir == cassette.S2C {
			payload, _ := json.Marshal(map[string]any{"offset": r.Off, "bytes_before_cut": len(r.Data)})
			return d.do(func() error {
				_, err := d.rec.notification(notificationEvent{Method: methodLineTooLong, Params: json.RawMessage(payload), TS: ts, Wire: wire})
				return err
			})
		}
		return nil
	}
	if len(bytes.TrimSpace(r.Data)) == 0 && r.Dir == cassette.C2S {
		return nil
	}
	m, perr := mcp.Parse(r.Data)
	if r.Dir == cassette.C2S {
		if perr != nil {
			return d.ambiguous(r, m, perr, ts, wire)
		}
		d.frag = nil
	} else if mcp.IsAmbiguous(perr) {
		return d.ambiguous(r, m, perr, ts, wire)
	} else if perr != nil {
		return d.invalid(r, perr, ts, wire)
	}
	if (m.Kind == mcp.KindRequest || m.Kind == mcp.KindNotification) && m.Method == "" {
		// no method to act on or to name an event by: kept with its bytes
		err := errors.New(`"method" is an empty string`)
		if r.Dir == cassette.C2S {
			return d.ambiguous(r, m, err, ts, wire)
		}
		return d.invalid(r, err, ts, wire)
	}
	w := wireMsg{m: m, dir: r.Dir, ts: ts, wire: wire, seq: r.Seq, redacted: r.Redacted}
	switch m.Kind {
	case mcp.KindRequest:
		return d.request(w)
	case mcp.KindNotification:
		return d.notification(w)
	}
	return d.response(w)
}

// wireMsg is one JSON-RPC message Parse read with a single reading, and
// where it was seen.
type wireMsg struct {
	m        *mcp.Message
	dir      cassette.Dir
	ts       string
	wire     *eventlog.WireRef
	seq      int64
	redacted bool // the cassette holds the redacted line
}

func dirName(dir cassette.Dir) string {
	if dir == cassette.S2C {
		return eventlog.DirS2C
	}
	return eventlog.DirC2S
}

func otherDir(dir cassette.Dir) cassette.Dir {
	if dir == cassette.S2C {
		return cassette.C2S
	}
	return cassette.S2C
}

// openOf returns the open requests sent in direction dir.
func (d *Deriver) openOf(dir cassette.Dir) map[string]*pendingReq {
	if dir == cassette.S2C {
		return d.spending
	}
	return d.pending
}

// maxFragment bounds the unfinished JSON value kept to join with later
// host lines.
const maxFragment = 1 << 20

// ambiguous records a line that has no single reading: every host line Parse
// refuses (a server may still act on it: a lenient decoder, a stream
// decoder joining it with the next line) and every server line Parse calls
// ambiguous. The event keeps the exact bytes, the reasons and the readings.
func (d *Deriver) ambiguous(r *cassette.Record, m *mcp.Message, perr error, ts string, wire *eventlog.WireRef) error {
	var reasons []string
	var amb *mcp.AmbiguousError
	if errors.As(perr, &amb) {
		reasons = amb.Reasons
	} else {
		reasons = []string{perr.Error()}
	}
	rd := mcp.ReadAll(r.Data)
	if r.Dir == cassette.C2S {
		if d.frag != nil {
			joined := append(append(d.frag, '\n'), r.Data...)
			jr := mcp.ReadAll(joined)
			switch {
			case jr.Err == nil:
				reasons = append(reasons, "completes a JSON value begun on an earlier line: a stream decoder reads them as one message (readings \"joined\")")
				for i := range jr.List {
					for j, dec := range jr.List[i].Decoders {
						jr.List[i].Decoders[j] = "joined: " + dec
					}
				}
				rd.List = append(rd.List, jr.List...)
				d.frag = nil
			case jr.Incomplete && len(joined) <= maxFragment:
				reasons = append(reasons, "continues a JSON value begun on an earlier line that is still unfinished")
				d.frag = joined
			default:
				d.frag = nil
			}
		} else if rd.Incomplete && len(r.Data) <= maxFragment {
			reasons = append(reasons, "ends inside a JSON value: a stream decoder would join it with the next line")
			d.frag = append([]byte(nil), r.Data...)
		}
	}
	if m != nil && m.Kind == mcp.KindRequest {
		// the envelope is pinned down: keep the handshake going, and
		// keep its id, so that its answer is never paired with another
		// request by guess
		if op := d.track(&pendingReq{method: m.Method, seq: r.Seq, dir: r.Dir, id: append(json.RawMessage(nil), m.ID...), ambiguous: true}, ts, wire); op != nil {
			if err := d.do(op); err != nil {
				return err
			}
		}
	}
	answered := false
	if m != nil && m.Kind == mcp.KindResponse {
		// answered, ambiguously: the event below says how
		_, answered = d.untrack(d.openOf(otherDir(r.Dir)), mcp.IDKey(m.ID))
	}
	a := newAmbiguousLine(dirName(r.Dir), r.Data, r.Partial, reasons, rd)
	if err := d.do(func() error {
		_, err := d.rec.ambiguous(a, ts, wire)
		return err
	}); err != nil {
		return err
	}
	if answered && r.Dir == cassette.S2C {
		return d.startIfHandshakeDone()
	}
	return nil
}

func (d *Deriver) invalid(r *cassette.Record, perr error, ts string, wire *eventlog.WireRef) error {
	p := map[string]any{"error": perr.Error(), "bytes": len(r.Data)}
	data := r.Data
	if len(data) > maxInvalidLineInEventLen {
		data = data[:maxInvalidLineInEventLen]
		p["truncated"] = true
	}
	if utf8.Valid(data) {
		p["text"] = string(data)
	} else {
		p["b64"] = base64.StdEncoding.EncodeToString(data)
	}
	if r.Partial {
		p["partial"] = true
	}
	payload, _ := json.Marshal(p)
	return d.do(func() error {
		_, err := d.rec.notification(notificationEvent{Method: MethodInvalidLine, Params: json.RawMessage(payload), TS: ts, Wire: wire})
		return err
	})
}

// track registers an open request. Past maxOpen open requests of its
// direction it is not kept (its answer will not be paired): the first
// time, a witness/open-requests-limit notification says so, written by
// the op returned (nil when there is nothing to write). A request
// reusing an open id replaces it.
func (d *Deriver) track(p *pendingReq, ts string, wire *eventlog.WireRef) func() error {
	open := d.openOf(p.dir)
	key := mcp.IDKey(p.id)
	if _, reused := open[key]; !reused && len(open) >= d.maxOpen {
		fam := "other"
		if p.method == methodToolsCall {
			fam = methodToolsCall
		}
		d.untracked[fam]++
		if d.atLimit[p.dir] {
			return nil
		}
		d.atLimit[p.dir] = true
		b, _ := json.Marshal(map[string]any{"direction": dirName(p.dir), "limit": d.maxOpen, "method": p.method, "id": p.id})
		return func() error {
			_, err := d.rec.notification(notificationEvent{Method: methodOpenRequestsLimit, Direction: dirName(p.dir), Params: json.RawMessage(b), Wire: wire, TS: ts})
			return err
		}
	}
	if old, ok := open[key]; ok {
		d.dropToken(old)
	}
	open[key] = p
	if p.token != "" {
		d.progress[p.dir][p.token] = p
	}
	return nil
}

// untrack removes the open request with id key from open and returns it.
func (d *Deriver) untrack(open map[string]*pendingReq, key string) (*pendingReq, bool) {
	p, ok := open[key]
	if !ok {
		return nil, false
	}
	delete(open, key)
	d.dropToken(p)
	if len(open) < d.maxOpen {
		d.atLimit[p.dir] = false
	}
	return p, true
}

func (d *Deriver) dropToken(p *pendingReq) {
	if p.token != "" && d.progress[p.dir][p.token] == p {
		delete(d.progress[p.dir], p.token)
	}
}

// request derives a request event: tool_call (tools/call), model_input
// (sampling/createMessage from the server) or mcp_request (any other
// method, either direction).
func (d *Deriver) request(w wireMsg) error {
	m := w.m
	p := &pendingReq{method: m.Method, seq: w.seq, dir: w.dir, id: append(json.RawMessage(nil), m.ID...)}
	if meta, ok := mcp.Member(m.Params, "_meta"); ok {
		if tok, ok := mcp.Member(meta, "progressToken"); ok {
			p.token = string(tok)
		}
	}
	// a server request: which host requests were open when it came
	var during []*pendingReq
	if w.dir == cassette.S2C {
		for _, o := range d.pending {
			if !o.cancelled {
				during = append(during, o)
			}
		}
		sort.Slice(during, func(i, j int) bool { return during[i].seq < during[j].seq })
	}
	if limitOp := d.track(p, w.ts, w.wire); limitOp != nil {
		if err := d.do(limitOp); err != nil {
			return err
		}
	}
	id := p.id
	if w.dir == cassette.C2S && m.Method == methodToolsCall {
		// the strict reading: names matched exactly, unique (Parse)
		nameRaw, _ := mcp.Member(m.Params, "name")
		p.tool, _ = mcp.StringValue(nameRaw)
		if a, ok := mcp.Member(m.Params, "arguments"); ok {
			p.args = a
		}
		if !d.headerDone() {
			if d.handshakePending() {
				d.callHeld = true
			} else if err := d.startLog(); err != nil {
				return err
			}
		}
		var args any
		if p.args != nil {
			args = p.args
		}
		nums := mcp.NumbersUnder(m.Numbers, "$.params.arguments")
		return d.do(func() error {
			callID, err := d.rec.ToolCall(ToolCallEvent{Tool: orUnnamed(p.tool), Arguments: args, RPCID: id, TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
			p.callID = callID
			return err
		})
	}
	var params any = json.RawMessage(`{}`)
	if m.Params != nil {
		params = m.Params
	}
	nums := mcp.NumbersUnder(m.Numbers, "$.params")
	return d.do(func() error {
		var one string
		var cands []string
		if len(during) == 1 {
			one = during[0].callID
		} else {
			for _, o := range during {
				if o.callID != "" {
					cands = append(cands, o.callID)
				}
			}
		}
		var err error
		if w.dir == cassette.S2C && m.Method == methodSampling {
			p.callID, err = d.rec.ModelInput(ModelInputEvent{Content: params, Method: m.Method, RPCID: id, Direction: eventlog.DirS2C,
				During: one, DuringCandidates: cands, TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
			return err
		}
		p.callID, err = d.rec.mcpRequest(mcpRequestEvent{Method: m.Method, RPCID: id, Direction: dirName(w.dir), Params: params,
			During: one, DuringCandidates: cands, TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
		return err
	})
}

// notification derives a notification event in either direction. One
// that names an open request (a progress token of a request sent the
// other way, the id of a request its sender cancels) concerns it; a
// cancelled request is no longer open for during.
func (d *Deriver) notification(w wireMsg) error {
	m := w.m
	var about *pendingReq
	switch m.Method {
	case mcp.NotificationProgress:
		if tok, ok := mcp.Member(m.Params, "progressToken"); ok {
			about = d.progress[otherDir(w.dir)][string(tok)]
		}
	case mcp.NotificationCancelled:
		if rid, ok := mcp.Member(m.Params, "requestId"); ok {
			if about = d.openOf(w.dir)[mcp.IDKey(rid)]; about != nil {
				about.cancelled = true
			}
		}
	}
	nums := mcp.NumbersUnder(m.Numbers, "$.params")
	return d.do(func() error {
		var concerns string
		if about != nil {
			concerns = about.callID
		}
		_, err := d.rec.notification(notificationEvent{Method: m.Method, Params: rawOrNil(m.Params), Direction: dirName(w.dir), Concerns: concerns,
			TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
		return err
	})
}

func orUnnamed(tool string) string {
	if tool == "" {
		return "(unnamed)"
	}
	return tool
}

func rawOrNil(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return b
}

// response pairs an answer with the open request of the other direction
// that has its exact id token, and derives its event: tool_response (and
// external_effect), model_output (sampling), user_input (elicitation) or
// mcp_response. An answer that pairs with no request, or with an
// ambiguous one, is a witness/unmatched-response notification.
func (d *Deriver) response(w wireMsg) error {
	m := w.m
	key := mcp.IDKey(m.ID)
	var p *pendingReq
	ok := false
	if m.ID != nil {
		p, ok = d.untrack(d.openOf(otherDir(w.dir)), key)
	}
	if ok && w.dir == cassette.S2C {
		switch p.method {
		case mcp.MethodInitialize:
			d.onInitialize(m)
		case mcp.MethodToolsList:
			d.onToolsList(m)
		}
	}
	var err error
	if !ok || p.ambiguous {
		err = d.unmatched(w)
	} else {
		err = d.answer(w, p)
	}
	if err != nil {
		return err
	}
	if ok && w.dir == cassette.S2C && (p.method == mcp.MethodInitialize || p.method == mcp.MethodToolsList) {
		return d.startIfHandshakeDone()
	}
	return nil
}

func (d *Deriver) unmatched(w wireMsg) error {
	m := w.m
	payload := map[string]json.RawMessage{}
	if m.ID != nil {
		payload["id"] = m.ID
	}
	if m.Result != nil {
		payload["result"] = m.Result
	} else {
		payload["error"] = m.Error
	}
	b, _ := json.Marshal(payload)
	nums := mcp.NumbersUnder(m.Numbers, "$")
	return d.do(func() error {
		_, err := d.rec.notification(notificationEvent{Method: methodUnmatchedResponse, Params: json.RawMessage(b), Direction: dirName(w.dir),
			TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
		return err
	})
}

// answer derives the event of an answer paired with its request p.
func (d *Deriver) answer(w wireMsg, p *pendingReq) error {
	m := w.m
	id := append(json.RawMessage(nil), m.ID...)
	result, rpcErr, nums := json.RawMessage(m.Result), false, mcp.NumbersUnder(m.Numbers, "$.result")
	if m.Error != nil {
		result, rpcErr, nums = json.RawMessage(m.Error), true, mcp.NumbersUnder(m.Numbers, "$.error")
	}
	if p.dir == cassette.C2S && p.method == methodToolsCall {
		return d.do(func() error { return d.toolResponse(w, p, id, result, rpcErr, nums) })
	}
	return d.do(func() error {
		var err error
		in := mcpResponseEvent{Method: p.method, Call: p.callID, RPCID: id, Direction: dirName(w.dir), Result: result, RPCError: rpcErr,
			TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted}
		switch {
		case p.dir == cassette.S2C && p.method == methodSampling:
			_, err = d.rec.ModelOutput(ModelOutputEvent{Content: result, Input: p.callID, Method: p.method, RPCID: id, Direction: in.Direction,
				RPCError: rpcErr, TS: w.ts, Wire: w.wire, Numbers: nums, WireRedacted: w.redacted})
		case p.dir == cassette.S2C && p.method == methodElicitation:
			_, err = d.rec.userInput(in)
		default:
			_, err = d.rec.mcpResponse(in)
		}
		return err
	})
}

func (d *Deriver) toolResponse(w wireMsg, p *pendingReq, id, result json.RawMessage, rpcErr bool, nums map[string]string) error {
	in := ToolResponseEvent{Tool: orUnnamed(p.tool), Call: p.callID, RPCID: id, TS: w.ts, Wire: w.wire, Result: result, RPCError: rpcErr, Numbers: nums, WireRedacted: w.redacted}
	if !rpcErr {
		v, _ := mcp.Member(result, "isError")
		f := string(v) == "true"
		in.IsError = &f
	}
	if _, err := d.rec.ToolResponse(in); err != nil {
		return err
	}
	if rpcErr || (in.IsError != nil && *in.IsError) {
		return nil
	}
	eff, ok := d.effectOf(p.tool, p.args)
	if !ok {
		return nil
	}
	var detail any
	if p.args != nil {
		detail = p.args
	}
	_, err := d.rec.ExternalEffect(ExternalEffectEvent{Tool: orUnnamed(p.tool), Call: p.callID, Effect: eff, Detail: detail, TS: w.ts, Wire: w.wire})
	return err
}

// effectOf applies the configured mapping, then the tool's annotations: a
// tool annotated destructiveHint=true has an effect (op "write" unless the
// mapping says otherwise), its target read from a path-like argument.
func (d *Deriver) effectOf(tool string, args json.RawMessage) (eventlog.Effect, bool) {
	if d.o.Effects != nil {
		if eff, ok := d.o.Effects(tool, args); ok {
			return eff, true
		}
	}
	raw, ok := d.annots[tool]
	if !ok {
		return eventlog.Effect{}, false
	}
	if v, _ := mcp.Member(raw, "destructiveHint"); string(v) != "true" {
		return eventlog.Effect{}, false
	}
	eff := eventlog.Effect{Op: "write", Reason: "tool annotation destructiveHint=true"}
	for _, k := range []string{"path", "file", "uri", "url", "target", "destination"} {
		v, _ := mcp.Member(args, k)
		if s, ok := mcp.StringValue(v); ok && s != "" {
			eff.Target = s
			break
		}
	}
	return eff, true
}

func (d *Deriver) onInitialize(m *mcp.Message) {
	if m.Result == nil {
		return
	}
	str := func(obj json.RawMessage, name string) string {
		v, _ := mcp.Member(obj, name)
		s, _ := mcp.StringValue(v)
		return s
	}
	info, _ := mcp.Member(m.Result, "serverInfo")
	d.server.Name, d.server.Version, d.server.ProtocolVersion = str(info, "name"), str(info, "version"), str(m.Result, "protocolVersion")
}

func (d *Deriver) onToolsList(m *mcp.Message) {
	list, _ := mcp.Member(m.Result, "tools")
	mcp.ForElements(list, func(t json.RawMessage) {
		if len(t) == 0 || t[0] != '{' {
			return
		}
		nameRaw, hasName := mcp.Member(t, "name")
		name, isStr := mcp.StringValue(nameRaw)
		if hasName && !isStr {
			return
		}
		if ann, ok := mcp.Member(t, "annotations"); ok {
			d.annots[name] = ann
		}
		if d.headerDone() {
			return // a later listing updates annotations, not the header
		}
		if i, ok := d.toolNames[name]; ok {
			d.tools[i] = t
			return
		}
		d.toolNames[name] = len(d.tools)
		d.tools = append(d.tools, t)
	})
}

func (d *Deriver) headerDone() bool { return d.w != nil }

// handshakePending reports whether an initialize or tools/list request is
// still unanswered. A host behind the proxy may send tools/call before those
// answers arrive (it pipelines); the call is then held, so that the header
// still gets the server's identity and tools once they arrive.
func (d *Deriver) handshakePending() bool {
	for _, p := range d.pending {
		if p.method == mcp.MethodInitialize || p.method == mcp.MethodToolsList {
			return true
		}
	}
	return false
}

// startIfHandshakeDone writes the header once a held tools/call no longer
// waits for an initialize or tools/list answer.
func (d *Deriver) startIfHandshakeDone() error {
	if !d.callHeld || d.headerDone() || d.handshakePending() {
		return nil
	}
	return d.startLog()
}

// do runs op now when the header is written, else holds it.
func (d *Deriver) do(op func() error) error {
	if d.headerDone() {
		return op()
	}
	d.held = append(d.held, op)
	if len(d.held) >= maxBufferedBeforeHeader {
		return d.startLog()
	}
	return nil
}

// Note records a notification the caller decided rather than read from a
// record (the HTTP proxy's witness/session-id-collision): written now, at
// the time of the last record, or held with the other events until the
// session header is known. It is in the log only, not in the cassette, so
// a log derived again from the cassette does not have it. Errors are
// sticky.
func (d *Deriver) Note(method string, params any) error {
	if d.err != nil {
		return d.err
	}
	ts := d.lastTS
	if ts == "" {
		ts = d.ch.Started
	}
	if err := d.do(func() error {
		_, err := d.rec.notification(notificationEvent{Method: method, Params: params, TS: ts})
		return err
	}); err != nil {
		d.err = err
	}
	return d.err
}

// ToolDefs returns the header's tool definitions from raw tools/list
// entries: name, sha256 of the canonical definition, annotations.
func ToolDefs(tools []json.RawMessage) ([]eventlog.ToolDef, string, error) {
	var defs []eventlog.ToolDef
	var all []json.RawMessage
	for _, t := range tools {
		c, err := canon.Transform(t)
		if err != nil {
			return nil, "", fmt.Errorf("tool definition: %w", err)
		}
		nameRaw, _ := mcp.Member(t, "name")
		name, _ := mcp.StringValue(nameRaw)
		sum := sha256.Sum256(c)
		td := eventlog.ToolDef{Name: name, SHA256: hex.EncodeToString(sum[:])}
		if ann, ok := mcp.Member(t, "annotations"); ok {
			if a, err := canon.Transform(ann); err == nil {
				td.Annotations = a
			}
		}
		defs = append(defs, td)
		all = append(all, c)
	}
	if all == nil {
		all = []json.RawMessage{}
	}
	list, err := canon.Marshal(all)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(list)
	return defs, hex.EncodeToString(sum[:]), nil
}

// Start writes the session header now, with what is known, and the
// events held for it (as past maxHeldBytes): a caller whose memory budget
// is spent calls it rather than let the deriver hold more. Nothing once
// the header is written (Writer is then non-nil).
func (d *Deriver) Start() error {
	if d.err != nil {
		return d.err
	}
	if err := d.startLog(); err != nil {
		d.err = err
	}
	return d.err
}

func (d *Deriver) startLog() error {
	if d.headerDone() {
		return nil
	}
	defs, sum, err := ToolDefs(d.tools)
	if err != nil {
		return err
	}
	srv := d.server
	srv.Tools, srv.ToolsSHA256 = defs, sum
	h := &eventlog.Header{Seal: d.o.Seal, Server: &srv, Pairing: eventlog.PairingJSONRPCID, Notes: append([]string(nil), d.o.Notes...)}
	if d.o.Redactor != nil {
		h.Redaction = d.o.Redactor.Info()
	} else if len(d.ch.Redaction) > 0 {
		// re-deriving a redacted cassette: its bytes are already redacted
		var r eventlog.Redaction
		if json.Unmarshal(d.ch.Redaction, &r) == nil {
			h.Redaction = &r
		}
	}
	h.Notes = append(h.Notes, fmt.Sprintf("derived from %s (%s mode); events are observed on the wire", d.o.Cassette, orDefault(d.ch.Mode, "client")))
	w, err := eventlog.StartLog(d.out, h, d.ch.Started, eventlog.SourceObserved)
	if err != nil {
		return err
	}
	d.w = w
	d.rec = NewRecorder(w, RecorderOptions{Source: eventlog.SourceObserved, Clock: func() string { return d.ch.Started }, Redactor: d.o.Redactor})
	d.rec.linked = true // the deriver passes every link itself
	held := d.held
	d.held = nil
	for _, op := range held {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// maxListedUnanswered bounds the requests a session_end reason names.
const maxListedUnanswered = 8

// unanswered counts the tool calls left open and describes the other
// requests left open in either direction ("" when none), in log order:
// "2 other request(s) without a response: c2s resources/read id 3, s2c
// sampling/createMessage id 0". Requests read from ambiguous lines are
// ambiguous events, not requests, and are not counted.
func (d *Deriver) unanswered() (calls int, others string) {
	var rest []*pendingReq
	for _, open := range []map[string]*pendingReq{d.pending, d.spending} {
		for _, p := range open {
			switch {
			case p.ambiguous:
			case p.dir == cassette.C2S && p.method == methodToolsCall:
				calls++
			default:
				rest = append(rest, p)
			}
		}
	}
	if len(rest) == 0 {
		return calls, ""
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].seq < rest[j].seq })
	var names []string
	for i, p := range rest {
		if i == maxListedUnanswered {
			names = append(names, fmt.Sprintf("%d more", len(rest)-i))
			break
		}
		names = append(names, fmt.Sprintf("%s %s id %s", dirName(p.dir), p.method, p.id))
	}
	return calls, fmt.Sprintf("%d other request(s) without a response: %s", len(rest), strings.Join(names, ", "))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Finish writes the header (if not yet), the held events and the signed
// session_end. The reason defaults to "completed", or names open calls and
// the server's exit. o.TS defaults to the time of the last record (the
// frozen time when frozen); o.Failure says why the recording could not be
// completed (the proxy's recording failed, a capture error), and Finish
// adds what the records themselves show: both end up in
// session_end.end.failure.
func (d *Deriver) Finish(o eventlog.EndOptions) error {
	if d.err != nil {
		return d.err
	}
	if err := d.startLog(); err != nil {
		d.err = err
		return err
	}
	// a failure is what the records show the log cannot tell: calls the
	// server may have run without the witness seeing the answer, lines too
	// long to read, errors the capture reported
	var failures []string
	if o.Failure != "" {
		failures = append(failures, o.Failure)
	}
	if d.firstErr != "" && !strings.Contains(o.Failure, d.firstErr) {
		failures = append(failures, "capture error: "+d.firstErr)
	}
	if n := len(d.overLimit); n > 0 {
		failures = append(failures, fmt.Sprintf("%d line(s) over the maximum line size, kept in the cassette but not read into events (first: %s)", n, d.overLimit[0]))
	}
	open, others := d.unanswered()
	if open > 0 {
		failures = append(failures, fmt.Sprintf("%d tool call(s) without a response", open))
	}
	if n := d.untracked[methodToolsCall]; n > 0 {
		failures = append(failures, fmt.Sprintf("%d tool call(s) over the limit of %d open requests were not tracked: their responses may be missing", n, d.maxOpen))
	}
	reason := o.Reason
	if reason == "" {
		reason = "completed"
		if open > 0 {
			reason = fmt.Sprintf("%d tool call(s) without a response", open)
		}
		if d.firstErr != "" {
			reason = "error: " + d.firstErr
		}
		if others != "" {
			reason += "; " + others
		}
		if n := d.untracked[methodToolsCall] + d.untracked["other"]; n > 0 {
			reason += fmt.Sprintf("; %d request(s) over the limit of %d open requests were not tracked", n, d.maxOpen)
		}
	}
	if len(d.signals) > 0 {
		reason += "; shutdown needed " + strings.Join(d.signals, ", ")
	}
	if d.exit != "" && !strings.Contains(reason, "server "+d.exit) {
		// a capture error's text already ends with the server's exit
		reason += "; server " + d.exit
	}
	ts := o.TS
	if ts == "" {
		ts = d.lastTS
	}
	if ts == "" {
		ts = d.ch.Started
	}
	if err := eventlog.FinishWith(d.w, eventlog.EndOptions{Signers: o.Signers, TS: ts, Reason: reason, Failure: strings.Join(failures, "; "), Source: o.Source}); err != nil {
		d.err = err
		return err
	}
	return nil
}

// EventsFromCassette re-derives the event log of a cassette (name is used
// in errors) into out, whichever its format: a message cassette
// (cassette.Format: capture, proxy, the MCP sessions of proxy --listen)
// is fed record by record to a Deriver, an HTTP cassette
// (cassette.HTTPFormat: proxy --listen) to o.Exchanges. The result equals
// the log the live session wrote when given the same options and end.
func EventsFromCassette(r io.Reader, name string, out io.Writer, o Options) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if isHTTPCassette(br) {
		return eventsFromHTTPCassette(br, name, out, o)
	}
	return eventsFromMessageCassette(br, name, out, o)
}

// isHTTPCassette says whether the header line at the start of br (not
// consumed) is an HTTP cassette's; a header that does not fit the buffer
// is read by its format member's bytes.
func isHTTPCassette(br *bufio.Reader) bool {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	var h struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(head, &h); err == nil {
		return h.Format == cassette.HTTPFormat
	}
	return bytes.Contains(head, []byte(`"format":"`+cassette.HTTPFormat+`"`))
}

// eventsFromMessageCassette is EventsFromCassette of a message cassette.
func eventsFromMessageCassette(r io.Reader, name string, out io.Writer, o Options) error {
	cr, err := cassette.NewReader(r, name)
	if err != nil {
		return err
	}
	d := NewDeriver(out, cr.Header(), o)
	for {
		rec, err := cr.Next()
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
	return d.Finish(o.End)
}
