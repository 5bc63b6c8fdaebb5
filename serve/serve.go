package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
)

// CodeMiss is the JSON-RPC error code of the answer to a request the
// cassette holds no answer for (in the implementation-defined server error
// range).
const CodeMiss = -32050

// wireLine is one recorded server line.
type wireLine struct {
	data    []byte
	partial bool
	line    int64 // cassette line number
}

// entry is one recorded host message and what the server sent in its turn.
type entry struct {
	kind     mcp.Kind
	key      Key
	id       json.RawMessage
	line     int64     // cassette line of the host message
	response *wireLine // requests: the server's answer, nil if it never came
	before   []wireLine
	after    []wireLine
	used     bool
}

// Script is a cassette prepared for serving.
type Script struct {
	Name     string
	prelude  []wireLine // server lines before the first host message
	requests map[Key][]*entry
	notes    map[Key][]*entry
	answers  map[string][]*entry // host responses to server requests, by exact id token
	all      []*entry
	redacted bool // the cassette's bytes were redacted before writing
}

// Redacted reports whether the cassette was redacted: its bytes are not
// what the server said, so serving it is refused unless allowed.
func (s *Script) Redacted() bool { return s.redacted }

// Load reads a cassette (name is used in messages) and prepares it.
// Invalid cassettes are reported with exit code Tampered.
func Load(r io.Reader, name string) (*Script, error) {
	cr, err := cassette.NewReader(r, name)
	if err != nil {
		return nil, exitcode.New(exitcode.Tampered, err, "serve reads cassettes written by 'witness proxy' or 'witness capture'")
	}
	s := &Script{Name: name, requests: map[Key][]*entry{}, notes: map[Key][]*entry{}, answers: map[string][]*entry{}}
	s.redacted = len(cr.Header().Redaction) > 0
	pending := map[string]*entry{}
	// Server lines that are not responses (notifications, server requests)
	// are anchored to what came just before them on the wire: after a
	// response, they follow that response; after a host message, they
	// belong to its turn (before its response while it is unanswered).
	var anchor *entry
	anchorAfter := false
	pieces := map[cassette.Dir][]byte{}
	for {
		rec, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, exitcode.New(exitcode.Tampered, err, "")
		}
		if rec.Life != "" || rec.Dir == cassette.Stderr {
			continue
		}
		if rec.Redacted {
			s.redacted = true
		}
		data := rec.Data
		if rec.Cont {
			pieces[rec.Dir] = append(pieces[rec.Dir], data...)
			continue
		}
		if p := pieces[rec.Dir]; p != nil {
			data = append(p, data...)
			delete(pieces, rec.Dir)
		}
		wl := wireLine{data: data, partial: rec.Partial, line: rec.Line}
		m, perr := mcp.Parse(data)
		if rec.Dir == cassette.C2S {
			if perr != nil {
				continue // the host's garbage: nothing to answer
			}
			e := &entry{kind: m.Kind, id: m.ID, line: rec.Line}
			switch m.Kind {
			case mcp.KindRequest, mcp.KindNotification:
				k, err := KeyOf(m)
				if err != nil {
					continue
				}
				e.key = k
				if m.Kind == mcp.KindRequest {
					pending[mcp.IDKey(m.ID)] = e
					s.requests[k] = append(s.requests[k], e)
				} else {
					s.notes[k] = append(s.notes[k], e)
				}
			case mcp.KindResponse:
				s.answers[mcp.IDKey(m.ID)] = append(s.answers[mcp.IDKey(m.ID)], e)
			}
			s.all = append(s.all, e)
			anchor, anchorAfter = e, m.Kind != mcp.KindRequest
			continue
		}
		if perr == nil && m.Kind == mcp.KindResponse {
			if e, ok := pending[mcp.IDKey(m.ID)]; ok {
				delete(pending, mcp.IDKey(m.ID))
				w := wl
				e.response = &w
				anchor, anchorAfter = e, true
				continue
			}
		}
		switch {
		case anchor == nil:
			s.prelude = append(s.prelude, wl)
		case anchorAfter:
			anchor.after = append(anchor.after, wl)
		default:
			anchor.before = append(anchor.before, wl)
		}
	}
	return s, nil
}

// Requests is the number of recorded host requests.
func (s *Script) Requests() int {
	n := 0
	for _, q := range s.requests {
		n += len(q)
	}
	return n
}

// Result says how a serve session went.
type Result struct {
	Served  int // requests answered from the cassette
	Misses  int // requests the cassette had no answer for
	Pings   int // pings answered without a recording
	Unused  int // recorded requests never asked for
	Ignored int // host notifications and answers not in the recording
}

// Options configure Serve.
type Options struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	MaxLine int // default mcp.DefaultMaxLine
	// RequireAll makes recorded requests never asked for an error too
	// (exit status 4), for runs that must replay the whole recording.
	RequireAll bool
}

// Serve answers the host on o.Stdin/o.Stdout from the script until the host
// closes stdin. Misses are answered with a JSON-RPC error and reported on
// o.Stderr; the returned error then carries exit code Incomplete.
func (s *Script) Serve(o Options) (*Result, error) {
	res := &Result{}
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(stderr, "witness: serve: "+format+"\n", args...)
	}
	var werr error
	write := func(data []byte, partial bool) {
		if werr != nil {
			return
		}
		b := make([]byte, 0, len(data)+1)
		b = append(b, data...)
		if !partial {
			b = append(b, '\n')
		}
		_, werr = o.Stdout.Write(b)
	}
	writeAll := func(ls []wireLine) {
		for _, l := range ls {
			write(l.data, l.partial)
		}
	}
	writeAll(s.prelude)
	lr := mcp.NewLineReader(o.Stdin, o.MaxLine)
	tooLong := false // inside a line longer than the maximum: its pieces are dropped
	for werr == nil {
		l, err := lr.Next()
		if err != nil {
			var tl *mcp.LineTooLongError
			if errors.Is(err, io.EOF) {
				break
			}
			if !errors.As(err, &tl) {
				return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: read stdin: %w", err), "")
			}
		}
		if l.More {
			tooLong = true
			continue
		}
		if tooLong {
			tooLong = false
			res.Misses++
			write(mcp.ErrorResponse(json.RawMessage("null"), -32600, fmt.Sprintf("witness serve: a request line longer than %s", mcp.FormatSize(lr.Max()))), false)
			say("miss: the host sent a line longer than %s; it was not read", mcp.FormatSize(lr.Max()))
			continue
		}
		s.handle(l.Bytes, res, write, writeAll, say)
	}
	if werr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: write stdout: %w", werr), "the host stopped reading")
	}
	for _, e := range s.all {
		if e.kind == mcp.KindRequest && !e.used {
			res.Unused++
		}
	}
	if res.Unused > 0 {
		say("%d recorded request(s) were not asked for", res.Unused)
	}
	if res.Misses > 0 {
		return res, exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d request(s) had no recorded answer in %s", res.Misses, s.Name),
			"the agent asked something the recording does not cover: re-record with 'witness proxy' against the real server")
	}
	if o.RequireAll && res.Unused > 0 {
		return res, exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d recorded request(s) in %s were never asked for", res.Unused, s.Name),
			"the run did less than the recording: drop --require-all, or re-record")
	}
	return res, nil
}

func (s *Script) handle(data []byte, res *Result, write func([]byte, bool), writeAll func([]wireLine), say func(string, ...any)) {
	m, err := mcp.Parse(data)
	if err != nil {
		res.Misses++
		id := json.RawMessage("null")
		if m != nil && m.ID != nil && m.Kind == mcp.KindInvalid && validID(m.ID) {
			id = m.ID
		}
		write(mcp.ErrorResponse(id, -32700, "witness serve: not a JSON-RPC message: "+err.Error()), false)
		say("miss: the host sent a line that is not a JSON-RPC message: %v: %s", err, preview(data))
		return
	}
	switch m.Kind {
	case mcp.KindRequest:
		k, kerr := KeyOf(m)
		if kerr == nil {
			for _, e := range s.requests[k] {
				if e.used {
					continue
				}
				e.used = true
				res.Served++
				writeAll(e.before)
				if e.response == nil {
					say("the recording has no answer to %s (cassette line %d): none is sent, as recorded", k.Method, e.line)
				} else if out, ok := mcp.ReplaceID(e.response.data, m.ID); ok {
					write(out, e.response.partial)
				} else {
					write(e.response.data, e.response.partial)
				}
				writeAll(e.after)
				return
			}
		}
		if m.Method == "ping" {
			res.Pings++
			write(mcp.Result(m.ID, json.RawMessage(`{}`)), false)
			return
		}
		res.Misses++
		s.miss(m, k, write, say)
	case mcp.KindNotification:
		k, kerr := KeyOf(m)
		if kerr == nil {
			for _, e := range s.notes[k] {
				if !e.used {
					e.used = true
					writeAll(e.after)
					return
				}
			}
		}
		res.Ignored++
		say("note: notification %s is not in the recording; ignored", m.Method)
	case mcp.KindResponse:
		for _, e := range s.answers[mcp.IDKey(m.ID)] {
			if !e.used {
				e.used = true
				writeAll(e.after)
				return
			}
		}
		res.Ignored++
		say("note: the host's response id %s answers no recorded server request; ignored", m.ID)
	}
}

// miss answers a request the script has no answer for and explains it.
func (s *Script) miss(m *mcp.Message, k Key, write func([]byte, bool), say func(string, ...any)) {
	write(mcp.ErrorResponse(m.ID, CodeMiss, fmt.Sprintf("witness serve: the cassette %s has no recorded answer for this %s request", s.Name, m.Method)), false)
	say("miss: no recorded answer for %s (id %s)", k.String(), m.ID)
	if same := s.requests[k]; len(same) > 0 {
		say("it was recorded %d time(s) and asked once more; repeated requests replay in recorded order, once each", len(same))
		return
	}
	best := s.nearest(k)
	if best == nil {
		say("the cassette holds no request at all")
		return
	}
	say("nearest recorded request (cassette line %d): %s", best.line, best.key.String())
	say("diff (-recorded +incoming):\n%s", requestDiff(best.key, k))
}

// nearest picks the recorded request most like k: same method first, then
// the shortest diff of params.
func (s *Script) nearest(k Key) *entry {
	var best *entry
	bestScore := -1
	checked := 0
	for _, e := range s.all {
		if e.kind != mcp.KindRequest {
			continue
		}
		checked++
		if checked > 2000 {
			break
		}
		score := diffScore(e.key, k)
		if e.key.Method != k.Method {
			score += 1 << 30
		}
		if best == nil || score < bestScore {
			best, bestScore = e, score
		}
	}
	return best
}

func validID(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'))
}

func preview(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q...", b[:200])
	}
	return fmt.Sprintf("%q", b)
}

// LoadFile loads a cassette file.
func LoadFile(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read cassette", err, "check the path given to --cassette")
	}
	defer f.Close()
	return Load(f, path)
}

// diffScore is the number of differing lines between two requests.
func diffScore(a, b Key) int {
	n := 0
	for _, l := range strings.Split(requestDiff(a, b), "\n") {
		if strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "- ") {
			n++
		}
	}
	return n
}
