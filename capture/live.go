package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/mcp"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// LiveOptions configure a live, recorded MCP session over stdio.
type LiveOptions struct {
	Command string
	Args    []string
	Env     []string // the server's whole environment (NAME=VALUE); the cassette keeps the names only
	Dir     string

	// URL, when set, reaches the server over Streamable HTTP instead of
	// running Command (capture --url; see OpenLive); Header holds the
	// headers sent with every request, HeaderKey the key of their
	// credential hashes (nil: the Redactor's, else a session key),
	// RedactHeaders more header names to hash, RedactQuery more query
	// parameter names (besides cassette.CredentialParams) whose values are
	// hashed wherever the URL is written, and HTTPCassette is where
	// the HTTP exchanges go (nil: discarded). Cassette then receives the
	// JSON-RPC messages.
	URL           string
	Header        http.Header
	HeaderKey     []byte
	RedactHeaders []string
	RedactQuery   []string
	HTTPCassette  io.Writer

	Protocol   string
	Timeout    time.Duration
	MaxLine    int
	StdinGrace time.Duration
	TermGrace  time.Duration

	Cassette io.Writer // where the cassette goes (required)
	Events   io.Writer // where the event log goes (required)

	Getenv   func(string) string // ATW_WITNESS_TS; nil means no frozen time
	Seal     *eventlog.SealRef
	Redactor *derive.Redactor
	Effects  derive.EffectFunc
	Signers  []eventlog.Signer
	Warn     func(string)
	Notes    []string
	// Answer and Capabilities: see StdioOptions (scripted answers to the
	// server's requests and the capabilities declared for them).
	Answer       AnswerFunc
	Capabilities json.RawMessage
}

// Live is a recorded MCP session: a Transport (a StdioClient, or an
// HTTPClient for LiveOptions.URL) whose cassette feeds a Deriver, so the
// event log is derived from exactly the recorded bytes.
type Live struct {
	Transport Transport
	Tools     []json.RawMessage // every tools/list page, in server order

	o  LiveOptions
	cw *cassette.Writer
	d  *derive.Deriver
	// hw holds the HTTP exchanges of a session over Streamable HTTP
	// (LiveOptions.URL); cw holds the messages of either transport.
	hw     *cassette.HTTPWriter
	mu     sync.Mutex
	closed bool
	result error
}

// envNames returns the names of NAME=VALUE entries, sorted as given.
func envNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		n, _, _ := strings.Cut(kv, "=")
		names = append(names, n)
	}
	return names
}

// openLive spawns the server, records everything, and performs the
// handshake and the full tool listing. On error the session is already
// closed (server stopped, log finished) and the error says what failed.
func openLive(o LiveOptions) (*Live, error) {
	if o.Cassette == nil || o.Events == nil {
		return nil, errors.New("open session: cassette and events writers are required")
	}
	if o.Protocol == "" {
		o.Protocol = mcp.DefaultProtocol
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.URL != "" {
		return openHTTPLive(o)
	}
	frozen := o.Getenv != nil && o.Getenv(eventlog.EnvTS) != ""
	h := cassette.Header{Command: o.Command, Args: o.Args, Env: envNames(o.Env), Protocol: o.Protocol,
		Started: eventlog.Timestamp(o.Getenv), Frozen: frozen, Mode: "client"}
	if o.Redactor != nil {
		if b, err := json.Marshal(o.Redactor.Info()); err == nil {
			h.Redaction = b
		}
	}
	cw, err := cassette.NewWriter(o.Cassette, h)
	if err != nil {
		return nil, err
	}
	if o.Redactor != nil {
		red := o.Redactor
		cw.SetRedact(func(_ cassette.Dir, b []byte) ([]byte, bool) { return red.Line(b) })
	}
	l := &Live{o: o, cw: cw}
	l.d = derive.NewDeriver(o.Events, cw.Header(), derive.Options{Seal: o.Seal, Redactor: o.Redactor, Cassette: derive.CassetteFile, Effects: o.Effects, Notes: o.Notes})
	cw.OnRecord(func(r *cassette.Record) { _ = l.d.Feed(r) })
	c, err := startStdio(stdioOptions{Command: o.Command, Args: o.Args, Env: o.Env, Dir: o.Dir, Protocol: o.Protocol,
		Timeout: o.Timeout, MaxLine: o.MaxLine, StdinGrace: o.StdinGrace, TermGrace: o.TermGrace, Cassette: cw, Warn: o.Warn,
		Answer: o.Answer, Capabilities: o.Capabilities})
	if err != nil {
		_ = l.d.Finish(eventlog.EndOptions{Signers: o.Signers, Reason: "server did not start", Failure: "server did not start: " + err.Error()})
		return nil, err
	}
	return l.start(c)
}

// CallTool calls a tool; the call and its response become events.
func (l *Live) CallTool(name string, args json.RawMessage) (*mcp.Message, error) {
	return l.Transport.CallTool(name, args)
}

// Request sends any request over the session's transport and waits for
// its reply; the request and its reply become events.
func (l *Live) Request(method string, params json.RawMessage) (*mcp.Message, error) {
	return l.Transport.Request(method, params)
}

// closeWith closes the session and returns err (which wins over shutdown
// errors); the log's end records err as the failure.
func (l *Live) closeWith(err error) error {
	failure := ""
	if err != nil {
		failure = "capture error: " + err.Error()
	}
	cerr := l.close(failure)
	if err != nil {
		return err
	}
	return cerr
}

// Close stops the server (stdin, SIGTERM, SIGKILL), waits for every byte,
// and finishes the event log with a signed session_end. It returns the
// shutdown error, if the server had to be killed, or a log error. The end
// records a failure when a capture error happened or the server's output
// could not be read to its end.
func (l *Live) Close() error { return l.close("") }

func (l *Live) close(failure string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.result
	}
	l.closed = true
	var sd Shutdown
	if l.Transport != nil {
		sd = l.Transport.Close()
	}
	if sd.Warning != "" {
		l.o.Warn(sd.Warning)
	}
	// every record so far has been fed; detach the hook so that nothing
	// races the session_end
	l.cw.OnRecord(nil)
	cerr := l.cw.Err()
	if l.hw != nil && cerr == nil {
		cerr = l.hw.Err()
	}
	if sd.Incomplete != "" {
		failure = joinFailure(failure, sd.Incomplete)
	}
	if err := cerr; err != nil {
		failure = joinFailure(failure, "cassette: "+err.Error())
	}
	if err := l.d.Finish(eventlog.EndOptions{Signers: l.o.Signers, Failure: failure}); err != nil {
		l.result = fmt.Errorf("finish event log: %w", err)
		return l.result
	}
	if sd.Err != nil {
		l.result = sd.Err
	}
	return l.result
}

func joinFailure(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// counts returns the number of cassette records and event lines written.
func (l *Live) counts() (records, events int64) {
	records = l.cw.Count()
	if w := l.d.Writer(); w != nil {
		events = w.Count()
	}
	return records, events
}

// deriver returns the session's event deriver.
func (l *Live) deriver() *derive.Deriver { return l.d }

// recording says where the library path records a session, following
// agent-trace-witness 0.1.0's ATW_RECORD convention: ATW_RECORD=1 turns it
// on, ATW_RECORD_OUT names the folder, and without it a folder
// "witness-cassette-<UTC time>" in the working directory is used (0.1.0
// promised a default and wrote nothing).
func recording(getenv func(string) string, now time.Time) (dir string, on bool) {
	if getenv == nil || getenv("ATW_RECORD") != "1" {
		return "", false
	}
	if d := getenv("ATW_RECORD_OUT"); d != "" {
		return d, true
	}
	return "witness-cassette-" + now.UTC().Format("20060102T150405Z"), true
}

// DialOptions configure the library path: a live session that records to
// files only when ATW_RECORD=1 (or when Out is set).
type DialOptions struct {
	LiveOptions        // Cassette and Events are set by Dial
	Out         string // capture folder; default from Recording(getenv)
	// Force replaces an existing recording in the folder (never through a
	// symlink); without it Dial refuses one.
	Force bool
}

// Session is a live session opened by Dial; Close also closes its files.
type Session struct {
	*Live
	Dir   string // the capture folder, "" when not recording
	files []*os.File
}

// Dial opens a live session for library callers. With ATW_RECORD=1 (read
// through o.Getenv) or o.Out set, the cassette and event log are written to
// DIR/cassette.jsonl and DIR/events.jsonl; otherwise they are discarded.
func Dial(o DialOptions) (*Session, error) {
	if err := StdioSupported(); err != nil {
		return nil, err
	}
	dir := o.Out
	if dir == "" {
		dir, _ = recording(o.Getenv, time.Now())
	}
	s := &Session{Dir: dir}
	o.Cassette, o.Events = io.Discard, io.Discard
	if dir != "" {
		cf, ef, err := derive.CreateRecordingFiles(dir, atomicfile.Options{Flag: "ATW_RECORD_OUT", Force: o.Force})
		if err != nil {
			return nil, err
		}
		s.files = []*os.File{cf, ef}
		o.Cassette, o.Events = cf, ef
	}
	l, err := openLive(o.LiveOptions)
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	s.Live = l
	return s, nil
}

// Close ends the session, syncs its files (atomicfile.SyncLive) and closes
// them.
func (s *Session) Close() error {
	err := s.Live.Close()
	for _, f := range s.files {
		if serr := atomicfile.SyncLive(f); err == nil {
			err = serr
		}
	}
	if ferr := s.closeFiles(); err == nil {
		err = ferr
	}
	return err
}

func (s *Session) closeFiles() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
