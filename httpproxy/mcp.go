package httpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/httpcoding"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/modelapi"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// maxMCPMessage is the largest JSON body or server-sent event read into
// MCP messages (after decompression). A longer one passes through and stays
// whole in the HTTP cassette; the MCP session's log says it was not read.
const maxMCPMessage = 16 << 20

// MCPDir is the directory, inside the proxy's --out directory, that holds
// one sub-directory per MCP session seen over HTTP (mcp/1, mcp/2, ...):
// each has a cassette.jsonl of the session's JSON-RPC messages, in the
// stdio cassette format, and the events.jsonl derived from it by the stdio
// deriver (docs/design/mcp-http.md).
const MCPDir = "mcp"

// The transports an MCP session was seen on.
const (
	transportStreamable = "streamable-http" // spec 2025-03-26 and later: one endpoint, Mcp-Session-Id
	transportSSE        = "http+sse"        // spec 2024-11-05: a GET stream announces where to POST
	transportStateless  = "streamable-http (no session id)"
)

// The notification methods the proxy writes into its own event log about
// MCP traffic (the session logs hold the MCP events themselves).
const (
	methodMCPSession      = "witness/mcp-session"        // an MCP session began: its number, directory, transport, id
	methodEndpointRewrite = "witness/endpoint-rewritten" // the endpoint event was rewritten to point at the proxy
	methodMCPAfterEnd     = eventlog.MethodMCPAfterEnd   // an exchange carried the id of a session whose log was ended
	endpointHoldLimit     = 64 << 10
	maxSessionNotes       = 20
)

// mcpTracker finds the MCP sessions in the proxy's exchanges and writes
// one message cassette and event log per session.
type mcpTracker struct {
	p      *recorder
	up     *url.URL
	self   string // the proxy's base URL
	outDir string
	files  atomicfile.Options
	seal   *eventlog.SealRef
	// startNotes: the proxy's start-up warnings, in every session header
	startNotes []string
	signers    []eventlog.Signer
	redInfo    json.RawMessage
	started    string
	frozen     bool
	getenv     func(string) string

	// queueLimit, in tests, replaces MaxQueuedAnswers
	queueLimit int
	// budget is the proxy's memory budget, shared with the exchanges
	budget *budget
	// maxSessions caps the sessions read into MCPDir (Options.MaxMCPSessions;
	// 0, in tests of parts: no cap)
	maxSessions int

	mu         sync.Mutex
	byKey      map[string]*mcpSession
	byEndpoint map[string]*mcpSession // HTTP+SSE: the request URI POSTs go to
	sessions   []*mcpSession
	// capped counts the exchanges of new sessions past maxSessions; the
	// first of them is named in the proxy's log
	capped      int
	cappedFirst string
	// ended counts the sessions whose log was ended while the proxy ran
	// (DELETE): they hold no files any more, and do not count for the cap
	ended int
	// fellBack lists the sessions that wrote server messages in the
	// wire's order because the budget was spent (set by finish)
	fellBack []int

	// One session per client (docs/design/mcp-http.md): upOf maps a
	// session id the proxy gave a client in place of the upstream's (an
	// alias, after a collision) to the upstream's id; byUp lists the
	// sessions that use each upstream id; collisions counts the aliases.
	upOf       map[string]string
	byUp       map[string][]*mcpSession
	collisions int
}

// errSessionCap is the refusal of a session past Options.MaxMCPSessions:
// its exchanges are recorded in the HTTP cassette only.
var errSessionCap = errors.New("MCP session cap reached")

// errSessionEnded is the refusal of an exchange that carries the id of a
// session whose log is ended: it is in the HTTP cassette only.
var errSessionEnded = errors.New("MCP session ended")

// mcpSession is one MCP session: its message cassette and its deriver.
type mcpSession struct {
	n         int
	key       string
	id        string // Mcp-Session-Id, or the endpoint for HTTP+SSE
	upID      string // the Mcp-Session-Id the upstream knows it by (id, or what an alias stands for)
	transport string
	dir       string
	casF, evF *os.File
	cw        *cassette.Writer
	d         *derive.Deriver

	mu    sync.Mutex
	notes []string
	ended string

	// inflight counts the exchanges of the session being served or
	// finished, done says its log is ended (both under the tracker's mu):
	// a session the client ended (ended set) is ended once inflight is
	// back to 0, while the proxy runs (docs/design/http-session-end.md)
	inflight int
	done     bool

	// wmu orders the writes of the session's messages. open counts the
	// requests of the session whose body is being recorded: their
	// messages are written at the body's end, beside the upstream's work,
	// so an answer may be read first (from the session's GET stream, under
	// load or from a server that answers before the body ended); it waits
	// in queued (queuedBytes long) until no request is open, so that a
	// request precedes its answer in the session cassette.
	// The bytes queued are taken from the proxy's memory budget and
	// given back when the queue is written; a message the budget refuses
	// is not queued: the queue is written, then the message, in the
	// wire's order (budgetFull says so at the end).
	wmu         sync.Mutex
	open        int
	queued      [][]byte
	queuedBytes int
	overflowed  bool // past MaxQueuedAnswers
	budgetFull  bool // past the memory budget
	// preHeader counts the bytes of the messages the deriver holds
	// until its header is known (the handshake's end: up to 32 MiB a
	// session), taken from the memory budget; refused, the header is
	// written then (startedEarly)
	preHeader    int
	startedEarly bool
	// closed: the session's files are closed (under wmu)
	closed bool
}

func (s *mcpSession) note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.notes) < maxSessionNotes {
		s.notes = append(s.notes, msg)
	} else if len(s.notes) == maxSessionNotes {
		s.notes = append(s.notes, "more not listed")
	}
}

// session returns the session of key, opening it when new; existed says
// it was open already.
func (t *mcpTracker) session(key, id, transport string, x int64, extraNotes ...string) (s *mcpSession, existed bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byKey[key]; s != nil {
		if s.done {
			return s, true, errSessionEnded
		}
		s.inflight++
		return s, true, nil
	}
	s, err = t.newSession(key, id, transport, x, extraNotes...)
	if err == nil {
		s.inflight++
	}
	return s, false, err
}

// enter counts an exchange among the exchanges of s in flight, s being a
// session it was just given (a new one, from assign); false when the log
// of s is ended.
func (t *mcpTracker) enter(s *mcpSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.done {
		return false
	}
	s.inflight++
	return true
}

// leave ends the count of an exchange of s, and the session's log when
// the client ended the session and this was its last exchange in flight.
func (t *mcpTracker) leave(s *mcpSession) {
	t.mu.Lock()
	s.inflight--
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	last := s.inflight == 0 && ended != "" && !s.done
	if last {
		s.done = true
		t.ended++
	}
	t.mu.Unlock()
	if last {
		if err := t.end(s, eventlog.Timestamp(t.getenv), ""); err != nil {
			t.p.fail(err) // a log that cannot be ended is a recording failure
		}
	}
}

// afterEnd records, in the proxy's log, an exchange that carries the id
// of session s after its log was ended: the exchange is in the HTTP
// cassette only.
func (e *mcpExchange) afterEnd(s *mcpSession) {
	e.gone = true
	payload, _ := json.Marshal(map[string]any{"session": s.n, "dir": filepath.ToSlash(s.dir), "exchange": e.x, "method": e.method})
	e.t.p.appendNow([]eventlog.Event{{Kind: eventlog.KindNotification, Method: methodMCPAfterEnd, Payload: payload}})
}

// newSession opens the session of key; the caller holds t.mu and knows
// that key has none.
func (t *mcpTracker) newSession(key, id, transport string, x int64, extraNotes ...string) (*mcpSession, error) {
	if t.maxSessions > 0 && len(t.sessions)-t.ended >= t.maxSessions {
		// a session table that only grew would hold two open files and
		// a deriver per session a peer invents (a server that hands out
		// a new Mcp-Session-Id per answer): past the cap, the exchanges
		// are in the HTTP cassette only (docs/design/mcp-http.md)
		if t.capped++; t.capped == 1 {
			t.cappedFirst = fmt.Sprintf("exchange %d, session %q", x, id)
		}
		return nil, errSessionCap
	}
	n := len(t.sessions) + 1
	rel := filepath.Join(MCPDir, strconv.Itoa(n))
	dir := filepath.Join(t.outDir, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("MCP session %d: %w", n, err)
	}
	files := t.files
	casF, evF, err := derive.CreateRecordingFiles(dir, files)
	if err != nil {
		return nil, fmt.Errorf("MCP session %d: %w", n, err)
	}
	cw, err := cassette.NewWriter(casF, cassette.Header{Command: t.up.String(), Mode: "proxy", Protocol: "", Started: t.started, Frozen: t.frozen, Redaction: t.redInfo})
	if err != nil {
		casF.Close()
		evF.Close()
		return nil, fmt.Errorf("MCP session %d: start %s: %w", n, filepath.Join(rel, derive.CassetteFile), err)
	}
	what := "MCP session " + strconv.Itoa(n) + " over " + transport + " through the HTTP proxy of " + t.up.String()
	if id != "" {
		what += " (" + id + ")"
	}
	notes := append([]string{what + "; every HTTP exchange is in ../../" + derive.CassetteFile + ", the JSON-RPC messages of this session in " + derive.CassetteFile}, extraNotes...)
	notes = append(notes, t.startNotes...)
	d := derive.NewDeriver(evF, cw.Header(), derive.Options{Seal: t.seal, Notes: notes})
	cw.OnRecord(func(r *cassette.Record) { d.Feed(r) })
	s := &mcpSession{n: n, key: key, id: id, upID: id, transport: transport, dir: rel, casF: casF, evF: evF, cw: cw, d: d}
	if up, ok := t.upOf[id]; ok {
		s.upID = up
	}
	t.byKey[key] = s
	t.sessions = append(t.sessions, s)
	if strings.HasPrefix(key, "sid:") {
		t.addUp(s.upID, s)
	}
	payload, _ := json.Marshal(map[string]any{"session": n, "dir": filepath.ToSlash(rel), "transport": transport, "mcp_session_id": id, "exchange": x})
	t.p.appendNow([]eventlog.Event{{Kind: eventlog.KindNotification, Method: methodMCPSession, Payload: payload}})
	return s, nil
}

// addUp records that s uses the upstream session id up; the caller holds
// t.mu.
func (t *mcpTracker) addUp(up string, s *mcpSession) {
	if t.byUp == nil {
		t.byUp = map[string][]*mcpSession{}
	}
	for _, o := range t.byUp[up] {
		if o == s {
			return
		}
	}
	t.byUp[up] = append(t.byUp[up], s)
}

// collision is an upstream session id handed to a client while the
// session of another client uses it (docs/design/mcp-http.md, "One session
// per client").
type collision struct {
	up    string // the upstream's id
	alias string // the id the proxy gave the client instead ("": none, HTTP+SSE)
	x     int64  // the exchange whose answer handed it out
	// sessions are the logs that hold the clients concerned, the one of
	// the client just handed the id last (missing when capped)
	sessions []*mcpSession
	capped   bool // the new client's session is past MaxMCPSessions
}

// assign decides the session of an answer that hands its client the
// upstream session id up, s being the exchange's session (nil for a new
// client): s itself, or a new session, when no other session uses up;
// else the client is given an alias of up (c says which), requests that
// carry it are sent upstream with up, and its messages go to s or, for a
// new client, to a session of its own. Checked and opened under one lock,
// so that two initialize answers at once cannot both open the session.
func (t *mcpTracker) assign(s *mcpSession, up string, x int64) (*mcpSession, *collision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.upOf == nil {
		t.upOf = map[string]string{}
	}
	var others []*mcpSession
	for _, o := range t.byUp[up] {
		if o != s {
			others = append(others, o)
		}
	}
	if o := t.byKey["sid:"+up]; o != nil && o != s && !contains(others, o) {
		others = append(others, o) // up is an alias the proxy gave another client
	}
	_, aliased := t.upOf[up]
	if len(others) == 0 && !aliased {
		if s != nil || t.byKey["sid:"+up] != nil {
			return s, nil, nil // the upstream moved the client to a new id: its requests open it
		}
		ns, err := t.newSession("sid:"+up, up, transportStreamable, x)
		return ns, nil, err
	}
	alias := t.newAlias(up)
	t.upOf[alias] = up
	c := &collision{up: up, alias: alias, x: x, sessions: others}
	if s != nil {
		t.byKey["sid:"+alias] = s
		t.addUp(up, s)
		c.sessions = append(c.sessions, s)
		return s, c, nil
	}
	names := make([]string, len(others))
	for i, o := range others {
		names[i] = strconv.Itoa(o.n)
	}
	note := fmt.Sprintf("the upstream handed this client (exchange %d) the Mcp-Session-Id %q, which MCP session(s) %s use already: the proxy gave this client %q instead and sends %q upstream with its requests, so that its messages are in this log alone; the upstream serves these clients as one session (%s)",
		x, up, strings.Join(names, ", "), alias, up, eventlog.MethodSessionIDCollision)
	ns, err := t.newSession("sid:"+alias, alias, transportStreamable, x, note)
	if err != nil {
		c.capped = errors.Is(err, errSessionCap)
		return nil, c, err
	}
	c.sessions = append(c.sessions, ns)
	return ns, c, nil
}

func contains(ss []*mcpSession, s *mcpSession) bool {
	for _, o := range ss {
		if o == s {
			return true
		}
	}
	return false
}

// newAlias returns an id no session and no alias uses, made from up; the
// caller holds t.mu.
func (t *mcpTracker) newAlias(up string) string {
	for {
		t.collisions++
		a := up + "-witness-" + strconv.Itoa(t.collisions)
		_, aliased := t.upOf[a]
		if t.byKey["sid:"+a] == nil && len(t.byUp[a]) == 0 && !aliased {
			return a
		}
	}
}

// recordCollision writes the collision as an event into every log it
// concerns and into the proxy's log: the same payload everywhere.
func (t *mcpTracker) recordCollision(c *collision) {
	dirs := make([]string, 0, len(c.sessions))
	for _, s := range c.sessions {
		dirs = append(dirs, filepath.ToSlash(s.dir))
	}
	p := map[string]any{"upstream_session_id": c.up, "exchange": c.x, "sessions": dirs, "split": c.alias != ""}
	if c.alias != "" {
		p["client_session_id"] = c.alias
	}
	if c.capped {
		p["capped"] = true
	}
	payload, _ := json.Marshal(p)
	for _, s := range c.sessions {
		s.wmu.Lock()
		var err error
		if !s.closed { // an ended session's log is signed: the proxy's log has it
			err = s.d.Note(eventlog.MethodSessionIDCollision, json.RawMessage(payload))
		}
		s.wmu.Unlock()
		if err != nil {
			t.p.fail(fmt.Errorf("MCP session %d: write %s: %w", s.n, filepath.Join(s.dir, derive.EventsFile), err))
		}
	}
	t.p.appendNow([]eventlog.Event{{Kind: eventlog.KindNotification, Method: eventlog.MethodSessionIDCollision, Payload: payload}})
}

// maxQueuedAnswers bounds the bytes of the server messages of an MCP
// session that wait for the session's requests being recorded (a request
// precedes its answer in the session cassette); past it they are written
// at once, and the session's log says so.
const maxQueuedAnswers = maxMCPMessage

// feed writes one JSON-RPC message of the session to its cassette (and so
// to its deriver). A server message waits while a request of the session
// is being recorded (openRequest).
func (t *mcpTracker) feed(s *mcpSession, dir cassette.Dir, msg []byte) {
	msg = bytes.TrimRight(msg, " \t\r\n")
	if len(msg) == 0 {
		return
	}
	// the deriver may hold the record until the session header is known,
	// and msg may be a parser's buffer that is reused after this call
	msg = bytes.Clone(msg)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if dir == cassette.S2C && s.open > 0 {
		over := s.queuedBytes+len(msg) > t.maxQueued()
		if !over && t.budget.take(len(msg)) {
			s.queued = append(s.queued, msg)
			s.queuedBytes += len(msg)
			return
		}
		t.fallBack(s, over)
		t.flushQueued(s)
	}
	t.write(s, dir, msg)
}

func (t *mcpTracker) maxQueued() int {
	if t.queueLimit > 0 {
		return t.queueLimit
	}
	return maxQueuedAnswers
}

// write records msg; the caller holds s.wmu. Until its header is known
// the session's deriver holds what it was fed: those bytes are taken from
// the memory budget, and given back once the header is written.
func (t *mcpTracker) write(s *mcpSession, dir cassette.Dir, msg []byte) {
	if s.closed {
		// no exchange of an ended session is in flight: nothing is fed
		t.p.note(fmt.Sprintf("MCP session %d: a %s message came after its log was ended: it is in %s only", s.n, dir, derive.CassetteFile))
		return
	}
	if s.d.Writer() == nil {
		if t.budget.take(len(msg)) {
			s.preHeader += len(msg)
		} else {
			t.startEarly(s)
		}
	}
	if _, err := s.cw.Record(dir, msg, false); err != nil {
		t.p.fail(fmt.Errorf("MCP session %d: write %s: %w", s.n, filepath.Join(s.dir, derive.CassetteFile), err))
	}
	if s.preHeader > 0 && s.d.Writer() != nil {
		t.budget.give(s.preHeader)
		s.preHeader = 0
	}
}

// startEarly has the session's deriver write its header now, before the
// handshake ended, so that it holds nothing more; the session's log says
// so. The caller holds s.wmu.
func (t *mcpTracker) startEarly(s *mcpSession) {
	if err := s.d.Start(); err != nil {
		t.p.fail(fmt.Errorf("MCP session %d: write %s: %w", s.n, filepath.Join(s.dir, derive.EventsFile), err))
	}
	if !s.startedEarly {
		s.startedEarly = true
		s.note(fmt.Sprintf("the proxy's memory budget of %s was spent while the session's events waited for its handshake to end: the log's header was written with what was known then (tools listed later are not in it)", t.budget.size()))
	}
	t.budget.give(s.preHeader)
	s.preHeader = 0
}

// flushQueued writes the server messages that waited; the caller holds
// s.wmu.
func (t *mcpTracker) flushQueued(s *mcpSession) {
	for _, m := range s.queued {
		t.write(s, cassette.S2C, m)
	}
	t.budget.give(s.queuedBytes)
	s.queued, s.queuedBytes = nil, 0
}

// reclaim writes the queued server messages of every session at once,
// and has every deriver that holds messages for its header write it,
// giving their bytes back to the budget (a reader needs them): those
// sessions fell back to the wire's order, or have a header written before
// their handshake ended, and their logs say so. The caller holds no
// session's lock.
func (t *mcpTracker) reclaim() {
	t.mu.Lock()
	sessions := t.sessions[:len(t.sessions):len(t.sessions)]
	t.mu.Unlock()
	for _, s := range sessions {
		s.wmu.Lock()
		if s.closed {
			s.wmu.Unlock()
			continue
		}
		if len(s.queued) > 0 {
			t.fallBack(s, false)
			t.flushQueued(s)
		}
		if s.preHeader > 0 {
			t.startEarly(s)
		}
		s.wmu.Unlock()
	}
}

// fallBack notes, once per session, that its server messages are written
// as they come while a request's body is being recorded: over is true
// past the session's own bound, false when the memory budget was spent.
// The caller holds s.wmu.
func (t *mcpTracker) fallBack(s *mcpSession, over bool) {
	what := "over " + mcp.FormatSize(t.maxQueued()) + " of server messages arrived"
	if over {
		if s.overflowed {
			return
		}
		s.overflowed = true
	} else {
		if s.budgetFull {
			return
		}
		s.budgetFull = true
		what = "the proxy's memory budget of " + t.budget.size() + " was spent when server messages arrived"
	}
	s.note(fmt.Sprintf("%s while a request's body was still being recorded: from there on some may precede the request they answer in %s (the HTTP cassette has the wire's order)", what, derive.CassetteFile))
}

// openRequest says that a request of s is being recorded: the server
// messages of s wait until the returned function has been called, after
// the request's messages were written (or found to be none).
func (s *mcpSession) openRequest(t *mcpTracker) func() {
	s.wmu.Lock()
	s.open++
	s.wmu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.wmu.Lock()
			defer s.wmu.Unlock()
			if s.open--; s.open == 0 {
				t.flushQueued(s)
			}
		})
	}
}

// finish ends the event log of every session not ended yet, signed, at
// the end of the proxy session (the sessions the client ended with DELETE
// were ended when their last exchange did: leave).
func (t *mcpTracker) finish(ts, why string) error {
	t.mu.Lock()
	var open []*mcpSession
	for _, s := range t.sessions {
		if !s.done {
			s.done = true
			open = append(open, s)
		}
	}
	t.mu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, t.end(s, ts, why))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sessions {
		s.wmu.Lock()
		if s.budgetFull {
			t.fellBack = append(t.fellBack, s.n)
		}
		s.wmu.Unlock()
	}
	return errors.Join(errs...)
}

// end ends the event log of s, signed, with the reason the client gave
// (DELETE) or else why (the proxy's end), and closes its files. The caller
// set s.done, so it runs once per session.
func (t *mcpTracker) end(s *mcpSession, ts, why string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(s.queued) > 0 { // every request ended before: nothing should wait
		s.note(fmt.Sprintf("%d server message(s) still waited at the end for a request being recorded", len(s.queued)))
		t.flushQueued(s)
	}
	held := s.preHeader // Finish writes the header
	s.preHeader = 0
	s.mu.Lock()
	reason := "completed; " + why
	if s.ended != "" {
		reason = "completed; " + s.ended
	}
	failure := strings.Join(s.notes, "; ")
	s.mu.Unlock()
	if err := s.cw.Err(); err != nil {
		failure = strings.TrimPrefix(failure+"; recording failed: "+err.Error(), "; ")
	}
	err := s.d.Finish(eventlog.EndOptions{Signers: t.signers, TS: ts, Reason: reason, Failure: failure})
	if err == nil {
		err = errors.Join(atomicfile.SyncLive(s.casF), atomicfile.SyncLive(s.evF))
	}
	s.casF.Close()
	s.evF.Close()
	s.closed = true
	s.d, s.cw = nil, nil // what they hold is not needed any more
	t.budget.give(held)
	if err != nil {
		return fmt.Errorf("MCP session %d (%s): %w", s.n, s.dir, err)
	}
	return nil
}

// count is the number of MCP sessions seen.
func (t *mcpTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// anyRPC says whether any of msgs is a JSON-RPC message.
func anyRPC(msgs [][]byte) bool {
	for _, m := range msgs {
		if pm, err := mcp.Parse(m); pm != nil && (err == nil || pm.Kind != mcp.KindInvalid) {
			return true
		}
	}
	return false
}

// mediaType is the media type of a Content-Type value, lower case.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(ct)), ";")
	}
	return mt
}

// mcpExchange reads the MCP messages of one HTTP exchange as its bytes are
// recorded. Its methods are called from the exchange's goroutine, in the
// order of the recording (the request body before the response).
type mcpExchange struct {
	t      *mcpTracker
	x      int64
	method string
	uri    string
	reqSID string
	reqEnc string
	sess   *mcpSession
	// upSID is the Mcp-Session-Id to send upstream in place of reqSID (an
	// alias the proxy gave the client), clientSID the one to give the
	// client in place of the answer's ("" both: unchanged)
	upSID, clientSID string

	reqBody []byte
	reqOver bool
	reqOpen func()   // ends the session's wait for this request (openRequest)
	notJSON bool     // the request body is not JSON: not held
	c2s     [][]byte // messages waiting for their session (initialize)
	isMCP   bool

	status  int
	respSID string
	enc     string // Content-Encoding of the response
	heldCR  bool   // a CR that ended the last chunk of the stream, not yet fed
	sse     *modelapi.SSEParser
	json    bool
	body    []byte
	over    bool
	events  int
	skipped []string

	maybeSSE bool // a GET stream without a session: may be HTTP+SSE's
	hold     bool // forwarding waits for the endpoint event
	held     []byte
	endpoint bool // the first event was seen
	from, to string

	// What the exchange holds to read messages is taken from the proxy's
	// memory budget: reqMem the request body (and its messages until
	// they are written), respMem a JSON or compressed response body,
	// sseMem the event the SSE parser is reading. Past it the body or
	// event is not read (reqBudget, overBudget, dropped say why), as past
	// MaxMCPMessage. reqMem is the request side's (the transport's
	// goroutine, then the one recording the body's end), the others the
	// response side's; close gives all back once both sides are done.
	reqMem, respMem, sseMem lease
	reqBudget, overBudget   bool
	dropped                 bool // the SSE event being read was dropped for the budget
	capped                  bool // its session was refused (MaxMCPSessions)
	// gone: it carries the id of a session whose log was ended
	// (afterEnd); left: its count in the session's inflight was ended
	gone, left bool
}

// notRead is the note's reason for a body or event not read into
// messages: over MaxMCPMessage, or over the memory budget.
func (e *mcpExchange) notRead(budget bool) string {
	if budget {
		return "the proxy's memory budget of " + e.t.budget.size() + " was spent"
	}
	return "over " + mcp.FormatSize(maxMCPMessage)
}

// close gives back what the exchange took from the memory budget; called
// once both sides of the exchange are done with it.
func (e *mcpExchange) close() {
	if e.sess != nil && !e.left {
		e.left = true
		e.t.leave(e.sess)
	}
	e.reqMem.release()
	e.respMem.release()
	e.sseMem.release()
	e.reqBody, e.c2s, e.body = nil, nil, nil
}

// begin starts reading an exchange whose request head was recorded.
func (t *mcpTracker) begin(x int64, r *http.Request) *mcpExchange {
	e := &mcpExchange{t: t, x: x, method: r.Method, uri: r.RequestURI, reqSID: r.Header.Get(httplocal.HeaderMcpSessionID), reqEnc: r.Header.Get("Content-Encoding")}
	e.reqMem.b, e.respMem.b, e.sseMem.b = t.budget, t.budget, t.budget
	t.mu.Lock()
	var s *mcpSession
	if e.reqSID != "" {
		s = t.byKey["sid:"+e.reqSID]
		e.upSID = t.upOf[e.reqSID]
	} else {
		s = t.byEndpoint[e.uri]
	}
	ended := s != nil && s.done
	if s != nil && !ended {
		s.inflight++
		e.sess = s
	}
	t.mu.Unlock()
	if ended {
		e.afterEnd(s)
	}
	e.isMCP = s != nil || e.reqSID != ""
	return e
}

// openRequest makes the server messages of the exchange's session (when
// it is known already) wait for the request's messages: called before
// the request goes upstream, so before any answer can come.
func (e *mcpExchange) openRequest() {
	if e.sess != nil {
		e.reqOpen = e.sess.openRequest(e.t)
	}
}

// reqChunk takes a recorded chunk of the request body. A body that cannot
// be JSON (its first byte is not '{' or '[') is not held, unless the
// exchange belongs to a session already.
func (e *mcpExchange) reqChunk(data []byte) {
	if e.reqOver || e.notJSON {
		return
	}
	if !e.isMCP && len(bytes.TrimSpace(e.reqBody)) == 0 {
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' && t[0] != '[' && e.reqEnc == "" {
			e.notJSON, e.reqBody = true, nil
			return
		}
	}
	if len(e.reqBody)+len(data) > maxMCPMessage {
		e.reqOver, e.reqBody = true, nil
		e.reqMem.release()
		return
	}
	if !e.reqMem.grow(len(data)) {
		e.reqOver, e.reqBudget, e.reqBody = true, true, nil
		e.reqMem.release()
		return
	}
	e.reqBody = append(e.reqBody, data...)
}

// reqEnd reads the request's messages once its body is recorded.
func (e *mcpExchange) reqEnd() {
	if e.reqOpen != nil {
		defer e.reqOpen()
	}
	body := e.reqBody
	e.reqBody = nil
	if e.reqOver {
		if e.isMCP {
			e.noteLater(fmt.Sprintf("exchange %d: request body not read into events (%s), kept in the HTTP cassette", e.x, e.notRead(e.reqBudget)))
		}
		return
	}
	if e.reqEnc != "" {
		var note string
		body, note = decodeBody(body, e.reqEnc, &e.reqMem)
		if note != "" && e.isMCP {
			e.noteLater(fmt.Sprintf("exchange %d: request body: %s", e.x, note))
		}
		if body == nil {
			return
		}
	}
	msgs := httplocal.SplitMessages(body)
	if !e.isMCP && !anyRPC(msgs) {
		e.reqMem.release()
		return // not MCP (a model API request, a form, nothing)
	}
	e.isMCP = true
	if e.sess != nil {
		for _, m := range msgs {
			e.t.feed(e.sess, cassette.C2S, m)
		}
		e.reqMem.release() // feed copied them
		return
	}
	e.c2s = msgs // held (with reqMem) until the answer's head names the session
}

// pendingNotes are notes made before the session was known.
func (e *mcpExchange) noteLater(msg string) {
	if e.sess != nil {
		e.sess.note(msg)
		return
	}
	e.skipped = append(e.skipped, msg)
}

// respHead decides the exchange's session from the response head and
// prepares the reading of its body.
func (e *mcpExchange) respHead(status int, h http.Header) {
	e.status = status
	e.respSID = h.Get(httplocal.HeaderMcpSessionID)
	e.enc = h.Get("Content-Encoding")
	if strings.EqualFold(e.enc, "identity") {
		e.enc = ""
	}
	ct := mediaType(h.Get("Content-Type"))
	sse := ct == httplocal.ContentTypeEventStream
	if e.respSID != "" && (e.sess != nil || e.isMCP || sse) {
		e.claim()
	}
	if e.sess == nil && e.reqSID != "" {
		e.open("sid:"+e.reqSID, e.reqSID, transportStreamable) // a session begun before the proxy saw it
	}
	if e.sess == nil && e.isMCP {
		e.open("", "", transportStateless)
	}
	if e.sess == nil && e.method == http.MethodGet && sse && e.reqSID == "" {
		e.maybeSSE, e.hold = true, true // HTTP+SSE: the first event says where to POST
	}
	if e.sess != nil {
		for _, m := range e.c2s {
			e.t.feed(e.sess, cassette.C2S, m)
		}
		e.c2s = nil
		for _, n := range e.skipped {
			e.sess.note(n)
		}
		e.skipped = nil
	}
	if e.sess == nil && !e.maybeSSE {
		return
	}
	switch {
	case sse:
		if e.enc == "" {
			e.sse = e.newSSE()
		} else {
			e.json = false
		}
	case ct == "application/json" || strings.HasSuffix(ct, "+json"):
		e.json = true
	case status == http.StatusAccepted || status == http.StatusNoContent || e.method == http.MethodDelete || e.method == http.MethodHead || e.method == http.MethodOptions:
	case status >= 200 && status < 300 && e.method == http.MethodPost:
		e.sess.note(fmt.Sprintf("exchange %d: the answer to an MCP POST has content type %q, neither application/json nor text/event-stream: kept in the HTTP cassette, not read as MCP messages", e.x, h.Get("Content-Type")))
	}
	if sse && e.enc != "" {
		e.json = false
		e.body = []byte{} // compressed stream: decoded at its end
	}
}

// open sets the exchange's session, opening it when new; existed says
// it was open already.
func (e *mcpExchange) open(key, id, transport string, notes ...string) (existed bool) {
	if e.capped || e.gone {
		return false // counted once
	}
	s, existed, err := e.t.session(key, id, transport, e.x, notes...)
	if errors.Is(err, errSessionCap) {
		e.capped = true
		return false // the HTTP cassette has the exchange; the proxy's log counts it
	}
	if errors.Is(err, errSessionEnded) {
		e.afterEnd(s)
		return false
	}
	if err != nil {
		e.t.p.fail(err)
		return false
	}
	e.sess = s
	return existed
}

// claim decides the session of an answer that hands the client the
// Mcp-Session-Id respSID: one another client's session uses already
// gets the client an alias of it (assign), and the answer to a request
// that carried an alias gives the client the alias back.
func (e *mcpExchange) claim() {
	cur := e.reqSID
	if e.upSID != "" {
		cur = e.upSID
	}
	if e.respSID == cur {
		if e.upSID != "" {
			e.clientSID = e.reqSID
		}
		return
	}
	if e.capped {
		return
	}
	s, c, err := e.t.assign(e.sess, e.respSID, e.x)
	switch {
	case errors.Is(err, errSessionCap):
		e.capped = true // the HTTP cassette has the exchange; the proxy's log counts it
	case err != nil:
		e.t.p.fail(err)
	case s != nil && s != e.sess:
		if e.t.enter(s) { // a new session, of this client
			e.sess = s
		} else {
			e.afterEnd(s)
		}
	}
	if c != nil {
		e.clientSID = c.alias
		e.t.recordCollision(c)
	}
}

// respChunk takes a recorded chunk of the response body.
func (e *mcpExchange) respChunk(data []byte) {
	switch {
	case e.sse != nil:
		e.feedSSEHeld(e.sse, data)
	case e.json || e.body != nil:
		if e.over {
			return
		}
		if len(e.body)+len(data) > maxMCPMessage {
			e.over, e.body = true, nil
			e.respMem.release()
			return
		}
		if !e.respMem.grow(len(data)) {
			e.over, e.overBudget, e.body = true, true, nil
			e.respMem.release()
			return
		}
		e.body = append(e.body, data...)
	}
}

// newSSE returns the parser of the exchange's server-sent events.
func (e *mcpExchange) newSSE() *modelapi.SSEParser {
	return modelapi.NewSSEParser(maxMCPMessage, e.event, e.skip)
}

// feedSSE feeds data to p a chunk at a time, each only once the budget
// gave what p may buffer with it (sseMem is the event p holds): refused,
// the event is dropped (skip notes it), and what p held is given back.
func (e *mcpExchange) feedSSE(p *modelapi.SSEParser, data []byte) {
	held := func() int {
		if p.Over() {
			return 0 // an event over the limit is not buffered
		}
		return p.Pending()
	}
	drop := func() {
		e.dropped = true
		p.Drop()
		e.sseMem.release()
	}
	for len(data) > 0 {
		n := min(len(data), chunkSize)
		if !p.Over() && !e.sseMem.setTo(held()+n) {
			drop()
		}
		p.Feed(data[:n])
		data = data[n:]
		// gives back what a dispatched event held; an event begun in
		// this chunk after an event over the limit may still be refused
		if !e.sseMem.setTo(held()) {
			drop()
		}
	}
}

// feedSSEHeld feeds a live stream's chunk holding back a CR that ends it:
// the TypeScript SDK's parser (eventsource-parser) reads a CR as a line end
// only once the next byte shows it is not the CR of a CRLF, so a CR that
// ends the stream ends no line for the client, and it must end none for
// the witness (docs/design/wire-reading.md, "MCP Streamable HTTP").
func (e *mcpExchange) feedSSEHeld(p *modelapi.SSEParser, data []byte) {
	if len(data) == 0 {
		return
	}
	if e.heldCR {
		e.heldCR = false
		e.feedSSE(p, []byte{'\r'})
	}
	if data[len(data)-1] == '\r' {
		e.heldCR = true
		data = data[:len(data)-1]
	}
	e.feedSSE(p, data)
}

// event takes one server-sent event of the response.
func (e *mcpExchange) event(ev modelapi.SSEEvent) {
	e.events++
	if e.maybeSSE && e.events == 1 && ev.Type == "endpoint" {
		e.announce(string(ev.Data))
		return
	}
	if e.hold && e.events >= 1 {
		e.endpoint = true
	}
	if e.sess == nil {
		return
	}
	if ev.Type != "" && ev.Type != "message" {
		return // not a JSON-RPC message (the standard's default event type is message)
	}
	// one event is one message: the TypeScript SDK parses an event's data
	// as a single JSON-RPC message and refuses an array, so a batch on a
	// stream is recorded whole, where the deriver reads it as ambiguous
	e.t.feed(e.sess, cassette.S2C, ev.Data)
}

// announce handles HTTP+SSE's endpoint event: it opens the session, and
// rewrites the endpoint when it would lead the client past the proxy.
func (e *mcpExchange) announce(data string) {
	e.endpoint = true
	to, why := e.t.rewriteEndpoint(data)
	// what is written says the endpoint with its credential query values
	// hashed, as a request target (docs/design/redaction.md)
	safe := func(s string) string { r, _ := e.t.p.hash.uri(s); return r }
	var notes []string
	if to != data {
		e.from, e.to = data, to
		notes = append(notes, fmt.Sprintf("the endpoint event of exchange %d was rewritten from %q to %q (%s); the HTTP cassette holds it as the upstream sent it", e.x, safe(data), safe(to), why))
	} else if why != "" {
		notes = append(notes, fmt.Sprintf("the endpoint event of exchange %d, %q, %s", e.x, safe(data), why))
	}
	ref, err := url.Parse(to)
	post := to
	if base, berr := url.Parse(e.uri); err == nil && berr == nil {
		post = base.ResolveReference(ref).RequestURI()
	}
	if e.open("sse:"+post, safe(post), transportSSE, notes...) {
		// HTTP+SSE: the upstream gave this GET stream the endpoint of a
		// session another stream has; the POSTs of both clients go to one
		// URI, so they cannot be told apart: recorded, not split
		e.t.recordCollision(&collision{up: post, x: e.x, sessions: []*mcpSession{e.sess}})
	}
	if e.sess == nil {
		return
	}
	e.t.mu.Lock()
	e.t.byEndpoint[post] = e.sess
	e.t.mu.Unlock()
	if e.from != "" {
		payload, _ := json.Marshal(map[string]any{"exchange": e.x, "from": safe(e.from), "to": safe(e.to), "reason": why, "session": e.sess.n})
		e.t.p.appendNow([]eventlog.Event{{Kind: eventlog.KindNotification, Method: methodEndpointRewrite, Payload: payload}})
	}
}

// rewriteEndpoint returns the endpoint the client must be given: an
// absolute URL on the upstream's origin becomes one on the proxy's, and a
// path under the upstream's base path loses that base path (the proxy adds
// it back). Anything else passes unchanged; why says what was done, or
// why a URL was left alone.
func (t *mcpTracker) rewriteEndpoint(data string) (string, string) {
	u, err := url.Parse(strings.TrimSpace(data))
	if err != nil {
		return data, "not a URL: left unchanged"
	}
	base := strings.TrimSuffix(t.up.EscapedPath(), "/")
	strip := func(p string) (string, bool) {
		if base == "" {
			return p, true
		}
		if p == base || strings.HasPrefix(p, base+"/") {
			return strings.TrimPrefix(p, base), true
		}
		return p, false
	}
	if u.IsAbs() || u.Host != "" {
		if !strings.EqualFold(u.Host, t.up.Host) || (u.Scheme != "" && u.Scheme != t.up.Scheme) {
			return data, "points to another origin than the upstream's: POSTs there do not pass the proxy and are not witnessed"
		}
		p, ok := strip(u.EscapedPath())
		if !ok {
			return data, "is outside the upstream's base path: left unchanged"
		}
		out := t.self + p
		if u.RawQuery != "" {
			out += "?" + u.RawQuery
		}
		return out, "an absolute URL on the upstream's origin must point at the proxy"
	}
	if strings.HasPrefix(u.Path, "/") && base != "" {
		p, ok := strip(u.EscapedPath())
		if !ok {
			return data, "is outside the upstream's base path: left unchanged"
		}
		out := p
		if u.RawQuery != "" {
			out += "?" + u.RawQuery
		}
		return out, "the proxy adds the upstream's base path " + base + " itself"
	}
	return data, ""
}

// forward returns the bytes to send the client now: an HTTP+SSE stream is
// held until its endpoint event was read (at most endpointHoldLimit
// bytes), so that the event can be rewritten.
func (e *mcpExchange) forward(b []byte) []byte {
	if !e.hold {
		return b
	}
	e.held = append(e.held, b...)
	if !e.endpoint && len(e.held) < endpointHoldLimit {
		return nil
	}
	return e.release()
}

// release ends the hold: the held bytes, rewritten when needed.
func (e *mcpExchange) release() []byte {
	if !e.hold {
		return nil
	}
	e.hold = false
	out := e.held
	e.held = nil
	if e.from != "" {
		for _, sep := range []string{"data: ", "data:"} {
			if i := bytes.Index(out, []byte(sep+e.from)); i >= 0 {
				j := i + len(sep) + len(e.from)
				if j == len(out) || out[j] == '\n' || out[j] == '\r' {
					out = append(append(append([]byte(nil), out[:i+len(sep)]...), e.to...), out[j:]...)
					break
				}
			}
		}
	}
	return out
}

// skip notes an event over the limit.
func (e *mcpExchange) skip(n, size int) {
	e.events++
	if e.hold {
		e.endpoint = true
	}
	if e.dropped {
		e.dropped = false
		e.noteLater(fmt.Sprintf("exchange %d: server-sent event %d (%d bytes or more) not read into events (%s), kept in the HTTP cassette", e.x, n, size, e.notRead(true)))
		return
	}
	e.noteLater(fmt.Sprintf("exchange %d: server-sent event %d has %d bytes or more, over %s: kept in the HTTP cassette, not read into events", e.x, n, size, mcp.FormatSize(maxMCPMessage)))
}

// end reads what the body held once the response is over; detail says
// how it ended ("" when whole).
func (e *mcpExchange) end(detail string) {
	if e.sess == nil {
		return
	}
	if e.over {
		e.sess.note(fmt.Sprintf("exchange %d: response body not read into events (%s), kept in the HTTP cassette", e.x, e.notRead(e.overBudget)))
	} else if len(e.body) > 0 {
		body := e.body
		e.body = nil
		if e.enc != "" {
			var note string
			if body, note = decodeBody(body, e.enc, &e.respMem); note != "" {
				e.sess.note(fmt.Sprintf("exchange %d: response body: %s", e.x, note))
			}
		}
		if body != nil {
			if e.json {
				msgs := httplocal.SplitMessages(body)
				for _, m := range msgs {
					e.t.feed(e.sess, cassette.S2C, m)
				}
			} else {
				// a compressed stream read whole: its last event is
				// dispatched only by its own blank line, as for the client
				p := e.newSSE()
				e.feedSSE(p, body)
				if n := p.Pending(); n > 0 {
					e.sess.note(fmt.Sprintf("exchange %d: the stream ended inside a server-sent event (%d bytes not dispatched)", e.x, n))
				}
			}
		}
	}
	if e.sse != nil {
		if n := e.sse.Pending(); n > 0 {
			e.sess.note(fmt.Sprintf("exchange %d: the stream ended inside a server-sent event (%d bytes not dispatched)", e.x, n))
		}
	}
	if detail != "" && (e.sse != nil || e.json) && detail != detailClosedByClient { // a GET stream the client closed ends the normal way
		e.sess.note(fmt.Sprintf("exchange %d: response %s", e.x, detail))
	}
	if e.method == http.MethodDelete && e.status >= 200 && e.status < 300 && e.reqSID != "" {
		e.sess.mu.Lock()
		e.sess.ended = fmt.Sprintf("the client ended the MCP session with DELETE (exchange %d)", e.x)
		e.sess.mu.Unlock()
	}
}

// decodeBody undoes a body's Content-Encoding as the client's fetch does
// (internal/httpcoding), up to MaxMCPMessage decoded bytes (past it, a
// compression bomb as far as the reader goes) taken from the memory lease
// l. note says what the reading leaves in doubt ("" when nothing): a note
// of the session, which its end records as a failure, so the session is
// never verified. out is nil when nothing can be read.
func decodeBody(body []byte, enc string, l *lease) (out []byte, note string) {
	r, err := httpcoding.Decode(body, enc, maxMCPMessage)
	if err != nil {
		return nil, fmt.Sprintf("%v: kept in the HTTP cassette, not read into events", err)
	}
	if !l.grow(len(r.Body)) {
		return nil, fmt.Sprintf("the proxy's memory budget of %s was spent decompressing it: kept in the HTTP cassette, not read into events", l.b.size())
	}
	if r.Doubt != "" {
		return r.Body, fmt.Sprintf("Content-Encoding %q: %s", enc, r.Doubt)
	}
	return r.Body, ""
}
