package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/mcp"
)

// codeMiss is the JSON-RPC error code of the answer to a request the
// cassette holds no answer for (in the implementation-defined server error
// range).
const codeMiss = -32050

// wireLine is one recorded server line.
type wireLine struct {
	data    []byte
	partial bool
	line    int64 // cassette line number
}

// actKind is what one step of a turn does.
type actKind int

const (
	actWrite   actKind = iota // send a recorded server line as recorded
	actRespond                // send the recorded response, with the incoming id
	actAsk                    // send a recorded server request the host answered in the recording
	actAwait                  // wait for the host's answer to an actAsk and match it
)

// action is one step of a turn.
type action struct {
	kind actKind
	line wireLine
	ask  *ask // actAsk, actAwait
	// progress: an actWrite of a notifications/progress whose
	// progressToken is the one the turn's recorded request sent; it is
	// replayed with the token the host sent this time (see progressSpan).
	progress bool
}

// ask is a recorded request of the server to the host (sampling,
// elicitation, roots/list, ping) together with the host's recorded answer.
type ask struct {
	method     string
	key        key             // its method and params in match form, for the report
	id         json.RawMessage // the recorded id
	line       int64           // cassette line of the request
	answered   bool            // the recording holds the host's answer
	answer     answer          // the recorded answer, when answered
	answerLine int64
}

// entry is one recorded host message and its turn: what the server sent
// after it, in order, until the next host message (and, for a request, its
// response wherever it came), with the waits for the host's answers to the
// server's requests.
type entry struct {
	kind      mcp.Kind
	key       key
	id        json.RawMessage
	line      int64 // cassette line of the host message
	actions   []action
	responded bool // requests: the recording holds the server's answer
	used      bool
}

// Script is a cassette prepared for serving.
type Script struct {
	Name     string
	prelude  *entry // server lines before the first host message
	requests map[key][]*entry
	notes    map[key][]*entry
	answers  map[string][]*entry // host responses to no recorded server request, by exact id token
	all      []*entry
	redacted bool // the cassette's bytes were redacted before writing
	// SHA256 is the hex sha256 of the cassette's bytes.
	SHA256 string
}

// Redacted reports whether the cassette was redacted: its bytes are not
// what the server said, so serving it is refused unless allowed.
func (s *Script) Redacted() bool { return s.redacted }

// Load reads a cassette (name is used in messages) and prepares it.
// Invalid cassettes are reported with exit code Tampered.
func Load(r io.Reader, name string) (*Script, error) {
	h := sha256.New()
	cr, err := cassette.NewReader(io.TeeReader(r, h), name)
	if err != nil {
		return nil, exitcode.New(exitcode.Tampered, err, "serve reads cassettes written by 'witness proxy' or 'witness capture'")
	}
	s := &Script{Name: name, prelude: &entry{}, requests: map[key][]*entry{}, notes: map[key][]*entry{}, answers: map[string][]*entry{}}
	s.redacted = len(cr.Header().Redaction) > 0
	pending := map[string]*entry{}
	// Server requests still unanswered in the recording, by id token, and
	// the turn each was sent in.
	asks := map[string]*ask{}
	owner := map[*ask]*entry{}
	// Server lines that are not responses (notifications, server requests)
	// belong to a turn (docs/design/serve.md, "Turns"):
	//   - a progress notification to the recorded host request whose
	//     params._meta.progressToken it carries (tokens, open requests);
	//   - any other to the earliest host message still open: a request
	//     not yet answered, or a notification (or host answer) no request
	//     received after it has been answered since; a host that pipelines
	//     sends several messages before the server writes anything, and a
	//     server works through them in order; a sampling or elicitation
	//     request to the earliest open host request (ownerOf);
	//   - with none open, to anchor: the turn of the last host message, or
	//     of the request whose response came last, or of the line placed
	//     last. The host's answer to a server request continues the turn
	//     the request was sent in.
	anchor := s.prelude
	var open []*entry
	tokens := map[string]*entry{}
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
			if m.Kind == mcp.KindResponse {
				if a, ok := asks[mcp.IDKey(m.ID)]; ok {
					ans, err := answerOf(m)
					if err != nil {
						continue
					}
					delete(asks, mcp.IDKey(m.ID))
					a.answered, a.answer, a.answerLine = true, ans, rec.Line
					o := owner[a]
					o.actions = append(o.actions, action{kind: actAwait, ask: a})
					anchor = o
					continue
				}
			}
			e := &entry{kind: m.Kind, id: m.ID, line: rec.Line}
			switch m.Kind {
			case mcp.KindRequest, mcp.KindNotification:
				k, err := keyOf(m)
				if err != nil {
					continue
				}
				e.key = k
				if m.Kind == mcp.KindRequest {
					pending[mcp.IDKey(m.ID)] = e
					s.requests[k] = append(s.requests[k], e)
					if tok, ok := requestTokenOf(m.Params); ok {
						tokens[tok] = e
					}
				} else {
					s.notes[k] = append(s.notes[k], e)
				}
			case mcp.KindResponse:
				s.answers[mcp.IDKey(m.ID)] = append(s.answers[mcp.IDKey(m.ID)], e)
			}
			s.all = append(s.all, e)
			if len(open) == maxOpen {
				open = append(open[:0], open[1:]...) // a request never answered does not hold every later line
			}
			open = append(open, e)
			anchor = e
			continue
		}
		if perr == nil && m.Kind == mcp.KindResponse {
			if e, ok := pending[mcp.IDKey(m.ID)]; ok {
				delete(pending, mcp.IDKey(m.ID))
				e.actions = append(e.actions, action{kind: actRespond, line: wl})
				e.responded = true
				anchor = e
				open = closeTurn(open, e)
				for tok, te := range tokens {
					if te == e {
						delete(tokens, tok)
					}
				}
				continue
			}
		}
		if perr == nil && m.Kind == mcp.KindNotification && m.Method == mcp.NotificationProgress {
			if tok, ok := progressTokenOf(m.Params); ok && tokens[tok] != nil {
				e := tokens[tok]
				e.actions = append(e.actions, action{kind: actWrite, line: wl, progress: true})
				continue
			}
		}
		anchor = ownerOf(open, m, perr == nil, anchor)
		if perr == nil && m.Kind == mcp.KindRequest && !wl.partial {
			a := &ask{method: m.Method, id: m.ID, line: rec.Line}
			a.key, _ = keyOf(m)       // a key that cannot be made describes the request by its method only
			asks[mcp.IDKey(m.ID)] = a // a reused id: the later request is the one answered next
			owner[a] = anchor
			anchor.actions = append(anchor.actions, action{kind: actAsk, line: wl, ask: a})
			continue
		}
		anchor.actions = append(anchor.actions, action{kind: actWrite, line: wl})
	}
	io.Copy(h, r) // the digest covers the whole file, whatever the reader left
	s.SHA256 = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// ownerOf picks the turn of a server line that is neither a response nor
// a progress notification with a known token: the earliest open host
// message, except that a sampling or elicitation request goes to the
// earliest open host request (the protocol has servers make them while
// handling one: a tool that asks the user); with nothing fitting open, the
// anchor.
func ownerOf(open []*entry, m *mcp.Message, parsed bool, anchor *entry) *entry {
	inRequest := parsed && m.Kind == mcp.KindRequest && (m.Method == mcp.MethodSamplingCreateMessage || m.Method == mcp.MethodElicitationCreate)
	for _, e := range open {
		if !inRequest || e.kind == mcp.KindRequest {
			return e
		}
	}
	return anchor
}

// maxOpen bounds the open host messages Load keeps (requests a server
// never answers stay open), so that loading stays linear.
const maxOpen = 64

// closeTurn removes the answered request e from the open host messages,
// with the notifications and answers received before it: a server that
// answered e has read past them.
func closeTurn(open []*entry, e *entry) []*entry {
	at := -1
	for i, o := range open {
		if o == e {
			at = i
			break
		}
	}
	if at < 0 {
		return open
	}
	keep := open[:0]
	for i, o := range open {
		if i == at || (i < at && o.kind != mcp.KindRequest) {
			continue
		}
		keep = append(keep, o)
	}
	return keep
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
	Misses  int // requests the cassette had no answer for, and host answers that differed or never came
	Pings   int // pings answered without a recording
	Unused  int // recorded requests never asked for
	Ignored int // host notifications and answers not in the recording
	// Asked is the number of recorded server requests sent to the host
	// whose recorded answer was awaited; Matched of them were answered as
	// recorded, and Differed were answered otherwise, not in time or not at
	// all (each one also counts in Misses).
	Asked, Matched, Differed int
	// Unanswered counts server requests the host had not answered when it
	// closed stdin, whose answer held up no host request: the run did less
	// than the recording (an error only with RequireAll).
	Unanswered int
}

// Options configure Serve.
type Options struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	MaxLine int // default mcp.DefaultMaxLine
	// RequireAll makes recorded requests never asked for, and server
	// requests left unanswered, an error too (exit status 4), for runs that
	// must replay the whole recording.
	RequireAll bool
	// AnswerTimeout bounds the wait for the host's answer to a server
	// request (sampling, elicitation, roots/list, ping); a host that does
	// not answer in time is a miss. Zero waits until the host closes stdin.
	AnswerTimeout time.Duration
	// Report, when set, receives a drift report entry for every request
	// matched or missed and every host answer to a server request as it
	// happens, then the recorded requests never asked for and the end
	// record, whatever stops the session (see package drift).
	Report *drift.Writer
	// Signals stops the session as if the host had closed stdin: the
	// waits end, the report is finished and Serve returns its verdict.
	// The command passes SIGTERM, SIGINT and SIGHUP here.
	Signals <-chan os.Signal
}

// Serve answers the host on o.Stdin/o.Stdout from the script until the host
// closes stdin. Misses are answered with a JSON-RPC error and reported on
// o.Stderr; the returned error then carries exit code Incomplete.
//
// Stdin is read by a goroutine (so that the wait for a host's answer can
// time out); if Serve returns early because stdout failed, that goroutine
// ends with the read it is blocked in.
func (s *Script) Serve(o Options) (*Result, error) {
	ss := newSession(s, o)
	res := ss.res
	lr := mcp.NewLineReader(o.Stdin, o.MaxLine)
	type input struct {
		l   mcp.Line
		err error
	}
	lines := make(chan input)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			l, err := lr.Next()
			select {
			case lines <- input{l, err}:
			case <-done:
				return
			}
			var tl *mcp.LineTooLongError
			if err != nil && !errors.As(err, &tl) {
				return
			}
		}
	}()
	ss.start(s.prelude, nil)
	tooLong := false // inside a line longer than the maximum: its pieces are dropped
	var readErr error
	end := drift.End{Stop: drift.StopEOF}
loop:
	for ss.werr == nil {
		var timer *time.Timer
		var expire <-chan time.Time
		if next := ss.nextDeadline(); next != nil {
			timer = time.NewTimer(time.Until(next.deadline))
			expire = timer.C
		}
		var in input
		select {
		case <-expire:
			ss.expire(time.Now())
			continue
		case sig := <-o.Signals:
			if timer != nil {
				timer.Stop()
			}
			end = drift.End{Stop: drift.StopSignal, Signal: drift.SignalName(sig)}
			ss.say("stopped by %s", end.Signal)
			break loop
		case in = <-lines:
		}
		if timer != nil {
			timer.Stop()
		}
		l, err := in.l, in.err
		if err != nil {
			var tl *mcp.LineTooLongError
			if errors.Is(err, io.EOF) {
				break loop
			}
			if !errors.As(err, &tl) {
				readErr = err
				break loop
			}
		}
		if l.More {
			tooLong = true
			continue
		}
		if tooLong {
			tooLong = false
			res.Misses++
			why := fmt.Sprintf("the host sent a line longer than %s; it was not read", mcp.FormatSize(lr.Max()))
			ss.write(mcp.ErrorResponse(json.RawMessage("null"), -32600, fmt.Sprintf("witness serve: a request line longer than %s", mcp.FormatSize(lr.Max()))), false)
			ss.say("miss: %s", why)
			ss.report(drift.Entry{Status: drift.Missed, Kind: drift.KindLine, Incoming: drift.DescribeLine(l.Bytes), Reason: why})
			continue
		}
		ss.handle(l.Bytes)
	}
	if readErr != nil {
		end = drift.End{Stop: drift.StopStdin, Error: readErr.Error()}
	} else if ss.werr != nil {
		end = drift.End{Stop: drift.StopStdout, Error: ss.werr.Error()}
	}
	ss.closed()
	for _, e := range s.all {
		if e.kind == mcp.KindRequest && !e.used {
			res.Unused++
			ss.report(drift.Entry{Status: drift.NeverAsked, Kind: drift.KindRequest, Recorded: drift.Describe(e.key.Method, e.key.Params, e.line),
				Reason: "recorded, and never asked for in this run"})
		}
	}
	ss.finishReport(end)
	if readErr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: read stdin: %w", readErr), "")
	}
	if ss.werr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("serve: write stdout: %w", ss.werr), "the host stopped reading")
	}
	if res.Unused > 0 {
		ss.say("%d recorded request(s) were not asked for", res.Unused)
	}
	if res.Misses > 0 {
		return res, missError(res, s.Name)
	}
	if o.RequireAll && res.Unused > 0 {
		return res, exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d recorded request(s) in %s were never asked for", res.Unused, s.Name),
			"the run did less than the recording: drop --require-all, or re-record")
	}
	if o.RequireAll && res.Unanswered > 0 {
		return res, exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d server request(s) recorded in %s were left unanswered by the host", res.Unanswered, s.Name),
			"the run did less than the recording: drop --require-all, or re-record")
	}
	if err := ss.reportErr(); err != nil {
		return res, err
	}
	return res, nil
}

// missError is the exit-4 error of a run with misses.
func missError(res *Result, name string) error {
	requests := res.Misses - res.Differed
	switch {
	case res.Differed == 0:
		return exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d request(s) had no recorded answer in %s", requests, name),
			"the agent asked something the recording does not cover: re-record with 'witness proxy' against the real server")
	case requests == 0:
		return exitcode.New(exitcode.Incomplete,
			fmt.Errorf("%d host answer(s) to server requests differ from %s or never came", res.Differed, name),
			"the host answered a request of the server (sampling, elicitation, roots/list, ping) otherwise than recorded, or not at all: make the host answer the same, or re-record")
	}
	return exitcode.New(exitcode.Incomplete,
		fmt.Errorf("%d request(s) had no recorded answer and %d host answer(s) to server requests differ from %s or never came", requests, res.Differed, name),
		"the run does not follow the recording: re-record with 'witness proxy' against the real server")
}

// miss answers a request the script has no answer for and explains it.
func (ss *serving) miss(m *mcp.Message, k key) {
	s := ss.s
	ss.write(mcp.ErrorResponse(m.ID, codeMiss, fmt.Sprintf("witness serve: the cassette %s has no recorded answer for this %s request", s.Name, m.Method)), false)
	ss.say("miss: no recorded answer for %s (id %s)", k.String(), m.ID)
	entry := drift.Entry{Status: drift.Missed, Kind: drift.KindRequest, Incoming: drift.Describe(k.Method, k.Params, 0), ID: string(m.ID)}
	defer func() { ss.report(entry) }()
	if same := s.requests[k]; len(same) > 0 {
		ss.say("it was recorded %d time(s) and asked once more; repeated requests replay in recorded order, once each", len(same))
		last := same[len(same)-1]
		entry.Reason = fmt.Sprintf("recorded %d time(s) and asked once more", len(same))
		entry.Nearest = drift.Describe(last.key.Method, last.key.Params, last.line)
		return
	}
	best := s.nearest(k)
	if best == nil {
		ss.say("the cassette holds no request at all")
		entry.Reason = "no recorded answer; the cassette holds no request at all"
		return
	}
	diff := requestDiff(best.key, k)
	ss.say("nearest recorded request (cassette line %d): %s", best.line, best.key.String())
	ss.say("diff (-recorded +incoming):\n%s", diff)
	entry.Reason = "no recorded answer for this request"
	entry.Nearest = drift.Describe(best.key.Method, best.key.Params, best.line)
	entry.Diff = diff
}

// nearest picks the recorded request most like k: same method first, then
// the shortest diff of params.
func (s *Script) nearest(k key) *entry {
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
func diffScore(a, b key) int {
	n := 0
	for _, l := range strings.Split(requestDiff(a, b), "\n") {
		if strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "- ") {
			n++
		}
	}
	return n
}
