package drift

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agent-trace-witness/witness/mcp"
)

// Format and Version name the report format in its header line.
const (
	format  = "witness-drift-report"
	version = 1
)

// Limits of what one entry carries, so that every report line stays small
// whatever the host sent: a preview is cut at MaxPreview bytes and a diff
// at MaxDiff bytes (both at a UTF-8 boundary, marked as cut).
const (
	MaxPreview = 160
	maxDiff    = 32 << 10
	// maxLine bounds a report line on reading; Writer never writes a
	// longer one.
	maxLine = 1 << 20
)

// Status is what became of one recorded request, incoming request or host
// answer.
type Status string

// The statuses of an entry.
const (
	// Matched: a recorded host request was asked and answered from the
	// cassette, or the host answered a recorded server request as recorded.
	Matched Status = "matched"
	// Missed: the host asked something the cassette has no answer for
	// (also a line that is not a JSON-RPC message, or too long to read).
	Missed Status = "missed"
	// NeverAsked: a recorded host request the host never made, or a
	// recorded server request the host never answered while nothing waited
	// on the answer (the run did less than the recording).
	NeverAsked Status = "never_asked"
	// AnswerDiffered: the host answered a recorded server request
	// (sampling, elicitation, roots/list, ping) otherwise than recorded,
	// not in time, or not at all while its own request waited on it.
	AnswerDiffered Status = "answer_differed"
)

// statuses lists every status, in the order counts are shown.
var statuses = []Status{Matched, Missed, NeverAsked, AnswerDiffered}

// Kind says what an entry is about.
type Kind string

// The kinds of an entry.
const (
	KindRequest Kind = "request" // a request of the host
	KindAnswer  Kind = "answer"  // the host's answer to a recorded server request
	KindLine    Kind = "line"    // a host line that is not a JSON-RPC message, or too long
)

// Stop says why serve stopped.
type Stop string

// The stop reasons of an end record.
const (
	StopEOF    Stop = "eof"    // the host closed serve's input
	StopSignal Stop = "signal" // SIGTERM, SIGINT or SIGHUP (Signal names it)
	StopStdout Stop = "stdout" // writing to the host failed (it stopped reading)
	StopStdin  Stop = "stdin"  // reading from the host failed
	StopFailed Stop = "failed" // serve could not start (Error says why): nothing was served
	// StopExitAfter: an HTTP serve answered the --exit-after number of
	// requests.
	StopExitAfter Stop = "exit_after"
)

var stops = []Stop{StopEOF, StopSignal, StopStdout, StopStdin, StopFailed, StopExitAfter}

// Header is the first line of a report.
type Header struct {
	Format   string       `json:"format"`
	V        int          `json:"v"`
	Cassette Cassette     `json:"cassette"`
	Serve    ServeOptions `json:"serve"`
	// Requests is the number of host requests recorded in the cassette.
	Requests int `json:"requests"`
}

// Cassette names the recording a serve answered from.
type Cassette struct {
	Name   string `json:"name"`             // as given to --cassette
	SHA256 string `json:"sha256,omitempty"` // of the file's bytes; absent when serve could not read it
}

// ServeOptions are the options of the serve that wrote a report.
type ServeOptions struct {
	Transport     string `json:"transport"`         // "stdio" or "http"
	Address       string `json:"address,omitempty"` // http: the address listened on
	RequireAll    bool   `json:"require_all"`
	AllowRedacted bool   `json:"allow_redacted"`
	AnswerTimeout string `json:"answer_timeout"` // a Go duration; "0s" waits until the host closes its input
}

// Message describes a request (or server request) without its whole
// params: method, the tool, prompt or resource it names, and the sha256
// and a short preview of its params in the form requests are matched on.
type Message struct {
	Line   int64  `json:"line,omitempty"` // cassette line (recorded messages)
	Method string `json:"method,omitempty"`
	Tool   string `json:"tool,omitempty"`   // tools/call
	Prompt string `json:"prompt,omitempty"` // prompts/get
	URI    string `json:"uri,omitempty"`    // resources/read, resources/subscribe, ...
	// ParamsSHA256 is the sha256 of the params in match form (volatile
	// members removed, members sorted, numbers as their exact tokens);
	// absent when the message has no params.
	ParamsSHA256 string `json:"params_sha256,omitempty"`
	Preview      string `json:"preview,omitempty"` // the params in match form, or a line's bytes, cut at MaxPreview
}

// Entry is one report line between the header and the end.
type Entry struct {
	N      int    `json:"n"` // 1, 2, ... in the order written
	Status Status `json:"status"`
	Kind   Kind   `json:"kind"`
	// Recorded is the recorded host request (request) or the recorded
	// server request (answer).
	Recorded *Message `json:"recorded,omitempty"`
	// Incoming is the host's request or line (missed).
	Incoming *Message `json:"incoming,omitempty"`
	// ID is the JSON-RPC id the host sent, as its JSON text.
	ID string `json:"id,omitempty"`
	// Turn is the recorded host request whose turn sent the server request
	// (answer; absent for the turn before the first host message).
	Turn *Message `json:"turn,omitempty"`
	// Reason says in one sentence why the entry is not matched.
	Reason string `json:"reason,omitempty"`
	// Nearest is the recorded request most like a missed one.
	Nearest *Message `json:"nearest,omitempty"`
	// RecordedAnswer and HostAnswer are the answers to a server request,
	// in match form ("result {...}" or "error {...}").
	RecordedAnswer string `json:"recorded_answer,omitempty"`
	HostAnswer     string `json:"host_answer,omitempty"`
	// Diff is the line diff, "-" recorded and "+" incoming, cut at MaxDiff.
	Diff string `json:"diff,omitempty"`
}

// End is the last line of a report written by a serve that stopped.
type End struct {
	Stop   Stop   `json:"stop"`
	Signal string `json:"signal,omitempty"` // StopSignal: SIGTERM, SIGINT or SIGHUP
	Error  string `json:"error,omitempty"`  // StopFailed, StopStdout, StopStdin: what failed
	// Entries is the number of entry lines before the end.
	Entries int `json:"entries"`
	// Counts is the number of entries of each status.
	Counts Counts `json:"counts"`
}

// Counts are the entries of each status.
type Counts struct {
	Matched        int `json:"matched"`
	Missed         int `json:"missed"`
	NeverAsked     int `json:"never_asked"`
	AnswerDiffered int `json:"answer_differed"`
}

func (c *Counts) add(s Status) {
	switch s {
	case Matched:
		c.Matched++
	case Missed:
		c.Missed++
	case NeverAsked:
		c.NeverAsked++
	case AnswerDiffered:
		c.AnswerDiffered++
	}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d matched, %d missed, %d never_asked, %d answer_differed", c.Matched, c.Missed, c.NeverAsked, c.AnswerDiffered)
}

// Writer writes a report as it happens: each record is one line handed to
// the underlying writer in one Write call, so a process killed between two
// records leaves whole lines (and at worst no end record). It is safe for
// concurrent use (an HTTP serve answers requests in parallel). The first
// write error sticks: later records are dropped and Err returns it.
type Writer struct {
	parent *Writer // a Sub writer's
	mu     sync.Mutex
	w      io.Writer
	n      int
	counts Counts
	ended  bool
	err    error
}

// NewWriter writes the header h (Format and V are filled in) to w and
// returns a Writer for the entries.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format, h.V = format, version
	rw := &Writer{w: w}
	rw.line(h)
	return rw, rw.err
}

// Sub returns a Writer whose entries go to w and whose Close writes
// nothing: one serve session of several (MCP over HTTP) writes its entries
// through its own Sub, and the serve closes w once when it stops.
func (w *Writer) Sub() *Writer { return &Writer{parent: w} }

// Entry writes one entry; N is set here. Previews and diffs are cut to
// their limits.
func (w *Writer) Entry(e Entry) error {
	if w.parent != nil {
		w.mu.Lock()
		ended := w.ended
		w.mu.Unlock()
		if ended {
			return fmt.Errorf("drift report: entry after the end")
		}
		return w.parent.Entry(e)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return fmt.Errorf("drift report: entry after the end")
	}
	w.n++
	e.N = w.n
	for _, m := range []*Message{e.Recorded, e.Incoming, e.Turn, e.Nearest} {
		if m != nil {
			m.Preview = Cut(m.Preview, MaxPreview)
		}
	}
	e.Diff = Cut(e.Diff, maxDiff)
	e.RecordedAnswer = Cut(e.RecordedAnswer, maxDiff/4)
	e.HostAnswer = Cut(e.HostAnswer, maxDiff/4)
	e.Reason = Cut(e.Reason, maxDiff/4)
	w.counts.add(e.Status)
	w.line(struct {
		Record string `json:"record"`
		Entry
	}{"entry", e})
	return w.err
}

// Close writes the end record with the counts of the entries written.
// Later calls do nothing.
func (w *Writer) Close(e End) error {
	if w.parent != nil {
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
		return w.parent.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return w.err
	}
	w.ended = true
	e.Entries, e.Counts = w.n, w.counts
	e.Error = Cut(e.Error, maxDiff/4)
	w.line(struct {
		Record string `json:"record"`
		End
	}{"end", e})
	return w.err
}

// Err returns the first write error.
func (w *Writer) Err() error {
	if w.parent != nil {
		return w.parent.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) line(v any) {
	if w.err != nil {
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = fmt.Errorf("drift report: %w", err)
		return
	}
	if _, err := w.w.Write(b.Bytes()); err != nil {
		w.err = fmt.Errorf("drift report: %w", err)
	}
}

// Describe returns the Message of a request given its method and its params
// in match form ("" when it has none); line is its cassette line (0 for an
// incoming request).
func Describe(method, params string, line int64) *Message {
	m := &Message{Line: line, Method: method}
	if params == "" {
		return m
	}
	sum := sha256.Sum256([]byte(params))
	m.ParamsSHA256 = hex.EncodeToString(sum[:])
	m.Preview = Cut(params, MaxPreview)
	var p struct {
		Name json.RawMessage `json:"name"`
		URI  json.RawMessage `json:"uri"`
	}
	if json.Unmarshal([]byte(params), &p) == nil {
		name, uri := str(p.Name), str(p.URI)
		switch method {
		case mcp.MethodToolsCall:
			m.Tool = name
		case mcp.MethodPromptsGet:
			m.Prompt = name
		}
		m.URI = uri
	}
	m.Tool, m.Prompt, m.URI = Cut(m.Tool, MaxPreview), Cut(m.Prompt, MaxPreview), Cut(m.URI, MaxPreview)
	return m
}

// DescribeLine returns the Message of a host line that is not a JSON-RPC
// message: a preview of its bytes, as a Go-quoted string when it is not
// valid UTF-8.
func DescribeLine(data []byte) *Message {
	p := string(data)
	if !utf8.Valid(data) {
		p = strconv.Quote(p)
	}
	return &Message{Preview: Cut(p, MaxPreview)}
}

func str(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// Cut returns s cut to at most max bytes at a UTF-8 boundary, with " …"
// and the number of bytes left out appended when it was cut. Invalid UTF-8
// becomes U+FFFD.
func Cut(s string, max int) string {
	s = toValidUTF8(s)
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf(" … (%d more bytes)", len(s)-i)
}

func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}
