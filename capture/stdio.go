package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/proctree"
	"github.com/agent-trace-witness/witness/internal/version"
	"github.com/agent-trace-witness/witness/mcp"
)

// Defaults of the live stdio client.
const (
	DefaultTimeout    = 30 * time.Second // per request
	DefaultStdinGrace = 5 * time.Second  // wait after closing stdin before SIGTERM
	DefaultTermGrace  = 5 * time.Second  // wait after SIGTERM before SIGKILL
)

// stdioOptions configure a live stdio client.
type stdioOptions struct {
	Command string
	Args    []string
	Env     []string // the server's whole environment, NAME=VALUE; nothing is inherited
	Dir     string

	Protocol   string        // pinned in initialize; default mcp.DefaultProtocol
	Timeout    time.Duration // per request; default DefaultTimeout
	MaxLine    int           // default mcp.DefaultMaxLine
	StdinGrace time.Duration // default DefaultStdinGrace
	TermGrace  time.Duration // default DefaultTermGrace

	Cassette *cassette.Writer // required: every byte is recorded here before it is parsed
	Warn     func(msg string) // warnings (non-JSON stdout, unmatched ids); may be nil

	// Answer, when set, answers the server's requests (sampling,
	// elicitation, roots, ...) it knows; the others get ping's empty
	// result or "method not found". Capabilities are the client
	// capabilities sent in initialize ({} when nil).
	Answer       AnswerFunc
	Capabilities json.RawMessage
}

// AnswerFunc answers a server request of method with params: a result or
// a JSON-RPC error object; ok is false when it has no answer for it.
type AnswerFunc func(method string, params json.RawMessage) (result, errObj json.RawMessage, ok bool)

// stdioClient is a live MCP client over a server's stdio. It owns its
// framing: every line is recorded in the cassette before it is parsed, and
// replies are matched to requests by the exact id token.
type stdioClient struct {
	o          stdioOptions
	cmd        *exec.Cmd
	pgid       int
	unregister func() // the server's session is no longer live (proctree)

	stdin    *os.File
	sendMu   sync.Mutex
	stdinMu  sync.Mutex
	closedIn bool
	// deferred is notifications/initialized, held (under sendMu) until the
	// next message, so that both reach the cassette before the server can
	// react to the first: what a server sends when initialized (a
	// list_changed, a log message) then always follows the client's next
	// request in the recording, and a scripted session records the same
	// order every run
	deferred []byte

	mu        sync.Mutex
	pending   map[string]chan *mcp.Message
	cancelled map[string]bool // ids of requests that timed out
	nextID    int64
	unmatched []string
	fatal     error

	stdoutFile *os.File
	stderrFile *os.File
	fatalCh    chan struct{}
	fatalOnce  sync.Once
	stdoutDone chan struct{}
	stderrDone chan struct{}
	exited     chan struct{}
	exitState  *os.ProcessState
	exitErr    error

	InitializeResult json.RawMessage
	Protocol         string
}

// ServerError is a JSON-RPC error object returned by the server.
type ServerError struct {
	Method string
	Code   int             `json:"code"`
	Msg    string          `json:"message"`
	Data   json.RawMessage `json:"data,omitempty"`
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server answered %s with error %d: %s", e.Method, e.Code, e.Msg)
}

func (o *stdioOptions) defaults() {
	if o.Protocol == "" {
		o.Protocol = mcp.DefaultProtocol
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxLine <= 0 {
		o.MaxLine = mcp.DefaultMaxLine
	}
	if o.StdinGrace <= 0 {
		o.StdinGrace = DefaultStdinGrace
	}
	if o.TermGrace <= 0 {
		o.TermGrace = DefaultTermGrace
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
}

// StdioSupported returns nil where a stdio server can be run and recorded
// (Unix), and otherwise a failure (exit code 5) saying why and where to
// record instead: on Windows witness could neither stop a server gracefully
// nor end what it started (docs/design/platforms.md). RunCapture, Dial and
// StartStdio call it before they create or start anything.
func StdioSupported() error {
	if err := proctree.Supported(); err != nil {
		return exitcode.New(exitcode.Failure, err, "record on Linux or macOS (on Windows, under WSL); the commands that read evidence work here")
	}
	return nil
}

// startStdio spawns the server (no shell, its own process group, explicit
// environment) and starts reading its stdout and stderr.
func startStdio(o stdioOptions) (*stdioClient, error) {
	if err := StdioSupported(); err != nil {
		return nil, err
	}
	o.defaults()
	if o.Cassette == nil {
		return nil, errors.New("start server: no cassette writer")
	}
	if !mcp.Supported(o.Protocol) {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("protocol version %q is not supported", o.Protocol),
			"use one of "+strings.Join(mcp.SupportedProtocols, ", "))
	}
	path, err := exec.LookPath(o.Command)
	if err != nil {
		o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeSpawnFailed, Detail: err.Error()})
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("start server %s: %w", o.Command, err), "check the command after --; it is run without a shell")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	env := o.Env
	if env == nil {
		env = []string{}
	}
	// a new session (hence a new process group): see package proctree for
	// how every process the server starts is found again at the end
	cmd := &exec.Cmd{Path: path, Args: append([]string{o.Command}, o.Args...), Env: env, Dir: o.Dir,
		Stdin: inR, Stdout: outW, Stderr: errW}
	proctree.Subreaper()
	unregister, err := proctree.Start(cmd)
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeSpawnFailed, Detail: err.Error()})
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("start server %s: %w", o.Command, err), "")
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c := &stdioClient{o: o, cmd: cmd, pgid: cmd.Process.Pid, unregister: unregister, stdin: inW, pending: map[string]chan *mcp.Message{}, cancelled: map[string]bool{}, nextID: 1,
		fatalCh: make(chan struct{}), stdoutDone: make(chan struct{}), stderrDone: make(chan struct{}), exited: make(chan struct{})}
	o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeSpawn, Detail: "own process group, no shell"})
	c.stdoutFile, c.stderrFile = outR, errR
	go c.readStdout(outR)
	go c.readStderr(errR)
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.exitState, c.exitErr = cmd.ProcessState, err
		c.mu.Unlock()
		rec := cassette.Record{Life: cassette.LifeExit, Status: exitStatus(cmd.ProcessState, err)}
		if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
			code := cmd.ProcessState.ExitCode()
			rec.Code = &code
		}
		o.Cassette.Lifecycle(rec)
		close(c.exited)
	}()
	return c, nil
}

func exitStatus(ps *os.ProcessState, err error) string {
	if ps != nil {
		return ps.String()
	}
	if err != nil {
		return err.Error()
	}
	return "unknown"
}

// PGID returns the server's process group id.
func (c *stdioClient) PGID() int { return c.pgid }

func (c *stdioClient) fail(err error) {
	c.fatalOnce.Do(func() {
		c.mu.Lock()
		c.fatal = err
		c.mu.Unlock()
		c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeError, Detail: err.Error()})
		close(c.fatalCh)
	})
}

func (c *stdioClient) readStdout(f *os.File) {
	defer close(c.stdoutDone)
	defer f.Close()
	lr := mcp.NewLineReader(f, c.o.MaxLine)
	for {
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeEOF, Stream: cassette.S2C})
			return
		}
		var tl *mcp.LineTooLongError
		if err != nil && !errors.As(err, &tl) {
			c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeError, Stream: cassette.S2C, Detail: "read stdout: " + err.Error()})
			return
		}
		if l.More {
			c.o.Cassette.RecordPiece(cassette.S2C, l.Bytes)
			if tl != nil {
				c.o.Warn(fmt.Sprintf("server stdout: %v; the line is kept in the cassette, the session is ended", tl))
				c.fail(exitcode.New(exitcode.Failure, fmt.Errorf("server sent a line larger than the maximum line size of %s, starting at stdout byte offset %d", mcp.FormatSize(tl.Max), tl.Off),
					"raise the limit with --max-line if the server is expected to send larger messages"))
			}
			continue
		}
		seq, _ := c.o.Cassette.Record(cassette.S2C, l.Bytes, l.Partial)
		if l.Partial {
			c.o.Warn(fmt.Sprintf("server stdout ended with %d bytes and no newline (cassette record %d, kept and flagged partial)", len(l.Bytes), seq))
		}
		c.dispatch(l.Bytes, seq)
	}
}

func (c *stdioClient) dispatch(line []byte, seq int64) {
	m, err := mcp.Parse(line)
	if mcp.IsAmbiguous(err) && m.Kind == mcp.KindResponse {
		// the envelope is pinned down, the content is not: answer the
		// request (the event log records the line as ambiguous)
		c.o.Warn(fmt.Sprintf("server response %s is ambiguous (cassette record %d, kept): %v", m.ID, seq, err))
	} else if err != nil {
		c.o.Warn(fmt.Sprintf("server stdout line is not a JSON-RPC message (cassette record %d, kept): %v: %s", seq, err, preview(line)))
		return
	}
	switch m.Kind {
	case mcp.KindResponse:
		key := mcp.IDKey(m.ID)
		c.mu.Lock()
		ch, ok := c.pending[key]
		late := c.cancelled[key]
		if ok {
			delete(c.pending, key)
		} else if !late {
			c.unmatched = append(c.unmatched, fmt.Sprintf("%s (%s)", orNone(m.ID), mcp.IDType(m.ID)))
		}
		c.mu.Unlock()
		if ok {
			ch <- m
			return
		}
		if late {
			c.o.Warn(fmt.Sprintf("server answered request %s after it timed out and was cancelled (cassette record %d, kept)", m.ID, seq))
			return
		}
		c.o.Warn(fmt.Sprintf("server sent a response with id %s (%s) that matches no pending request (cassette record %d); ids are matched by exact token and type", orNone(m.ID), mcp.IDType(m.ID), seq))
	case mcp.KindRequest:
		if c.o.Answer != nil {
			if res, errObj, ok := c.o.Answer(m.Method, m.Params); ok {
				if errObj != nil {
					c.write(errorAnswer(m.ID, errObj))
				} else {
					c.write(mcp.Result(m.ID, res))
				}
				return
			}
		}
		if m.Method == mcp.MethodPing {
			c.write(mcp.Result(m.ID, json.RawMessage(`{}`)))
			return
		}
		c.write(mcp.ErrorResponse(m.ID, mcp.CodeMethodNotFound, "method not found: "+m.Method))
	}
}

// errorAnswer returns an error response carrying the JSON-RPC error object
// errObj for the exact id token.
func errorAnswer(id, errObj json.RawMessage) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(append(b, `,"error":`...), errObj...)
	return append(b, '}')
}

func orNone(id json.RawMessage) string {
	if id == nil {
		return "(none)"
	}
	return string(id)
}

func preview(b []byte) string {
	const n = 80
	s := string(b)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strconv.Quote(s)
}

func (c *stdioClient) readStderr(f *os.File) {
	defer close(c.stderrDone)
	defer f.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			c.o.Cassette.Record(cassette.Stderr, append([]byte(nil), buf[:n]...), false)
		}
		if err != nil {
			c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeEOF, Stream: cassette.Stderr})
			return
		}
	}
}

// write records line in the cassette, then writes it with its newline to
// the server's stdin, under a write deadline so that a server that stops
// reading cannot block the client.
func (c *stdioClient) write(line []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.writeLocked(line)
}

// writeLocked is write with sendMu held; a nil line sends only the
// deferred notification.
func (c *stdioClient) writeLocked(line []byte) error {
	c.stdinMu.Lock()
	closed := c.closedIn
	c.stdinMu.Unlock()
	if closed {
		return errors.New("server stdin is closed")
	}
	var b []byte
	for _, l := range [][]byte{c.deferred, line} {
		if l == nil {
			continue
		}
		if _, err := c.o.Cassette.Record(cassette.C2S, l, false); err != nil {
			return err
		}
		b = append(append(b, l...), '\n')
	}
	c.deferred = nil
	_ = c.stdin.SetWriteDeadline(time.Now().Add(c.o.Timeout))
	if _, err := c.stdin.Write(b); err != nil {
		err = fmt.Errorf("write to server stdin: %w", err)
		c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeError, Stream: cassette.C2S, Detail: err.Error()})
		return err
	}
	return nil
}

// Request sends a request and waits for the reply with the same id token.
// On timeout it sends notifications/cancelled (except for initialize, which
// must not be cancelled) and returns an error.
func (c *stdioClient) Request(method string, params json.RawMessage) (*mcp.Message, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	idTok := json.RawMessage(strconv.FormatInt(id, 10))
	ch := make(chan *mcp.Message, 1)
	c.pending[mcp.IDKey(idTok)] = ch // registered before the write: a fast reply is never lost
	fatal := c.fatal
	c.mu.Unlock()
	drop := func() {
		c.mu.Lock()
		delete(c.pending, mcp.IDKey(idTok))
		c.mu.Unlock()
	}
	if fatal != nil {
		drop()
		return nil, fatal
	}
	if err := c.write(mcp.Request(id, method, params)); err != nil {
		drop()
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("send %s (id %d): %w", method, id, err), c.exitHint())
	}
	timer := time.NewTimer(c.o.Timeout)
	defer timer.Stop()
	select {
	case m := <-ch:
		return m, nil
	case <-timer.C:
		drop()
		c.mu.Lock()
		c.cancelled[mcp.IDKey(idTok)] = true
		c.mu.Unlock()
		if method != mcp.MethodInitialize {
			reason, _ := json.Marshal(fmt.Sprintf("timed out after %s", c.o.Timeout))
			c.write(mcp.Notification(mcp.NotificationCancelled, json.RawMessage(`{"requestId":`+string(idTok)+`,"reason":`+string(reason)+`}`)))
		}
		err := fmt.Errorf("server did not answer %s (id %d) within %s", method, id, c.o.Timeout)
		if u := c.unmatchedIDs(); u != "" {
			err = fmt.Errorf("%w; it sent responses with ids that match no request: %s (ids are matched by exact token and type)", err, u)
		}
		return nil, c.report(exitcode.New(exitcode.Failure, err, "raise --timeout if the server is slow; the cassette shows everything it sent"))
	case <-c.fatalCh:
		drop()
		return nil, c.fatal
	case <-c.stdoutDone:
		select { // the reply may have been the last line
		case m := <-ch:
			return m, nil
		default:
		}
		drop()
		return nil, c.report(exitcode.New(exitcode.Failure, fmt.Errorf("server closed its stdout before answering %s (id %d)%s", method, id, c.exitSuffix()), c.exitHint()))
	}
}

// report records err in the cassette (a lifecycle error record) and
// returns it.
func (c *stdioClient) report(err error) error {
	c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeError, Detail: err.Error()})
	return err
}

func (c *stdioClient) unmatchedIDs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.unmatched, ", ")
}

func (c *stdioClient) exitSuffix() string {
	select {
	case <-c.exited:
	case <-time.After(500 * time.Millisecond):
		return " (the process is still running)"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return "; server " + exitStatus(c.exitState, c.exitErr)
}

func (c *stdioClient) exitHint() string {
	return "the server's stderr is in the cassette (records with \"dir\":\"stderr\")"
}

// Initialize performs the handshake: initialize with the pinned protocol
// version, check the answered version, then notifications/initialized.
func (c *stdioClient) Initialize() (json.RawMessage, error) {
	var caps any = map[string]any{}
	if c.o.Capabilities != nil {
		caps = c.o.Capabilities
	}
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": c.o.Protocol,
		"capabilities":    caps,
		"clientInfo":      map[string]string{"name": "witness", "version": version.Version},
	})
	m, err := c.Request(mcp.MethodInitialize, params)
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		se := serverError(mcp.MethodInitialize, m.Error)
		return nil, c.report(exitcode.New(exitcode.Failure, fmt.Errorf("server rejected initialize: %w", se), "try another --protocol: "+strings.Join(mcp.SupportedProtocols, ", ")))
	}
	var res struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("initialize result is not an object: %w", err), "")
	}
	if !mcp.Supported(res.ProtocolVersion) {
		return nil, c.report(exitcode.New(exitcode.Failure,
			fmt.Errorf("server answered initialize with protocol version %q, which witness does not support (it asked for %s); disconnected", res.ProtocolVersion, c.o.Protocol),
			"witness speaks "+strings.Join(mcp.SupportedProtocols, ", ")))
	}
	c.InitializeResult, c.Protocol = m.Result, res.ProtocolVersion
	// sent with the next message (see deferred), at the latest by Close
	c.sendMu.Lock()
	c.deferred = mcp.Notification(mcp.NotificationInitialized, nil)
	c.sendMu.Unlock()
	return m.Result, nil
}

func serverError(method string, raw json.RawMessage) *ServerError {
	se := &ServerError{Method: method}
	_ = json.Unmarshal(raw, se)
	return se
}

// maxToolPages bounds tools/list pagination.
const maxToolPages = 1000

// ListTools follows nextCursor through every page of tools/list and returns
// the raw tool definitions in server order.
func (c *stdioClient) ListTools() ([]json.RawMessage, error) { return listTools(c) }

// CallTool calls a tool with the given arguments (a JSON object, or nil).
// A JSON-RPC error is returned as the message, not as an error: it is a
// recorded response.
func (c *stdioClient) CallTool(name string, args json.RawMessage) (*mcp.Message, error) {
	return callTool(c, name, args)
}

// Shutdown is how the server ended.
type Shutdown struct {
	Step     string // "stdin closed", "SIGTERM", "SIGKILL", "exited by itself"
	Status   string // exit status
	Leftover bool   // other members of the process group had to be killed
	Warning  string // set when the server needed SIGTERM
	Err      error  // set when the server had to be killed with SIGKILL, or a stream did not end
	// Incomplete says why the recording may miss bytes (a stream that did
	// not reach end of file); "" when every byte was read.
	Incomplete string
}

// Close shuts the server down: close stdin, wait, SIGTERM the process group,
// wait, SIGKILL; it keeps reading stdout and stderr until EOF, reaps the
// process, and kills what is left of its process group.
func (c *stdioClient) Close() Shutdown {
	var sd Shutdown
	select {
	case <-c.exited:
		sd.Step = "exited by itself"
	default:
	}
	c.sendMu.Lock()
	if c.deferred != nil {
		_ = c.writeLocked(nil)
	}
	c.stdinMu.Lock()
	if !c.closedIn {
		c.closedIn = true
		c.stdin.Close()
		c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeStdinClosed})
	}
	c.stdinMu.Unlock()
	c.sendMu.Unlock()
	if sd.Step == "" {
		sd.Step = "stdin closed"
		if !waitFor(c.exited, c.o.StdinGrace) {
			sd.Step = "SIGTERM"
			c.signal(syscall.SIGTERM)
			if !waitFor(c.exited, c.o.TermGrace) {
				sd.Step = "SIGKILL"
				c.signal(syscall.SIGKILL)
				<-c.exited
			}
		}
	}
	// leftovers go too: its group, and whatever it started that left the
	// group (setsid, double fork) and came back to this process, the
	// subreaper
	if proctree.Alive(c.pgid) {
		sd.Leftover = true
		c.signal(syscall.SIGKILL)
		if _, survivors := proctree.End(c.pgid, c.o.TermGrace); survivors {
			sd.Err = errors.New("processes started by the server survived SIGKILL")
		}
	}
	c.unregister()
	// read stdout and stderr to EOF; a process outside the group could hold
	// the pipes open, so after a bound the client closes its ends, and in
	// every case the readers have finished (and recorded all they read)
	// when Close returns
	drain := c.o.TermGrace + 5*time.Second
	for _, s := range []struct {
		done chan struct{}
		f    *os.File
	}{{c.stdoutDone, c.stdoutFile}, {c.stderrDone, c.stderrFile}} {
		if !waitFor(s.done, drain) {
			s.f.Close()
			<-s.done
			sd.Err = errors.New("server output did not reach end of file after the process exited (a process outside its group holds the pipe)")
			sd.Incomplete = sd.Err.Error()
		}
	}
	c.mu.Lock()
	sd.Status = exitStatus(c.exitState, c.exitErr)
	c.mu.Unlock()
	switch sd.Step {
	case "SIGTERM":
		sd.Warning = fmt.Sprintf("server did not exit within %s of stdin closing; stopped with SIGTERM (%s)", c.o.StdinGrace, sd.Status)
	case "SIGKILL":
		sd.Err = fmt.Errorf("server ignored stdin closing and SIGTERM; killed with SIGKILL after %s (%s)", c.o.StdinGrace+c.o.TermGrace, sd.Status)
	}
	return sd
}

func (c *stdioClient) signal(sig syscall.Signal) {
	name := "SIGTERM"
	if sig == syscall.SIGKILL {
		name = "SIGKILL"
	}
	c.o.Cassette.Lifecycle(cassette.Record{Life: cassette.LifeSignal, Signal: name})
	_ = proctree.Signal(c.pgid, sig)
}

func waitFor(ch chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
