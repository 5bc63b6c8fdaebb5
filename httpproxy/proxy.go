package httpproxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure a recording HTTP proxy session (`witness proxy
// --listen`).
type Options struct {
	// Listen is the address to listen on (host:port); a host-less ":PORT"
	// listens on loopback. Default httplocal.DefaultListen.
	Listen string
	// Listener, when set, is used instead of Listen.
	Listener net.Listener
	// Upstream is the base URL requests go to: the request's path is
	// joined to its path.
	Upstream string
	OutDir   string
	// Files are the evidence rules of the cassette and the event log
	// (--force, the command's inputs; see derive.CreateRecordingFiles).
	Files    atomicfile.Options
	SealPath string
	Signers  []eventlog.Signer
	// Redactor holds the body redaction rules (nil: none); its key also
	// hashes the credential headers.
	Redactor *derive.Redactor
	// Notes are start-up warnings (an unsigned end, a frozen time) written
	// into the session header of the proxy's log and of each MCP session's
	// log, after the proxy's own note.
	Notes []string
	// HeaderKey is the key of the credential header hashes when Redactor
	// is nil (--redact-key, $WITNESS_REDACT_KEY); nil: a random key for
	// this session only.
	HeaderKey []byte
	// RedactHeaders names more headers to hash (--redact-header).
	RedactHeaders []string
	// RedactQuery names more query parameters whose values are hashed
	// wherever a request target is written (--redact-query), besides
	// cassette.CredentialParams.
	RedactQuery []string
	// Deriver makes the events of each exchange; nil: derive.NopDeriver.
	Deriver derive.ExchangeDeriver
	Getenv  func(string) string // for ATW_WITNESS_TS
	Stderr  io.Writer           // "listening on", notes
	// Signals end the session (SIGINT, SIGTERM): exchanges in flight get
	// ShutdownGrace (default httplocal.DefaultShutdownGrace) to finish.
	Signals       <-chan os.Signal
	ShutdownGrace time.Duration
	// Transport reaches the upstream; nil: a transport that neither
	// follows redirects nor asks for compression (the client's
	// Accept-Encoding goes through as sent).
	Transport http.RoundTripper
	// Ready, when set, is called with the proxy's URL once it accepts
	// connections.
	Ready func(url string)
	// AllowOrigins are the browser origins ("https://app.example") let in
	// besides loopback ones; a request with another Origin is refused 403
	// (httplocal.CheckOrigin). "*" lets every origin in.
	AllowOrigins []string
	// MemoryBudget bounds the bytes all exchanges and MCP sessions hold
	// at once beyond their fixed buffers (0: DefaultMemoryBudget): the
	// server messages MCP sessions queue, the bodies and events held to
	// be read into MCP messages or derived into events, the lines held
	// for redaction. A holder the budget refuses stops holding, as past
	// its own size bound, and the evidence says so; it never waits, and
	// nothing forwarded is missing from the HTTP cassette
	// (docs/design/http-proxy.md).
	MemoryBudget int64
	// MaxMCPSessions caps the MCP sessions read into MCPDir (0:
	// DefaultMaxMCPSessions); the exchanges of later sessions are in the
	// HTTP cassette only, and the proxy's log says how many.
	MaxMCPSessions int
	// MaxConns caps the client connections open at once (0:
	// httpbound.DefaultMaxConns); past it, new ones wait to be accepted.
	// The other bounds of the listening side are httpbound's defaults:
	// a request's head within 10 s and 64 KiB, an idle connection closed
	// after 2 minutes, and no read or write timeout, which would cut
	// long streams (docs/design/http-proxy.md).
	MaxConns int

	// wrapCassette, in tests, wraps the cassette file (a writer that
	// fails, to check that the proxy fails closed)
	wrapCassette func(io.Writer) io.Writer
	// queueLimit, in tests, replaces MaxQueuedAnswers
	queueLimit int
	// budgetEnd, in tests, gets the memory budget's bytes still held at
	// the end, the most held at once, and its refusals
	budgetEnd func(used, peak, refused int64)
	// lateRequestEnd, in tests, runs before the end of a request body is
	// recorded beside the upstream's work (a goroutine that runs late)
	lateRequestEnd func()
}

// Result is the outcome of a proxy session.
type Result struct {
	URL       string
	Exchanges int64
	// MCPSessions is the number of MCP sessions seen; each has its
	// directory under MCPDir.
	MCPSessions int
	Cassette    string
	Events      string
	Failure     string // why the recording is incomplete, when it is
}

// parseUpstream checks an upstream base URL: http or https, a host, no
// query, no fragment, no user information.
func parseUpstream(s string) (*url.URL, error) {
	hint := "give the base URL of the API, such as --upstream https://api.openai.com"
	u, err := url.Parse(s)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--upstream %q: %w", s, err), hint)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--upstream %q: the scheme must be http or https", s), hint)
	case u.Host == "":
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--upstream %q: no host", s), hint)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("--upstream %q: a base URL carries no query, fragment or user", s), hint)
	}
	return u, nil
}

// newTransport returns the transport the proxy uses by default: no
// redirects followed (a RoundTripper never follows them), no compression
// asked for, and the upstream reached through HTTPS_PROXY / HTTP_PROXY
// unless NO_PROXY names it (Go's rules: loopback upstreams never go
// through a proxy), as the SDKs' own clients do behind a company proxy.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// the upstream's head is bounded as a client's is (net/http's
		// default is 10 MB); no header timeout: a model may think for
		// minutes before it answers, and the client's own timeout ends that
		MaxResponseHeaderBytes: httpbound.DefaultMaxHeaderBytes,
	}
}

// Run records an HTTP proxy session into o.OutDir until a signal (or ctx)
// ends it, then ends the event log with the signed session_end. The error
// is non-nil when the session could not start, or when the recording
// failed (exit code Failure; the Result is then still returned).
func Run(ctx context.Context, o Options) (*Result, error) {
	up, err := parseUpstream(o.Upstream)
	if err != nil {
		return nil, err
	}
	var sealRef *eventlog.SealRef
	if o.SealPath != "" {
		if sealRef, err = derive.LoadSealRef(o.SealPath); err != nil {
			return nil, err
		}
	}
	key, keyID := o.Redactor, ""
	if key == nil {
		k := o.HeaderKey
		session := k == nil
		if session {
			k = make([]byte, 32)
			if _, err := rand.Read(k); err != nil {
				return nil, exitcode.New(exitcode.Failure, fmt.Errorf("make a session key for header hashes: %w", err), "")
			}
		}
		if key, err = derive.NewRedactor(nil, k); err != nil {
			return nil, exitcode.New(exitcode.Usage, err, "")
		}
		if keyID = key.Info().KeyID; session {
			keyID = "session:" + keyID
		}
	} else {
		keyID = key.Info().KeyID
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = httplocal.Listen(o.Listen); err != nil {
			return nil, err
		}
	}
	defer ln.Close()
	files := o.Files
	if files.Flag == "" {
		files.Flag = "--out"
	}
	casFile, evFile, err := derive.CreateRecordingFiles(o.OutDir, files)
	if err != nil {
		return nil, err
	}
	defer casFile.Close()
	defer evFile.Close()
	casPath, evPath := filepath.Join(o.OutDir, derive.CassetteFile), filepath.Join(o.OutDir, derive.EventsFile)

	frozen := o.Getenv != nil && o.Getenv(eventlog.EnvTS) != ""
	started := eventlog.Timestamp(o.Getenv)
	h := newHasher(key, keyID, o.RedactHeaders, o.RedactQuery)
	ch := cassette.HTTPFileHeader{Mode: "proxy", Upstream: up.String(), Started: started, Frozen: frozen, HeaderKey: keyID, RedactedHeaders: h.list(), RedactedQuery: h.plist}
	if o.Redactor != nil {
		if ch.Redaction, err = json.Marshal(o.Redactor.Info()); err != nil {
			return nil, exitcode.New(exitcode.Failure, err, "")
		}
	}
	var casW io.Writer = casFile
	if o.wrapCassette != nil {
		casW = o.wrapCassette(casFile)
	}
	cw, err := cassette.NewHTTPWriter(casW, ch)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("start cassette %s: %w", casPath, err), "check the space and permissions of the --out directory")
	}
	eh := &eventlog.Header{Seal: sealRef, Redaction: o.Redactor.Info(), Notes: append([]string{
		"HTTP proxy of " + up.String() + ": the exchanges are in " + derive.CassetteFile + " (" + cassette.HTTPFormat + ")",
	}, o.Notes...)}
	ev, err := eventlog.StartLog(evFile, eh, started, eventlog.SourceObserved)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("start event log %s: %w", evPath, err), "check the space and permissions of the --out directory")
	}
	rt := o.Transport
	if rt == nil {
		t := newTransport()
		defer t.CloseIdleConnections()
		rt = t
	}
	deriver := o.Deriver
	if deriver == nil {
		deriver = derive.NopDeriver{}
	}
	_, nop := deriver.(derive.NopDeriver)
	abortCtx, abort := context.WithCancel(context.Background())
	defer abort()
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	mem := newBudget(o.MemoryBudget)
	maxSessions := o.MaxMCPSessions
	if maxSessions <= 0 {
		maxSessions = DefaultMaxMCPSessions
	}
	p := &recorder{
		budget: mem,
		up:     up, rt: rt, cas: cw, hash: h, red: o.Redactor, deriver: deriver, hold: !nop,
		ev: ev, ch: cw.Header(), start: derive.StartTime(started), getenv: o.Getenv, abortCtx: abortCtx, failed: make(chan struct{}), allowOrigins: o.AllowOrigins, lateRequestEnd: o.lateRequestEnd,
	}
	srv, ln := httpbound.Server(p, ln, httpbound.ServerOptions{MaxConns: o.MaxConns, ErrorLog: log.New(stderr, "witness: proxy: ", 0)})
	base := "http://" + ln.Addr().String()
	p.mcp = &mcpTracker{p: p, up: up, self: base, outDir: o.OutDir, files: files, seal: sealRef, signers: o.Signers, startNotes: o.Notes,
		redInfo: ch.Redaction, started: started, frozen: frozen, getenv: o.Getenv,
		byKey: map[string]*mcpSession{}, byEndpoint: map[string]*mcpSession{}, queueLimit: o.queueLimit, budget: mem, maxSessions: maxSessions}
	mem.reclaim = p.mcp.reclaim
	fmt.Fprintf(stderr, "listening on %s\n", base)
	if o.Ready != nil {
		o.Ready(base)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	why := "stopped"
	select {
	case sig := <-o.Signals:
		why = "stopped by signal " + sig.String()
	case <-ctx.Done():
		why = "stopped: " + ctx.Err().Error()
	case <-p.failed:
		why = "stopped: the recording failed"
	case err := <-served:
		p.fail(fmt.Errorf("serve: %w", err))
		why = "stopped: the server failed"
	}
	grace := o.ShutdownGrace
	if grace <= 0 {
		grace = httplocal.DefaultShutdownGrace
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	if err := srv.Shutdown(sctx); err != nil {
		abort() // ends the upstream requests still running: their exchanges are recorded as cut off
		srv.Close()
	}
	cancel()
	p.wg.Wait()

	res := &Result{URL: base, Exchanges: cw.Exchanges(), Cassette: casPath, Events: evPath, MCPSessions: p.mcp.count()}
	merr := p.mcp.finish(eventlog.Timestamp(o.Getenv), why)
	if merr != nil {
		p.note("end the MCP session logs: " + merr.Error())
	}
	if c := p.mcp.capped; c > 0 {
		p.note(fmt.Sprintf("the cap of %d MCP sessions was reached: %d later exchange(s) of new sessions (the first: %s) are in %s only, not read into %s/", maxSessions, c, p.mcp.cappedFirst, derive.CassetteFile, MCPDir))
	}
	res.Failure = p.failure()
	reason := fmt.Sprintf("completed; %d exchange(s); %s", res.Exchanges, why)
	if res.MCPSessions > 0 {
		reason += fmt.Sprintf("; %d MCP session(s) in %s/", res.MCPSessions, MCPDir)
	}
	if s := p.budgetSummary(); s != "" {
		reason += "; " + s
	}
	if o.budgetEnd != nil {
		o.budgetEnd(p.budget.stats())
	}
	ferr := eventlog.FinishWith(ev, eventlog.EndOptions{Signers: o.Signers, TS: eventlog.Timestamp(o.Getenv), Reason: reason, Failure: res.Failure})
	if ferr == nil {
		ferr = errors.Join(merr, atomicfile.SyncLive(casFile), atomicfile.SyncLive(evFile))
	}
	if ferr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("end the recording: %w", ferr), "check the space and permissions of the --out directory")
	}
	if p.recordErr() != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("recording failed; nothing unrecorded was forwarded, and the proxy stopped: %w", p.recordErr()), "check the space and permissions of the --out directory")
	}
	return res, nil
}

// recorder is the proxy's handler: it records and forwards each exchange.
type recorder struct {
	up      *url.URL
	rt      http.RoundTripper
	cas     *cassette.HTTPWriter
	hash    *hasher
	red     *derive.Redactor
	deriver derive.ExchangeDeriver
	hold    bool // keep bodies for the deriver
	getenv  func(string) string
	mcp     *mcpTracker
	// budget is the memory budget of the session (Options.MemoryBudget)
	budget *budget
	// allowOrigins: browser origins let in besides loopback ones
	allowOrigins []string

	// orderMu holds the records that end a request or an exchange and
	// the events derived at them together, so that the log's order is
	// the cassette's order of those records (EventsFromCassette).
	orderMu sync.Mutex
	ev      *eventlog.Writer
	ch      cassette.HTTPFileHeader
	start   time.Time // ch.Started

	abortCtx       context.Context
	lateRequestEnd func()         // Options.lateRequestEnd
	wg             sync.WaitGroup // exchanges being served or finished
	// finishing is read-held by each exchange whose end is being recorded
	// after its answer ended; an exchange takes it to begin
	finishing sync.RWMutex

	mu       sync.Mutex
	failures derive.Failures
	recErr   error
	failed   chan struct{} // closed at the first recording failure
}

// fail records a recording failure: the session stops.
func (p *recorder) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recErr != nil {
		return
	}
	p.recErr = err
	p.failures.List = append(p.failures.List, "recording failed: "+err.Error())
	close(p.failed)
}

// note records why the evidence is incomplete without stopping the
// session (an exchange cut off, a deriver error).
func (p *recorder) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures.Add(s)
}

func (p *recorder) failure() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.failures.List, "; ")
}

func (p *recorder) recordErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recErr
}

// target is the upstream URL of a request: the upstream's path joined with
// the request's path (as escaped on the wire) and the request's query.
func (p *recorder) target(r *http.Request) string {
	s := p.up.Scheme + "://" + p.up.Host + strings.TrimSuffix(p.up.EscapedPath(), "/") + r.URL.EscapedPath()
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		s += "?" + r.URL.RawQuery
	}
	return s
}

// settle ends a request (rec request_end), an exchange (response_end)
// or records its failure (error, with the status sent): it derives the
// events first, then, under orderMu, writes the record and appends the
// events with the record's time, and returns their ids. quiet leaves out
// the note of a response that did not complete (an MCP GET stream the
// client closed).
func (p *recorder) settle(ex *cassette.HTTPExchange, rec, detail string, status int, reqIDs []string, quiet bool) []string {
	var evs []eventlog.Event
	var derr error
	what := "response"
	if rec == cassette.RecRequestEnd {
		what = "request"
		evs, derr = p.deriver.DeriveRequest(ex)
	} else {
		evs, derr = p.deriver.DeriveResponse(ex, reqIDs)
	}
	p.orderMu.Lock()
	defer p.orderMu.Unlock()
	var r cassette.HTTPRecord
	var err error
	switch rec {
	case cassette.RecRequestEnd:
		r, err = p.cas.EndRecord(ex.X, false, detail)
	case cassette.RecResponseEnd:
		r, err = p.cas.EndRecord(ex.X, true, detail)
	default:
		r, err = p.cas.FailRecord(ex.X, detail, status)
	}
	if err != nil {
		p.fail(err)
		return nil
	}
	if rec != cassette.RecRequestEnd && !quiet {
		if s := derive.ResponseNote(ex.X, &r); s != "" {
			p.note(s)
		}
	}
	if derr != nil {
		p.note(fmt.Sprintf("derive the events of exchange %d's %s: %v", ex.X, what, derr))
		return nil
	}
	return p.append(evs, r.T)
}

// appendNow writes events that no cassette record ends (the MCP session
// and endpoint notes of the proxy's own log) at the current time, under
// orderMu. EventsFromCassette does not re-derive them
// (docs/design/mcp-http.md).
func (p *recorder) appendNow(evs []eventlog.Event) []string {
	p.orderMu.Lock()
	defer p.orderMu.Unlock()
	var t int64
	if !p.start.IsZero() {
		t = int64(time.Since(p.start))
	}
	return p.append(evs, t)
}

// append writes the events of a deriver to the log, with the time of the
// cassette record t when they have none, and returns their ids. The
// caller holds orderMu.
func (p *recorder) append(evs []eventlog.Event, t int64) []string {
	if len(evs) == 0 {
		return nil
	}
	ids := make([]string, 0, len(evs))
	for i := range evs {
		e := &evs[i]
		if e.TS == "" {
			e.TS = derive.EventTime(p.ch, p.start, t)
		}
		if e.Source == "" {
			e.Source = eventlog.SourceObserved
		}
		if err := p.ev.Append(e); err != nil {
			p.fail(err)
			return ids
		}
		ids = append(ids, e.ID)
	}
	return ids
}

// waitFinishing returns once no earlier exchange is still recording its
// end: finishing is held while an end is written.
func (p *recorder) waitFinishing() {
	p.finishing.Lock()
	defer p.finishing.Unlock()
}

// upstreamRequest is the request the proxy sends on: the client's method,
// target, length and end-to-end headers, the upstream's session id where
// the proxy gave the client an alias (mcp-http.md, "One session per
// client"), and no User-Agent of Go's own.
func (p *recorder) upstreamRequest(ctx context.Context, r *http.Request, body io.ReadCloser, upSID string) (*http.Request, error) {
	out, err := http.NewRequestWithContext(ctx, r.Method, p.target(r), body)
	if err != nil {
		return nil, err
	}
	out.ContentLength = r.ContentLength
	out.Header = httplocal.EndToEnd(r.Header)
	if upSID != "" {
		out.Header.Set(httplocal.HeaderMcpSessionID, upSID)
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // only what the client sent
	}
	return out, nil
}

// roundTripFailure is the status and detail of an exchange whose upstream
// round trip failed: 502, or no answer when the client went away (a GET
// stream it closed before the upstream sent its head is a normal end:
// nothing was answered, so nothing is missing).
func roundTripFailure(r *http.Request, err error) (int, string) {
	if r.Context().Err() == nil {
		return http.StatusBadGateway, "upstream: " + err.Error()
	}
	if getStream(r) {
		return 0, detailClosedBeforeAnswer
	}
	return 0, "upstream: " + err.Error()
}

// ServeHTTP records and forwards one exchange. Order: the request head is
// written to the cassette, then each request chunk as the upstream
// transport reads it (before it goes upstream), then the response head
// before any header goes to the client, then each response chunk before
// it is written to the client and flushed.
func (p *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	p.waitFinishing() // the ends of earlier exchanges are recorded first
	select {
	case <-p.failed:
		httplocal.WriteError(w, http.StatusServiceUnavailable, r.URL.Path, "recording_failed", "witness proxy: the recording failed; the proxy is stopping and forwards nothing more")
		return
	default:
	}
	if !httplocal.CheckOrigin(r, p.allowOrigins) {
		p.refuseOrigin(w, r)
		return
	}
	head := p.hash.head(r)
	x, err := p.cas.Request(head)
	if err != nil {
		p.fail(err)
		httplocal.WriteError(w, http.StatusBadGateway, r.URL.Path, "recording_failed", "witness proxy: the request could not be recorded, so it was not forwarded")
		return
	}
	ex := &cassette.HTTPExchange{X: x, Request: cassette.HTTPMessage{Method: head.Method, Path: head.Path, Host: head.Host, Proto: head.Proto, Header: head.Header, PathRedacted: head.Redacted}}
	mx := p.mcp.begin(x, r)
	limit := int64(0) // bodies are held only for a deriver
	if p.hold {
		limit = derive.MaxDeriveBody
	}
	// what the exchange holds is taken from the memory budget, and given
	// back once both sides are done: at the end of finish, or when the
	// handler returns without one
	mem := &exchangeMem{reqKeep: lease{b: p.budget}, respKeep: lease{b: p.budget}, reqLine: lease{b: p.budget}, respLine: lease{b: p.budget}, mx: mx}
	handedOff := false
	defer func() {
		if !handedOff {
			mem.release()
		}
	}()

	// the request body, recorded as the transport reads it
	// reqEnding is closed once the request's end is decided, reqDone
	// once it is recorded. At the body's end of file the recording runs
	// beside the upstream's work rather than before the transport sends
	// the request on (the bytes are recorded already, chunk by chunk).
	reqEnding, reqDone := make(chan struct{}), make(chan struct{})
	var reqIDs []string
	var once sync.Once
	endReq := func(detail string, beside bool) {
		once.Do(func() {
			ex.Request.Ended, ex.Request.EndDetail = true, detail
			close(reqEnding)
			settle := func() {
				mx.reqEnd()
				reqIDs = p.settle(ex, cassette.RecRequestEnd, detail, 0, nil, false)
				close(reqDone)
			}
			if beside {
				go func() {
					if p.lateRequestEnd != nil {
						p.lateRequestEnd()
					}
					settle()
				}()
			} else {
				settle()
			}
		})
	}
	var body io.ReadCloser = http.NoBody
	if r.ContentLength == 0 {
		endReq("", false)
	} else {
		// the session's answers wait for this request's messages, which
		// are written at the body's end (beside the upstream's work)
		mx.openRequest()
		t := &tap{src: r.Body, lines: p.red != nil, max: maxRedactLine, mem: &mem.reqLine, cut: p.lineCut(x, "request"), record: func(raw []byte) error {
			data, red := redactBody(p.red, raw)
			if err := p.cas.Body(x, false, data, red, int64(len(raw))); err != nil {
				p.fail(err)
				return err
			}
			keep(&ex.Request, &mem.reqKeep, cassette.HTTPChunk{Redacted: red}, data, int64(len(raw)), limit)
			mx.reqChunk(data)
			return nil
		}}
		body = &reqBody{t: t, end: endReq}
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(p.abortCtx, cancel)
	defer stop()
	out, err := p.upstreamRequest(ctx, r, body, mx.upSID)
	if err != nil {
		endReq("not forwarded: "+err.Error(), false)
		p.failExchange(w, r, ex, reqDone, reqIDs, "bad request target: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		<-reqDone // the transport closes the body, also on errors
		status, detail := roundTripFailure(r, err)
		p.failExchange(w, r, ex, reqDone, reqIDs, detail, status)
		return
	}
	defer resp.Body.Close()
	select {
	case <-reqEnding:
		<-reqDone // the request's end is recorded before its answer, as in the order of the wire
	default:
		// the upstream answered before it read the request's end: the
		// answer is recorded and forwarded now, the request ends later
	}

	rh := p.hash.fields(resp.Header)
	if err := p.cas.Response(x, resp.StatusCode, resp.Proto, rh); err != nil {
		p.fail(err)
		httplocal.WriteError(w, http.StatusBadGateway, r.URL.Path, "recording_failed", "witness proxy: the answer could not be recorded, so it was not forwarded")
		<-reqDone
		return
	}
	ex.Response = &cassette.HTTPMessage{Status: resp.StatusCode, Proto: resp.Proto, Header: rh}
	mx.respHead(resp.StatusCode, resp.Header)
	hdr := w.Header()
	for k, v := range httplocal.EndToEnd(resp.Header) {
		hdr[k] = v
	}
	if mx.clientSID != "" {
		hdr.Set(httplocal.HeaderMcpSessionID, mx.clientSID)
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	// the head goes out with the first body bytes, in one write, so that
	// the client wakes once for both; a body that is slow to start (a GET
	// stream) gets its head alone after headFlushDelay
	var wmu sync.Mutex
	wrote := false
	headTimer := time.AfterFunc(headFlushDelay, func() {
		wmu.Lock()
		defer wmu.Unlock()
		if !wrote {
			wrote = true
			rc.Flush()
		}
	})
	stopHeadTimer := func() {
		headTimer.Stop()
		wmu.Lock()
		wrote = true // the timer's function, if it runs late, does nothing
		wmu.Unlock()
	}
	send := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		wrote = true
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}

	var recErr error
	// pend holds recorded response bytes not yet read into the MCP
	// session's messages: that reading (its cassette line, its events)
	// happens after the bytes went to the client, off the wire's path;
	// the bytes themselves are in the HTTP cassette before they are sent
	var pend []byte
	t := &tap{src: resp.Body, lines: p.red != nil, max: maxRedactLine, mem: &mem.respLine, cut: p.lineCut(x, "response"), record: func(raw []byte) error {
		data, red := redactBody(p.red, raw)
		if err := p.cas.Body(x, true, data, red, int64(len(raw))); err != nil {
			recErr = err
			p.fail(err)
			return err
		}
		keep(ex.Response, &mem.respKeep, cassette.HTTPChunk{Redacted: red}, data, int64(len(raw)), limit)
		if mx.hold {
			mx.respChunk(data) // forwarding waits for the endpoint event
		} else {
			pend = append(pend, data...) // read into MCP messages once forwarded
		}
		return nil
	}}
	buf := make([]byte, chunkSize)
	detail, abortClient := "", false
	for {
		n, err := t.Read(buf)
		if out := mx.forward(buf[:n]); len(out) > 0 {
			if werr := send(out); werr != nil {
				detail = "not delivered: the client went away: " + werr.Error()
				break
			}
		}
		if err == nil && len(pend) > 0 {
			mx.respChunk(pend)
			pend = pend[:0]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			abortClient = true
			switch {
			case recErr != nil:
				detail = "cut off: the recording failed"
			case p.abortCtx.Err() != nil:
				detail = "cut off at the end of the session"
			case r.Context().Err() != nil && r.Method == http.MethodGet && mediaType(resp.Header.Get("Content-Type")) == httplocal.ContentTypeEventStream:
				// the client closed a GET stream while the proxy waited
				// for the upstream: every recorded byte was delivered
				detail, abortClient = detailClosedByClient, false
			case r.Context().Err() != nil:
				detail, abortClient = "not delivered: the client went away", false
			default:
				detail = "cut off by the upstream: " + err.Error()
			}
			break
		}
	}
	if out := mx.release(); len(out) > 0 && detail == "" {
		_ = send(out)
	}
	stopHeadTimer()
	resp.Body.Close()
	finish := func() {
		if len(pend) > 0 {
			mx.respChunk(pend)
		}
		<-reqDone
		ex.Response.Ended, ex.Response.EndDetail = true, detail
		// a client closing a GET stream is how such streams end: no note
		p.settle(ex, cassette.RecResponseEnd, detail, 0, reqIDs, detail == detailClosedByClient)
		mx.end(detail)
		mem.release()
	}
	if abortClient {
		finish()
		// the client must not take a cut-off body for a whole one: the
		// connection is aborted (net/http's documented way, recovered by
		// the server), not ended cleanly
		panic(http.ErrAbortHandler)
	}
	// the handler returns, and net/http ends the answer (a chunked body's
	// last chunk), while the exchange's end is recorded: the client sees
	// the end of its answer without waiting for the recording of it. The
	// next exchange to begin waits for that recording (finishing), so that
	// a client that waits for each answer leaves the same order in the
	// cassette and the logs every time.
	handedOff = true
	p.wg.Add(1)
	p.finishing.RLock()
	go func() {
		defer p.wg.Done()
		defer p.finishing.RUnlock()
		finish()
	}()
}

// The details of a GET stream the client closed (a server-sent event
// stream: MCP's server-initiated messages, HTTP+SSE's session): the
// normal end of such a stream, with nothing recorded left undelivered,
// so no failure note in either log. derive.ResponseNote knows them too
// (TestClosedStreamDetails), so a log re-derived from the cassette says
// the same.
const (
	detailClosedByClient     = "closed by the client"                              // response_end
	detailClosedBeforeAnswer = "closed by the client before the upstream answered" // error, no status
)

// getStream says whether r asks for a server-sent event stream with GET
// (its Accept names text/event-stream, as the SDKs' and EventSource's do).
func getStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mediaType(part) == httplocal.ContentTypeEventStream {
				return true
			}
		}
	}
	return false
}

// failExchange records an exchange that got no upstream answer and
// answers the client with status (0: not at all).
func (p *recorder) failExchange(w http.ResponseWriter, r *http.Request, ex *cassette.HTTPExchange, reqDone chan struct{}, reqIDs []string, detail string, status int) {
	<-reqDone
	ex.Error, ex.Status = detail, status
	// recorded before the client is answered: the answer is the witness's
	p.settle(ex, cassette.RecError, detail, status, reqIDs, detail == detailClosedBeforeAnswer)
	if status != 0 {
		httplocal.WriteError(w, status, r.URL.Path, "upstream_error", "witness proxy: "+detail)
	}
}

// keep adds a recorded chunk to m for the deriver: a copy of data (the
// tap reuses its buffers) while the body is within limit (0: none is
// held) and the memory budget gives its bytes (taken into l); else only
// its length, and m is marked truncated.
func keep(m *cassette.HTTPMessage, l *lease, c cassette.HTTPChunk, data []byte, wireLen, limit int64) {
	held := limit > 0 && !m.Truncated && int64(l.n+len(data)) <= limit && l.grow(len(data))
	if !held {
		m.AddChunk(c, wireLen, 0)
		return
	}
	c.Data = append([]byte(nil), data...)
	m.AddChunk(c, wireLen, limit)
}

// exchangeMem is what one exchange took from the memory budget: the
// bodies kept for the deriver, the lines the taps hold for redaction, and
// the MCP reader's (mx).
type exchangeMem struct {
	reqKeep, respKeep lease
	reqLine, respLine lease
	mx                *mcpExchange
}

// release gives it all back; called once both sides of the exchange are
// done (again: nothing more).
func (m *exchangeMem) release() {
	m.reqKeep.release()
	m.respKeep.release()
	m.reqLine.release()
	m.respLine.release()
	m.mx.close()
}

// lineCut returns the tap's report of a line cut because the memory
// budget was spent: a note in the proxy's log, once per body.
func (p *recorder) lineCut(x int64, what string) func() {
	return func() {
		p.note(fmt.Sprintf("exchange %d: a %s body line was cut where the proxy's memory budget of %s was spent: its pieces were redacted with the regular-expression rules only", x, what, p.budget.size()))
	}
}

// budgetSummary says, for the end reason of the proxy's log, how often
// the memory budget refused bytes and which MCP sessions wrote server
// messages in the wire's order for it ("" when it never refused).
func (p *recorder) budgetSummary() string {
	_, peak, refused := p.budget.stats()
	if refused == 0 {
		return ""
	}
	s := fmt.Sprintf("the memory budget of %s refused bytes %d time(s) (at most %d bytes held at once)", p.budget.size(), refused, peak)
	if fb := p.mcp.fellBack; len(fb) > 0 {
		s += fmt.Sprintf("; MCP session(s) %s wrote server messages in the wire's order for it", joinInts(fb))
	}
	return s
}

// joinInts lists numbers, "1, 2, 3" (sessions: at most MaxMCPSessions).
func joinInts(ns []int) string {
	var b strings.Builder
	for i, n := range ns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, n)
	}
	return b.String()
}

// reqBody is the request body the upstream transport reads: the tap, and
// the end of the body recorded at EOF, at a read error or when the
// transport closes it early.
type reqBody struct {
	t   *tap
	end func(detail string, beside bool) // beside: record the end in a goroutine of its own
}

func (b *reqBody) Read(p []byte) (int, error) {
	n, err := b.t.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.end("", true)
	case err != nil:
		b.end("cut off: "+err.Error(), false)
	}
	return n, err
}

func (b *reqBody) Close() error {
	b.end("cut off: the upstream did not read it to its end", false)
	return nil
}
