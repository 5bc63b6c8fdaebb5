package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// eventOptions control the checks of an event log.
type eventOptions struct {
	// EndVerifier checks the session_end signatures (a keyring); nil leaves
	// them unchecked, which makes the log's completeness unproven.
	EndVerifier eventlog.SignatureVerifier
	// AllowUnsigned reports an unsigned or untrusted session_end as a notice
	// instead of an incomplete finding.
	AllowUnsigned bool
	// MaxChainFindings caps the chain findings listed (default 100); the
	// others are counted in one notice.
	MaxChainFindings int
	// GraphDigest also streams the log into its canonical N-Quads
	// (graph.StreamNQuads, the seal as plan) and records their sha256, the
	// digest 'witness graph --events FILE --seal SEAL' prints. A log that
	// does not map to a graph (an invalid line) gets no digest.
	GraphDigest bool
	// GraphOptions, when set, replace the graph options of GraphDigest
	// (the seal as plan, payloads kept): to check a graph file written
	// with another plan or --no-payloads against the log.
	GraphOptions *graph.Options
	// IntegrityOnly checks the chain, the signed end and the end reasons
	// only (no seal was given): the events are not judged against plan,
	// and the graph digest is that of the log's graph without a seal.
	IntegrityOnly bool
	// Tap, when set, receives the log's lines as they are decoded
	// (Options.Tap).
	Tap *Tap
}

// Tap receives what verify reads of Options.EventsFile, in order, as it
// decodes it (one read and one decode of each line), so that a caller that
// needs the same events (the report's page and graph stream) does not read
// and decode the log again. The events are the ones verify checks (Wire
// decoded too, as eventlog.Reader.SetFastWhole gives it): a tap reads them,
// never changes them, and may keep them. The calls run on verify's
// goroutine, so a tap that does more than a little hands them on (EventFeed).
// Nothing is called when verify does not read the log (an unusable seal,
// a file that cannot be opened).
type Tap struct {
	// Event is called with each line that is an event.
	Event func(line int64, ev *eventlog.Event)
	// ParseError is called with each line that is not: its bytes (nil
	// for a line too long; valid during the call only), whether it is the
	// cut-off last line, and eventlog.Reader's error for it.
	ParseError func(line int64, raw []byte, partial bool, err *eventlog.ParseError)
}

// checkEvents judges the event log read from rd (named name in findings)
// against plan and adds its findings to r. The log is read and decoded once:
// eventlog.VerifyLog checks the hash chain and the signed end and hands every
// line that parsed to the checks against the seal (VerifyLogOptions.OnEvent);
// with GraphDigest the same events also stream, in batches to another
// goroutine, into the canonical N-Quads of the log's graph. Memory is bounded by the longest
// line, one byte per event for the chain's link checks, one small entry per
// call of a scoped tool, and the graph stream's bounded runs. rd may be a
// pipe (stdin).
func checkEvents(r *Report, plan Plan, name string, rd io.Reader, opts eventOptions) error {
	r.Evidence.Kind = "events"
	r.Evidence.File = name
	max := opts.MaxChainFindings
	if max <= 0 {
		max = 100
	}

	// the graph digest's stream is fed the events VerifyLog decoded (one
	// decode per line), in batches, until the first line that is not an
	// event: there a reader of the log stops too, and the log gets no
	// digest
	var feed *EventFeed
	gdone := make(chan string, 1)
	if opts.GraphDigest {
		feed = NewEventFeed()
		gopts := GraphOptionsFor(plan)
		if opts.IntegrityOnly {
			gopts = graph.Options{}
		}
		if opts.GraphOptions != nil {
			gopts = *opts.GraphOptions
		}
		go func() {
			st, err := graph.StreamNQuads(feed, io.Discard, gopts, graph.StreamOptions{})
			// the stream may stop early on an event it cannot map; keep
			// draining so the chain pass never blocks
			feed.Drain()
			if err != nil {
				gdone <- ""
				return
			}
			gdone <- st.Digest
		}()
	}

	c := newChecker(plan, name)
	var watch *revokeWatch
	var verifier eventlog.SignatureVerifier
	if opts.EndVerifier != nil {
		watch = &revokeWatch{v: opts.EndVerifier}
		verifier = watch
	}
	revokedEnds := map[int64]bool{}
	var onParseError func(int64, *eventlog.ParseError)
	if feed != nil {
		onParseError = func(_ int64, perr *eventlog.ParseError) { feed.Fail(perr) }
	}
	var onUnparsed func(int64, []byte, bool, *eventlog.ParseError)
	if opts.Tap != nil && opts.Tap.ParseError != nil {
		onUnparsed = opts.Tap.ParseError
	}
	tapEvent := func(int64, *eventlog.Event) {}
	if opts.Tap != nil && opts.Tap.Event != nil {
		tapEvent = opts.Tap.Event
	}
	lr, lerr := eventlog.VerifyLog(rd, name, eventlog.VerifyLogOptions{
		Verifier: verifier, AllowUnsigned: opts.AllowUnsigned, MaxFindings: max,
		OnParseError: onParseError, OnUnparsed: onUnparsed, KeepWire: opts.Tap != nil,
		OnEvent: func(line int64, ev *eventlog.Event) {
			tapEvent(line, ev)
			if feed != nil {
				feed.Add(ev)
			}
			r.Evidence.addSource(string(ev.Source))
			if ev.Kind == eventlog.KindSessionEnd {
				if f, inferred := eventlog.EndFailure(ev.End); f != "" {
					r.Evidence.Failures = append(r.Evidence.Failures, RecordedFailure{EventID: ev.ID, Line: line, Failure: f, FromReason: inferred})
				}
				// VerifyLog checks an end's signatures just before
				// handing it here
				if watch != nil && watch.revoked {
					revokedEnds[line] = true
				}
			}
			if watch != nil {
				watch.revoked = false
			}
			c.wire(ev, line)
			if ev.Kind == eventlog.KindNotification && ev.Method == eventlog.MethodSessionIDCollision {
				r.Findings = append(r.Findings, collisionFinding(ev, name, line))
				r.markRan(checkSession)
			}
			if ev.Kind == eventlog.KindNotification && ev.Method == eventlog.MethodMCPAfterEnd {
				r.Findings = append(r.Findings, afterEndFinding(ev, name, line))
				r.markRan(checkSession)
			}
			if opts.IntegrityOnly {
				return
			}
			if line == 1 && ev.Kind == eventlog.KindSessionStart {
				c.header(ev, line)
				return
			}
			c.event(ev, line)
		},
	})
	failed := lr == nil || (lerr != nil && exitcode.Of(lerr) == exitcode.Failure)
	digest := ""
	if feed != nil {
		if failed {
			feed.Fail(errors.New("the event log could not be read"))
		}
		feed.Close()
		digest = <-gdone
	}
	if failed {
		if lerr == nil {
			lerr = errors.New("no report")
		}
		return exitcode.New(exitcode.Failure, fmt.Errorf("read events %s: %w", name, lerr), "")
	}
	r.Evidence.GraphDigest = digest
	r.Evidence.finishProvenance()
	r.Evidence.Lines = lr.Lines
	r.Evidence.Events = lr.Events
	r.Evidence.Session = lr.Session
	if lr.Header != nil {
		r.Evidence.ImportedFrom = lr.Header.ImportedFrom
	}
	for _, f := range lr.Findings {
		r.Findings = append(r.Findings, chainFinding(f, name, opts.AllowUnsigned, revokedEnds[f.Line]))
	}
	if lr.FindingsDropped > 0 {
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "log-findings-dropped", Severity: sevNotice, Class: ClassNotice, File: name,
			Message: fmt.Sprintf("%d more chain findings were not listed", lr.FindingsDropped),
		})
	}
	if opts.IntegrityOnly {
		// only the wire findings: nothing else was checked
		r.Findings = append(r.Findings, c.findings...)
		return nil
	}
	c.finish()
	r.Findings = append(r.Findings, c.findings...)
	mergeNotCheckable(r, c.notCheckable)
	mergeUnrun(r, c.unrun)
	return nil
}

// collisionFinding reports a witness/session-id-collision event: never
// verified, also when only integrity is checked, since the log is not one
// client's session alone (docs/design/mcp-http.md, "One session per
// client"). The payload is described, never trusted to lessen the class.
func collisionFinding(ev *eventlog.Event, file string, line int64) Finding {
	var p struct {
		Up       string   `json:"upstream_session_id"`
		Alias    string   `json:"client_session_id"`
		Exchange int64    `json:"exchange"`
		Sessions []string `json:"sessions"`
		Split    bool     `json:"split"`
	}
	msg := "the upstream handed this session's id to another client too: it serves them as one session, so its answers here may depend on the other client's requests"
	if json.Unmarshal(ev.Payload, &p) == nil && p.Up != "" {
		what := fmt.Sprintf("the upstream handed the session id %q to another client too (exchange %d; logs %s)", p.Up, p.Exchange, strings.Join(p.Sessions, ", "))
		if p.Split {
			msg = what + fmt.Sprintf(": the proxy gave the later client %q and kept each client's messages in its own log, but the upstream serves them as one session, so its answers here may depend on the other client's requests", p.Alias)
		} else {
			msg = what + ": both clients' requests are in this one log, ambiguous as to client"
		}
	}
	return Finding{
		Check: checkSession, Code: "session-id-collision", Severity: SevError, Class: classIncomplete,
		EventID: ev.ID, File: file, Line: line, Message: msg,
	}
}

// afterEndFinding reports a witness/mcp-after-end event of the HTTP
// proxy's log: a client went on with an MCP session after its log had
// ended, so what it did then is in the HTTP cassette only and no session
// log holds it. Never verified, also when only integrity is checked.
func afterEndFinding(ev *eventlog.Event, file string, line int64) Finding {
	var p struct {
		Session  int64  `json:"session"`
		Dir      string `json:"dir"`
		Exchange int64  `json:"exchange"`
		Method   string `json:"method"`
	}
	msg := "an exchange carried the id of an MCP session whose log had ended: it is in the HTTP cassette only"
	if json.Unmarshal(ev.Payload, &p) == nil && p.Dir != "" {
		msg = fmt.Sprintf("exchange %d (%s) carried the id of MCP session %d after its log (%s) had ended: it is in the HTTP cassette only, so no session log holds what the client did then",
			p.Exchange, p.Method, p.Session, p.Dir)
	}
	return Finding{
		Check: checkSession, Code: "mcp-after-end", Severity: SevError, Class: classIncomplete,
		EventID: ev.ID, File: file, Line: line, Message: msg,
	}
}

// revokeWatch passes end signatures to the verifier and notes whether one
// was made by a revoked key: an end signed only by revoked keys counts as
// not signed (incomplete), one signed only by keys the verifier does not
// hold cannot be checked (unauthenticated).
type revokeWatch struct {
	v       eventlog.SignatureVerifier
	revoked bool
}

func (w *revokeWatch) Verify(keyID, alg string, msg []byte, sig string) error {
	_, err := w.VerifySigner(keyID, alg, msg, sig)
	return err
}

// VerifySigner implements eventlog.SignerVerifier ("" when the wrapped
// verifier does not tell the signer).
func (w *revokeWatch) VerifySigner(keyID, alg string, msg []byte, sig string) (string, error) {
	var signer string
	var err error
	if sv, ok := w.v.(eventlog.SignerVerifier); ok {
		signer, err = sv.VerifySigner(keyID, alg, msg, sig)
	} else {
		err = w.v.Verify(keyID, alg, msg, sig)
	}
	if errors.Is(err, eventlog.ErrRevokedKey) {
		w.revoked = true
	}
	return signer, err
}

// chainFinding maps a eventlog.VerifyLog finding to a verify finding. An
// end signed only by keys the verifier does not hold (log-untrusted) is
// unauthenticated: nothing shows an edit, the key to check it is missing;
// one signed only by revoked keys (revoked) counts as not signed, and an
// end with no signature is incomplete: both leave a cut-off tail open.
func chainFinding(f eventlog.Finding, file string, allowUnsigned, revoked bool) Finding {
	out := Finding{
		Check: checkChain, Code: "log-" + strings.ReplaceAll(f.Code, "_", "-"),
		EventID: f.ID, Message: f.Message, File: file, Line: f.Line,
	}
	switch f.Severity {
	case eventlog.SevTampered:
		out.Severity, out.Class = SevError, classTampered
	case eventlog.SevIncomplete:
		out.Severity, out.Class = SevError, classIncomplete
	case eventlog.SevUnsigned:
		out.Severity, out.Class = SevWarning, classIncomplete
		if f.Code == eventlog.FindUntrusted && !revoked {
			out.Class = classUnauthenticated
			out.Message += " (cannot check: give the keyring or trust file that holds the signing key; until then a cut-off tail cannot be ruled out)"
		} else {
			out.Message += " (without a trusted signature on the end, a cut-off tail cannot be ruled out)"
		}
	default:
		out.Severity, out.Class = SevWarning, ClassNotice
		if allowUnsigned && (f.Code == eventlog.FindUnsigned || f.Code == eventlog.FindUntrusted) {
			out.Message += " (allowed by --allow-unsigned)"
		}
	}
	return out
}

// feedBatch is the number of events handed to the graph stream at once.
const feedBatch = 512

// EventFeed hands events decoded on one goroutine (VerifyLog's: the graph
// digest's stream, a Tap's consumers) to a graph.EventSource read on
// another, in batches over a bounded channel, so the feeding side waits
// only when the reading side is several batches behind. After Fail,
// nothing more is fed: the reader sees the error where a reader of the log
// would have stopped. The reader must read to the end (io.EOF, after
// Close) or Drain, or the feeding side blocks.
type EventFeed struct {
	ch chan []eventOrErr
	// the feeding side (VerifyLog's goroutine)
	cur    []eventOrErr
	failed bool
	// the reading side (the stream's)
	got []eventOrErr
	i   int
	err error
}

type eventOrErr struct {
	ev  *eventlog.Event
	err error
}

// NewEventFeed returns an empty feed.
func NewEventFeed() *EventFeed {
	return &EventFeed{ch: make(chan []eventOrErr, 4)}
}

// Add feeds one event.
func (f *EventFeed) Add(ev *eventlog.Event) {
	if f.failed {
		return
	}
	f.cur = append(f.cur, eventOrErr{ev: ev})
	if len(f.cur) == feedBatch {
		f.ch <- f.cur
		f.cur = make([]eventOrErr, 0, feedBatch)
	}
}

// Fail feeds the error the reader stops at, once.
func (f *EventFeed) Fail(err error) {
	if f.failed {
		return
	}
	f.cur = append(f.cur, eventOrErr{err: err})
	f.failed = true
}

// Close hands on what is left; the reader then reads io.EOF (or the
// error of Fail). The feeding side calls it once, after its last Add.
func (f *EventFeed) Close() {
	if len(f.cur) > 0 {
		f.ch <- f.cur
	}
	f.cur = nil
	close(f.ch)
}

// Next implements graph.EventSource.
func (f *EventFeed) Next() (*eventlog.Event, error) {
	for f.i >= len(f.got) {
		if f.err != nil {
			return nil, f.err
		}
		b, ok := <-f.ch
		if !ok {
			f.err = io.EOF
			return nil, f.err
		}
		f.got, f.i = b, 0
	}
	e := f.got[f.i]
	f.i++
	if e.err != nil {
		f.err = e.err
		return nil, e.err
	}
	return e.ev, nil
}

// Drain reads and drops what is still fed after the reader stopped,
// until Close.
func (f *EventFeed) Drain() {
	for range f.ch {
	}
}
