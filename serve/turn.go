package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agent-trace-witness/witness/drift"
	"github.com/agent-trace-witness/witness/mcp"
)

// serving is the state of one Serve call: the turns being replayed and the
// server requests waiting for the host's answer.
type serving struct {
	s       *Script
	o       Options
	res     *Result
	stderr  io.Writer
	werr    error
	waiting map[string]*sent // sent server requests not yet answered, by the id token sent
	order   []*sent          // every awaited server request, in the order sent
	fresh   int              // fresh ids handed out
	// reportFailed: the drift report could not be written; no more tries
	reportFailed bool
}

// run is one turn being replayed: the recorded host message it answers,
// the incoming request id, and how far it got.
type run struct {
	e         *entry
	id        json.RawMessage // the incoming id (requests)
	method    string
	pc        int             // next action
	sent      map[*ask]*sent  // the turn's server requests sent so far
	blocked   bool            // stopped at an actAwait
	responded bool            // the host request was answered (as recorded or with a miss)
	aborted   bool            // a host answer differed: the rest of the turn is not replayed
	token     json.RawMessage // the progressToken the host sent with its request, nil when none
	dropped   int             // recorded progress notifications not sent: the host asked for none
}

// sent is a recorded server request sent to the host, waiting for its
// answer.
type sent struct {
	a        *ask
	r        *run
	id       json.RawMessage // the id sent (the recorded one unless it was in use)
	deadline time.Time
	done     bool // answered, timed out, or given up
}

func newSession(s *Script, o Options) *serving {
	ss := &serving{s: s, o: o, res: &Result{}, stderr: o.Stderr, waiting: map[string]*sent{}}
	if ss.stderr == nil {
		ss.stderr = io.Discard
	}
	return ss
}

func (ss *serving) say(format string, args ...any) {
	fmt.Fprintf(ss.stderr, "witness: serve: "+format+"\n", args...)
}

func (ss *serving) write(data []byte, partial bool) {
	if ss.werr != nil {
		return
	}
	b := make([]byte, 0, len(data)+1)
	b = append(b, data...)
	if !partial {
		b = append(b, '\n')
	}
	_, ss.werr = ss.o.Stdout.Write(b)
}

// start replays the turn of a recorded host message; id is the incoming
// request id (nil for notifications, host answers and the prelude).
func (ss *serving) start(e *entry, m *mcp.Message) {
	r := &run{e: e, sent: map[*ask]*sent{}}
	if m != nil {
		r.id, r.method = m.ID, m.Method
		if tok, ok := requestTokenOf(m.Params); ok {
			r.token = json.RawMessage(tok)
		}
	}
	ss.advance(r)
}

// advance performs the turn's actions until it ends or must wait for the
// host's answer to a server request.
func (ss *serving) advance(r *run) {
	r.blocked = false
	for ; r.pc < len(r.e.actions) && !r.aborted; r.pc++ {
		act := r.e.actions[r.pc]
		switch act.kind {
		case actWrite:
			if act.progress {
				ss.progress(r, act)
				continue
			}
			ss.write(act.line.data, act.line.partial)
		case actRespond:
			if r.responded {
				continue
			}
			r.responded = true
			if out, ok := mcp.ReplaceID(act.line.data, r.id); ok {
				ss.write(out, act.line.partial)
			} else {
				ss.write(act.line.data, act.line.partial)
			}
		case actAsk:
			ss.ask(r, act)
		case actAwait:
			p := r.sent[act.ask]
			if p == nil || p.done {
				continue // answered as recorded already (a differing answer aborts the turn)
			}
			r.blocked = true
			return
		}
	}
}

// progress sends a recorded progress notification of the turn's request
// with the token the host sent this time. A host that sent no token asked
// for no progress (the protocol lets a server send progress only for a
// token it was given), so the notification is not sent, with a note.
func (ss *serving) progress(r *run, act action) {
	if r.token == nil {
		if r.dropped++; r.dropped == 1 {
			ss.say("note: the %s request (id %s) has no progressToken; its recorded progress notifications (cassette line %d) are not sent", r.method, r.id, act.line.line)
		}
		return
	}
	if out, ok := withToken(act.line.data, r.token); ok {
		ss.write(out, act.line.partial)
		return
	}
	ss.write(act.line.data, act.line.partial)
}

// ask sends a recorded server request. One the host answered in the
// recording is awaited: it keeps its recorded id unless a request sent
// earlier with that id is still waiting, then it gets a fresh one.
func (ss *serving) ask(r *run, act action) {
	a := act.ask
	if !a.answered {
		ss.write(act.line.data, act.line.partial)
		return
	}
	id := a.id
	data := act.line.data
	if _, busy := ss.waiting[mcp.IDKey(id)]; busy {
		for {
			ss.fresh++
			id = json.RawMessage(strconv.Quote("witness-serve-" + strconv.Itoa(ss.fresh)))
			if _, busy := ss.waiting[mcp.IDKey(id)]; !busy {
				break
			}
		}
		if out, ok := mcp.ReplaceID(data, id); ok {
			data = out
		}
	}
	p := &sent{a: a, r: r, id: id}
	if ss.o.AnswerTimeout > 0 {
		p.deadline = time.Now().Add(ss.o.AnswerTimeout)
	}
	ss.waiting[mcp.IDKey(id)] = p
	ss.order = append(ss.order, p)
	r.sent[a] = p
	ss.res.Asked++
	ss.write(data, act.line.partial)
}

// answer takes the host's response to a sent server request and matches it
// against the recorded answer.
func (ss *serving) answer(p *sent, m *mcp.Message) {
	delete(ss.waiting, mcp.IDKey(p.id))
	p.done = true
	got, err := answerOf(m)
	if err != nil {
		ss.differ(p, fmt.Sprintf("the host's answer to the server's %s request (id %s) cannot be read: %v", p.a.method, p.id, err), answerDetail{})
		return
	}
	if got == p.a.answer {
		ss.res.Matched++
		ss.report(drift.Entry{Status: drift.Matched, Kind: drift.KindAnswer, Recorded: askOf(p.a), Turn: turnOf(p.r.e), ID: string(p.id)})
		if p.r.blocked && !p.r.aborted {
			ss.advance(p.r)
		}
		return
	}
	ss.differ(p, fmt.Sprintf("the host's answer to the server's %s request (id %s) differs from the recorded answer (cassette line %d)", p.a.method, p.id, p.a.answerLine),
		answerDetail{recorded: p.a.answer.String(), host: got.String(), diff: answerDiff(p.a.answer, got)})
}

// answerDetail is what differs between a recorded answer and the host's.
type answerDetail struct{ recorded, host, diff string }

// differ reports a host answer that is not the recorded one (or none) as a
// miss: the host request whose turn sent the server request gets a
// JSON-RPC error, and the rest of the turn is not replayed.
func (ss *serving) differ(p *sent, why string, d answerDetail) {
	ss.res.Misses++
	ss.res.Differed++
	r := p.r
	who := "turn before the first host message"
	if r.e.kind == mcp.KindRequest {
		who = fmt.Sprintf("%s request (id %s)", r.method, r.id)
	} else if r.e.kind != "" {
		who = fmt.Sprintf("turn of %s (cassette line %d)", r.e.key.Method, r.e.line)
	}
	ss.say("miss: %s, in the %s", why, who)
	if d.recorded != "" {
		ss.say("recorded answer: %s", d.recorded)
		ss.say("host answer:     %s", d.host)
		ss.say("diff (-recorded +incoming):\n%s", d.diff)
	}
	ss.report(drift.Entry{Status: drift.AnswerDiffered, Kind: drift.KindAnswer, Recorded: askOf(p.a), Turn: turnOf(r.e), ID: string(p.id),
		Reason: why, RecordedAnswer: d.recorded, HostAnswer: d.host, Diff: d.diff})
	if r.aborted {
		return
	}
	r.aborted = true
	if r.e.kind == mcp.KindRequest && !r.responded {
		r.responded = true
		ss.write(mcp.ErrorResponse(r.id, codeMiss, fmt.Sprintf("witness serve: the cassette %s cannot answer this %s request: %s", ss.s.Name, r.method, why)), false)
	}
	// the turn's other server requests are no longer waited for
	for _, q := range ss.order {
		if q.r == r && !q.done {
			q.done = true
			delete(ss.waiting, mcp.IDKey(q.id))
		}
	}
}

// nextDeadline returns the waiting server request that times out first.
func (ss *serving) nextDeadline() *sent {
	if ss.o.AnswerTimeout <= 0 {
		return nil
	}
	var first *sent
	for _, p := range ss.order {
		if !p.done && (first == nil || p.deadline.Before(first.deadline)) {
			first = p
		}
	}
	return first
}

// expire gives up on the server requests whose answer is overdue.
func (ss *serving) expire(now time.Time) {
	for _, p := range ss.order {
		if !p.done && !now.Before(p.deadline) {
			delete(ss.waiting, mcp.IDKey(p.id))
			p.done = true
			ss.differ(p, fmt.Sprintf("the host did not answer the server's %s request (id %s) within %s", p.a.method, p.id, ss.o.AnswerTimeout), answerDetail{recorded: p.a.answer.String()})
		}
	}
	ss.compact()
}

// closed ends the waits for the host's answers when the host closed stdin.
// A server request that holds up the answer to a host request is a miss:
// the host's request could not be answered as recorded. Any other (roots/list
// after initialized, a request after the response) means the run did less
// than the recording, like a recorded request never asked for: counted in
// Unanswered.
func (ss *serving) closed() {
	for _, p := range ss.order {
		if p.done {
			continue
		}
		delete(ss.waiting, mcp.IDKey(p.id))
		p.done = true
		if p.r.e.kind == mcp.KindRequest && !p.r.responded && !p.r.aborted {
			ss.differ(p, fmt.Sprintf("the host closed its input without answering the server's %s request (id %s)", p.a.method, p.id), answerDetail{recorded: p.a.answer.String()})
			continue
		}
		ss.res.Unanswered++
		ss.say("note: the host closed its input without answering the server's %s request (id %s, cassette line %d)", p.a.method, p.id, p.a.line)
		ss.report(drift.Entry{Status: drift.NeverAsked, Kind: drift.KindAnswer, Recorded: askOf(p.a), Turn: turnOf(p.r.e), ID: string(p.id),
			Reason: "the host never answered this recorded server request", RecordedAnswer: p.a.answer.String()})
	}
}

// compact drops finished requests from the send order.
func (ss *serving) compact() {
	keep := ss.order[:0]
	for _, p := range ss.order {
		if !p.done {
			keep = append(keep, p)
		}
	}
	ss.order = keep
}

// handle answers one host line.
func (ss *serving) handle(data []byte) {
	s, res := ss.s, ss.res
	m, err := mcp.Parse(data)
	if err != nil {
		res.Misses++
		id := json.RawMessage("null")
		if m != nil && m.ID != nil && m.Kind == mcp.KindInvalid && validID(m.ID) {
			id = m.ID
		}
		ss.write(mcp.ErrorResponse(id, -32700, "witness serve: not a JSON-RPC message: "+err.Error()), false)
		ss.say("miss: the host sent a line that is not a JSON-RPC message: %v: %s", err, preview(data))
		ss.report(drift.Entry{Status: drift.Missed, Kind: drift.KindLine, Incoming: drift.DescribeLine(data), Reason: "not a JSON-RPC message: " + err.Error()})
		return
	}
	switch m.Kind {
	case mcp.KindRequest:
		k, kerr := keyOf(m)
		if kerr == nil {
			for _, e := range s.requests[k] {
				if e.used {
					continue
				}
				e.used = true
				res.Served++
				ss.report(drift.Entry{Status: drift.Matched, Kind: drift.KindRequest, Recorded: drift.Describe(e.key.Method, e.key.Params, e.line), ID: string(m.ID)})
				if !e.responded {
					ss.say("the recording has no answer to %s (cassette line %d): none is sent, as recorded", k.Method, e.line)
				}
				ss.start(e, m)
				return
			}
		}
		if m.Method == mcp.MethodPing {
			res.Pings++
			ss.write(mcp.Result(m.ID, json.RawMessage(`{}`)), false)
			return
		}
		res.Misses++
		ss.miss(m, k)
	case mcp.KindNotification:
		k, kerr := keyOf(m)
		if kerr == nil {
			for _, e := range s.notes[k] {
				if !e.used {
					e.used = true
					ss.start(e, nil)
					return
				}
			}
		}
		res.Ignored++
		ss.say("note: notification %s is not in the recording; ignored", m.Method)
	case mcp.KindResponse:
		if p, ok := ss.waiting[mcp.IDKey(m.ID)]; ok {
			ss.answer(p, m)
			ss.compact()
			return
		}
		for _, e := range s.answers[mcp.IDKey(m.ID)] {
			if !e.used {
				e.used = true
				ss.start(e, nil)
				return
			}
		}
		res.Ignored++
		ss.say("note: the host's response id %s answers no recorded server request still waiting; ignored", m.ID)
	}
}
