package httpserve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/mcp"
	"github.com/agent-trace-witness/witness/serve"
)

// MCPServeOptions configure ServeMCP.
type MCPServeOptions struct {
	Listen   string       // default httplocal.DefaultListen; a host-less ":PORT" is loopback
	Listener net.Listener // used instead of Listen when set
	Stderr   io.Writer
	Signals  <-chan os.Signal
	// ExitAfter stops serving once that many MCP sessions were ended by
	// the client (DELETE); 0: until a signal.
	ExitAfter int
	// RequireAll and AnswerTimeout are serve.Options' for each session.
	RequireAll    bool
	AnswerTimeout time.Duration
	// AllowOrigins are the browser origins let in besides loopback ones
	// (httplocal.CheckOrigin).
	AllowOrigins []string
	Ready        func(url string)
	// Report, when set, receives one drift report for the whole run
	// (docs/formats/drift-report.md): the header once listening, then the
	// entries of every session as they happen (each session reports its
	// own never_asked requests when it ends), and the end record when
	// serving stops. A report that cannot be written is exit 5.
	Report io.Writer
	// AllowRedacted is recorded in the report header (--allow-redacted).
	AllowRedacted bool
	// MaxConns caps the connections open at once (0:
	// httpbound.DefaultMaxConns), as Options.MaxConns.
	MaxConns int
}

// MCPServeResult says how a ServeMCP run went, summed over its sessions.
type MCPServeResult struct {
	URL      string
	Sessions int
	Served   int
	Misses   int
	Unused   int
}

// ServeMCP serves the MCP cassette at path (the stdio cassette format:
// recorded over stdio by 'witness proxy' or 'witness capture', or the
// mcp/N/cassette.jsonl of an MCP session recorded over HTTP) over the
// Streamable HTTP transport, on any path. Each MCP session (an initialize
// POST without Mcp-Session-Id) gets its own serve.Script session, so
// matching, misses and --require-all are exactly those of the stdio serve;
// only the transport is new: a POST with requests is answered with a
// server-sent event stream carrying what the script writes until every
// request of the POST is answered, a POST with only notifications or
// responses with 202, a GET opens the stream for what no POST waits for,
// and DELETE ends the session. The error carries exit code Incomplete when
// a session missed.
func ServeMCP(path string, o MCPServeOptions) (*MCPServeResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Input("read cassette", err, "check the path given to --cassette")
	}
	script, err := serve.Load(bytes.NewReader(data), path)
	if err != nil {
		return nil, err
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = httplocal.Listen(o.Listen); err != nil {
			return nil, err
		}
	}
	defer ln.Close()
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	ms := &mcpServer{name: path, data: data, o: o, stderr: &lockedWriter{w: stderr}, sessions: map[string]*servedSession{}, done: make(chan struct{})}
	srv, ln := httpbound.Server(ms, ln, httpbound.ServerOptions{MaxConns: o.MaxConns, ErrorLog: log.New(ms.stderr, "witness: serve: ", 0)})
	res := &MCPServeResult{URL: "http://" + ln.Addr().String()}
	if o.Report != nil {
		h := script.Header(serve.Options{RequireAll: o.RequireAll, AnswerTimeout: o.AnswerTimeout}, o.AllowRedacted)
		h.Serve.Transport, h.Serve.Address = "http", ln.Addr().String()
		if ms.rep, err = drift.NewWriter(o.Report, h); err != nil {
			return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: write the drift report: %w", err), "check the disk and the path given to --report")
		}
	}
	fmt.Fprintf(ms.stderr, "listening on %s (MCP, Streamable HTTP)\n", res.URL)
	if o.Ready != nil {
		o.Ready(res.URL)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	end := drift.End{Stop: drift.StopExitAfter}
	select {
	case sig := <-o.Signals:
		end = drift.End{Stop: drift.StopSignal, Signal: drift.SignalName(sig)}
	case <-ms.done:
	case err := <-served:
		serveErr = err
		end = drift.End{Stop: drift.StopFailed, Error: err.Error()}
	}
	// end the sessions still open, as a host closing stdin would
	ms.mu.Lock()
	ms.closing = true
	open := make([]*servedSession, 0, len(ms.sessions))
	for _, s := range ms.sessions {
		open = append(open, s)
	}
	ms.mu.Unlock()
	for _, s := range open {
		s.end()
	}
	ctx, cancel := context.WithTimeout(context.Background(), httplocal.DefaultShutdownGrace)
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	cancel()
	ms.wg.Wait()
	if ms.rep != nil {
		ms.rep.Close(end)
		if err := ms.rep.Err(); err != nil && serveErr == nil {
			return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: write the drift report: %w", err), "check the disk and the path given to --report")
		}
	}
	if serveErr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: %w", serveErr), "")
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	res.Sessions = len(ms.all)
	var first error
	for _, s := range ms.all {
		if s.res != nil {
			res.Served += s.res.Served
			res.Misses += s.res.Misses
			res.Unused += s.res.Unused
		}
		if s.err != nil && first == nil {
			first = s.err
		}
	}
	if first != nil {
		return res, first
	}
	return res, nil
}

// mcpServer is the handler of ServeMCP.
type mcpServer struct {
	name   string
	data   []byte
	o      MCPServeOptions
	stderr *lockedWriter
	wg     sync.WaitGroup
	rep    *drift.Writer // the drift report, nil without MCPServeOptions.Report

	mu       sync.Mutex
	sessions map[string]*servedSession // open, by Mcp-Session-Id
	all      []*servedSession
	ended    int
	closing  bool
	doneOnce sync.Once
	done     chan struct{}
}

// servedSession is one MCP session: a serve.Script session fed through a
// pipe, whose output is routed to the HTTP streams waiting for it.
type servedSession struct {
	id    string
	stdin *io.PipeWriter
	inMu  sync.Mutex // one message at a time into stdin
	fin   chan struct{}
	res   *serve.Result
	err   error

	mu      sync.Mutex
	waiters map[string]*sink // request id token -> the POST stream answering it
	posts   []*sink          // open POST streams, oldest first
	get     *sink            // the GET stream, when open
	queue   [][]byte         // messages no stream was open for
	endOnce sync.Once
}

// sink is one open server-sent event stream: the messages to send on it.
type sink struct {
	mu     sync.Mutex
	msgs   [][]byte
	want   int // requests of the POST still unanswered
	closed bool
	wake   chan struct{}
}

func newSink(want int) *sink { return &sink{want: want, wake: make(chan struct{}, 1)} }

func (k *sink) push(b []byte, answers bool) {
	k.mu.Lock()
	k.msgs = append(k.msgs, b)
	if answers {
		k.want--
		if k.want <= 0 {
			k.closed = true
		}
	}
	k.mu.Unlock()
	k.poke()
}

func (k *sink) close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.poke()
}

func (k *sink) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *sink) take() ([][]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.msgs
	k.msgs = nil
	return m, k.closed
}

// start runs the script session of s.
func (ms *mcpServer) start(s *servedSession) error {
	script, err := serve.Load(bytes.NewReader(ms.data), ms.name)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s.stdin = inW
	so := serve.Options{Stdin: inR, Stdout: outW, Stderr: ms.stderr, RequireAll: ms.o.RequireAll, AnswerTimeout: ms.o.AnswerTimeout}
	if ms.rep != nil {
		so.Report = ms.rep.Sub()
	}
	go func() {
		res, err := script.Serve(so)
		s.mu.Lock()
		s.res, s.err = res, err
		s.mu.Unlock()
		inR.Close()
		outW.Close() // the router below then ends, and closes fin
	}()
	go func() {
		br := bufio.NewReaderSize(outR, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				s.route(bytes.TrimRight(line, "\r\n"))
			}
			if err != nil {
				break
			}
		}
		s.mu.Lock()
		for _, k := range s.posts {
			k.close()
		}
		if s.get != nil {
			s.get.close()
		}
		s.mu.Unlock()
		close(s.fin)
	}()
	return nil
}

// route sends a line the script wrote to the stream waiting for it: a
// response to the POST that carried its request, anything else to the
// newest open POST stream, else to the GET stream, else to a queue the
// next GET stream gets.
func (s *servedSession) route(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, err := mcp.Parse(line); err == nil && m.Kind == mcp.KindResponse {
		if k := s.waiters[mcp.IDKey(m.ID)]; k != nil {
			delete(s.waiters, mcp.IDKey(m.ID))
			k.push(line, true)
			return
		}
	}
	switch {
	case len(s.posts) > 0:
		s.posts[len(s.posts)-1].push(line, false)
	case s.get != nil:
		s.get.push(line, false)
	default:
		s.queue = append(s.queue, line)
	}
}

// end closes the session's input, as a host closing stdin, and waits for
// the script session to finish.
func (s *servedSession) end() {
	s.endOnce.Do(func() { s.stdin.Close() })
	<-s.fin
}

// write sends messages to the script session, one line each.
func (s *servedSession) write(msgs [][]byte) error {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	for _, m := range msgs {
		line := append(bytes.ReplaceAll(bytes.ReplaceAll(m, []byte("\r\n"), []byte(" ")), []byte("\n"), []byte(" ")), '\n')
		if _, err := s.stdin.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// jsonRPCError answers an HTTP error with a JSON-RPC error body.
func jsonRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(mcp.ErrorResponse([]byte("null"), code, msg))
}

func (ms *mcpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ms.wg.Add(1)
	defer ms.wg.Done()
	if !httplocal.CheckOrigin(r, ms.o.AllowOrigins) {
		httplocal.WriteOriginRefusal(w, r)
		return
	}
	sid := r.Header.Get(httplocal.HeaderMcpSessionID)
	ms.mu.Lock()
	s := ms.sessions[sid]
	closing := ms.closing
	ms.mu.Unlock()
	if closing {
		jsonRPCError(w, http.StatusServiceUnavailable, -32000, "witness serve: stopping")
		return
	}
	switch r.Method {
	case http.MethodPost:
		ms.post(w, r, sid, s)
	case http.MethodGet:
		if s == nil {
			jsonRPCError(w, statusForSession(sid), -32000, "witness serve: no MCP session "+strconv.Quote(sid))
			return
		}
		ms.stream(w, r, s, nil)
	case http.MethodDelete:
		if s == nil {
			jsonRPCError(w, statusForSession(sid), -32000, "witness serve: no MCP session "+strconv.Quote(sid))
			return
		}
		ms.mu.Lock()
		delete(ms.sessions, sid)
		ms.ended++
		n := ms.ended
		ms.mu.Unlock()
		s.end()
		w.WriteHeader(http.StatusOK)
		if ms.o.ExitAfter > 0 && n >= ms.o.ExitAfter {
			ms.doneOnce.Do(func() { close(ms.done) })
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		jsonRPCError(w, http.StatusMethodNotAllowed, -32000, "witness serve: method not allowed")
	}
}

// statusForSession is 400 without a session id, 404 for an unknown one
// (the transport's "session gone").
func statusForSession(sid string) int {
	if sid == "" {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

func (ms *mcpServer) post(w http.ResponseWriter, r *http.Request, sid string, s *servedSession) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReplayBody+1))
	if err != nil {
		return
	}
	if len(body) > maxReplayBody {
		jsonRPCError(w, http.StatusRequestEntityTooLarge, -32600, "witness serve: request body too large")
		return
	}
	msgs := httplocal.SplitMessages(body)
	var ids []string
	initialize := false
	for _, m := range msgs {
		pm, err := mcp.Parse(m)
		if err != nil {
			continue
		}
		if pm.Kind == mcp.KindRequest {
			ids = append(ids, mcp.IDKey(pm.ID))
			initialize = initialize || pm.Method == mcp.MethodInitialize
		}
	}
	if len(msgs) == 0 {
		jsonRPCError(w, http.StatusBadRequest, -32700, "witness serve: parse error: the body holds no JSON-RPC message")
		return
	}
	if s == nil {
		if sid != "" || !initialize {
			jsonRPCError(w, statusForSession(sid), -32000, "witness serve: no valid MCP session id; begin with initialize")
			return
		}
		ms.mu.Lock()
		n := len(ms.all) + 1
		s = &servedSession{id: "witness-serve-" + strconv.Itoa(n), waiters: map[string]*sink{}, fin: make(chan struct{})}
		if err := ms.start(s); err != nil {
			ms.mu.Unlock()
			jsonRPCError(w, http.StatusInternalServerError, -32603, "witness serve: "+err.Error())
			return
		}
		ms.sessions[s.id] = s
		ms.all = append(ms.all, s)
		ms.mu.Unlock()
		w.Header().Set(httplocal.HeaderMcpSessionID, s.id)
	}
	if len(ids) == 0 {
		if err := s.write(msgs); err != nil {
			jsonRPCError(w, http.StatusNotFound, -32000, "witness serve: the session has ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	k := newSink(len(ids))
	s.mu.Lock()
	for _, id := range ids {
		s.waiters[id] = k
	}
	s.posts = append(s.posts, k)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for i, p := range s.posts {
			if p == k {
				s.posts = append(s.posts[:i], s.posts[i+1:]...)
				break
			}
		}
		for id, p := range s.waiters {
			if p == k {
				delete(s.waiters, id)
			}
		}
		s.mu.Unlock()
	}()
	if err := s.write(msgs); err != nil {
		jsonRPCError(w, http.StatusNotFound, -32000, "witness serve: the session has ended")
		return
	}
	ms.stream(w, r, s, k)
}

// stream writes a server-sent event stream: k's messages until it closes
// (a POST), or, with k nil, the session's GET stream until the session or
// the client ends it.
func (ms *mcpServer) stream(w http.ResponseWriter, r *http.Request, s *servedSession, k *sink) {
	if k == nil {
		k = newSink(0)
		s.mu.Lock()
		if s.get != nil {
			s.mu.Unlock()
			jsonRPCError(w, http.StatusConflict, -32000, "witness serve: a GET stream is already open for this session")
			return
		}
		s.get = k
		for _, q := range s.queue {
			k.push(q, false)
		}
		s.queue = nil
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if s.get == k {
				s.get = nil
			}
			s.mu.Unlock()
		}()
	}
	h := w.Header()
	h.Set("Content-Type", httplocal.ContentTypeEventStream)
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	for {
		msgs, closed := k.take()
		for _, m := range msgs {
			if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", m); err != nil {
				return
			}
		}
		if len(msgs) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if closed {
			return
		}
		select {
		case <-k.wake:
		case <-r.Context().Done():
			return
		case <-s.fin:
			k.close()
		}
	}
}
