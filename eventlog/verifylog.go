package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Log statuses, from best to worst.
const (
	StatusOK         = "ok"         // chain intact, ended, signed by a trusted key (or unsigned allowed)
	StatusUnsigned   = "unsigned"   // intact and ended, but no trusted signature vouches for it
	StatusIncomplete = "incomplete" // intact as far as it goes, but cut off, never ended, or its recording failed
	StatusTampered   = "tampered"   // edited, reordered, inserted, deleted or invalid lines, or a bad signature
)

// Finding severities.
const (
	SevTampered   = "tampered"
	SevIncomplete = "incomplete"
	SevUnsigned   = "unsigned"
	SevWarning    = "warning"
)

// Finding codes.
const (
	FindParse     = "parse"        // the line is not a valid event
	FindCanonical = "canonical"    // the line is not in canonical form
	FindChain     = "chain"        // prev is not the sha256 of the previous line
	FindSeq       = "seq"          // seq does not follow the previous line's
	FindID        = "id"           // id is not "e<seq>"
	FindSession   = "session"      // session differs from the header's, or is not derived from it
	FindHeader    = "header"       // no session_start first, or a second one
	FindPayload   = "payload_hash" // payload_sha256 does not match the payload
	FindLink      = "link"         // a causal link names no earlier event of the right kind
	FindEnd       = "end"          // session_end count or head is wrong
	FindSignature = "signature"    // a signature does not verify
	FindFailure   = "failure"      // a session_end records that the recording failed (EndFailure)
	FindUnsigned  = "unsigned"     // the end carries no signature
	FindUntrusted = "untrusted"    // the end is signed only by keys the verifier does not hold
	FindPartial   = "partial"      // the last line has no newline (cut off)
	FindNoEnd     = "no_end"       // the log has no session_end after its last event
	FindEmpty     = "empty"        // the log has no lines
)

// Finding is one problem found in a log.
type Finding struct {
	Line     int64  `json:"line"` // 1-based; 0 for the whole log
	ID       string `json:"id,omitempty"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func (f Finding) String() string {
	var b strings.Builder
	if f.Line > 0 {
		fmt.Fprintf(&b, "line %d", f.Line)
		if f.ID != "" {
			fmt.Fprintf(&b, " (%s)", f.ID)
		}
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s: %s", f.Code, f.Message)
	return b.String()
}

// SignatureCheck is the outcome of one signature of the last session_end.
type SignatureCheck struct {
	KeyID  string `json:"key_id"`
	Alg    string `json:"alg"`
	Status string `json:"status"` // valid | duplicate | invalid | unknown_key | unchecked
	Detail string `json:"detail,omitempty"`
	// Signer is the identity of the key that made a valid signature, when
	// the verifier tells it (SignerVerifier). A second valid signature by
	// the same signer (under another label) is "duplicate": it is intact
	// but vouches for nothing more.
	Signer string `json:"signer,omitempty"`
}

// LogReport is what VerifyLog found.
type LogReport struct {
	File            string           `json:"file"`
	Status          string           `json:"status"`
	Lines           int64            `json:"lines"`
	Events          int64            `json:"events"` // lines other than session_start and session_end
	Session         string           `json:"session,omitempty"`
	Header          *Header          `json:"header,omitempty"`
	Ended           bool             `json:"ended"` // the last line is a session_end
	Head            string           `json:"head"`  // sha256 of the last complete line
	Signatures      []SignatureCheck `json:"signatures,omitempty"`
	Findings        []Finding        `json:"findings"`
	FindingsDropped int              `json:"findings_dropped,omitempty"`
	// Last holds the id of the last event of each kind, for appending.
	Last   map[Kind]string `json:"-"`
	counts map[string]int
}

// Count returns how many findings of the given severity were found
// (including those dropped from Findings).
func (r *LogReport) Count(severity string) int { return r.counts[severity] }

// Err returns nil when the log verified, else an error carrying the exit
// code: Tampered for tampered or unsigned logs, Incomplete for incomplete
// ones.
func (r *LogReport) Err() error {
	first := func(sev string) string {
		for _, f := range r.Findings {
			if f.Severity == sev {
				return f.String()
			}
		}
		return ""
	}
	switch r.Status {
	case StatusOK:
		return nil
	case StatusTampered:
		return exitcode.New(exitcode.Tampered,
			fmt.Errorf("event log %s is tampered: %d finding(s), first: %s", r.File, r.counts[SevTampered], first(SevTampered)),
			"the log's bytes changed after it was written; compare it with a copy you trust, or re-capture")
	case StatusUnsigned:
		return exitcode.New(exitcode.Tampered,
			fmt.Errorf("event log %s is unsigned: %s", r.File, first(SevUnsigned)),
			"capture with --keyring to sign the session end, or verify with the keyring that holds the signing key")
	case StatusIncomplete:
		hint := "the capture was cut off before its session_end; the lines present are intact"
		for _, f := range r.Findings {
			if f.Code == FindFailure {
				hint = "the recording failed (its session_end says why); the lines present are intact, what came after the failure is missing"
				break
			}
		}
		return exitcode.New(exitcode.Incomplete,
			fmt.Errorf("event log %s is incomplete: %s", r.File, first(SevIncomplete)),
			hint)
	}
	return exitcode.Errorf(exitcode.Failure, "event log %s: unknown status %q", r.File, r.Status)
}

// VerifyLogOptions control VerifyLog.
type VerifyLogOptions struct {
	// Verifier checks the session_end signatures; nil leaves them unchecked
	// (reported as untrusted).
	Verifier SignatureVerifier
	// AllowUnsigned turns missing, unchecked and unknown-key signatures into
	// warnings.
	AllowUnsigned bool
	// MaxFindings caps the findings kept in the report (default 100); the
	// rest are only counted.
	MaxFindings int
	// MaxLine is the longest line accepted (default MaxLineBytes).
	MaxLine int
	// OnEvent, when set, is called with every line that parsed, in order,
	// after it was checked (e.g. to collect ids while verifying).
	OnEvent func(line int64, e *Event)
	// OnParseError, when set, is called with every line that is not a
	// valid event, in order with OnEvent (e.g. to stop a second consumer
	// of the events where a reader of the log would stop).
	OnParseError func(line int64, err *ParseError)
	// OnUnparsed, when set, is called where OnParseError is, with the
	// line's bytes (nil for a line too long; valid during the call only)
	// and whether it is the log's cut-off last line (no newline): for a
	// consumer that reports the line as another reader of the log would
	// (FastReader.DecodeLine).
	OnUnparsed func(line int64, raw []byte, partial bool, err *ParseError)
	// KeepWire decodes each event's wire member too (Event.Wire, as
	// DecodeEvent and Reader.SetFastWhole give it), for an OnEvent that
	// reads it; the checks, findings and errors do not change. The fast
	// decoder checks the member either way, so keeping it costs little.
	KeepWire bool
}

// kind codes kept per event for link checks: one byte per event.
const (
	kcOther byte = iota
	kcToolCall
	kcModelInput
	kcModelOutput
	kcMCPRequest
	kcSession // session_start or session_end (last or checkpoint)
)

// VerifyLog reads an event log from r and checks it line by line: the
// canonical form of every line, the envelope (seq, id, session), the hash
// chain, payload hashes, causal links, and every session_end's count, head
// and signatures. It streams: memory is the longest line plus one byte per
// event (for link checks). It returns the report and, when the log does not
// verify, an error carrying exitcode Tampered or Incomplete (or Failure when
// r cannot be read).
//
// Each rule is one method of logVerifier (check*), applied in a fixed
// order, so that findings come in the same order for the same log.
func VerifyLog(r io.Reader, name string, opts VerifyLogOptions) (*LogReport, error) {
	// no rule reads Event.Wire but the canonical form of a session_end,
	// which the reader decodes whole: the fast decoder (the same events
	// and errors otherwise) halves the decoding time of a long log
	return verifyLog(r, name, opts, true)
}

func verifyLog(r io.Reader, name string, opts VerifyLogOptions, fast bool) (*LogReport, error) {
	v := newLogVerifier(name, opts)
	rd := NewReader(r, name)
	rd.fast = fast
	rd.whole = fast && opts.KeepWire
	if opts.MaxLine > 0 {
		rd.SetMaxLine(opts.MaxLine)
	}
	// the lines are read ahead and decoded and hashed in parallel
	// (readAhead); the rules are applied here, in order
	ra := readAhead(rd, 0)
	defer ra.stop()
	for {
		it, err := ra.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			v.rep.Status = StatusTampered
			return v.rep, exitcode.New(exitcode.Failure, fmt.Errorf("verify event log: %w", err), "")
		}
		v.line(it.no, it.raw, it.partial)
		v.hash, v.payload = it.hash, it.payload
		if it.perr != nil {
			v.checkUnparsed(it.perr)
			if opts.OnParseError != nil {
				opts.OnParseError(it.no, it.perr)
			}
			if opts.OnUnparsed != nil {
				opts.OnUnparsed(it.no, it.raw, it.partial, it.perr)
			}
			continue
		}
		v.checkEvent(it.ev)
	}
	v.checkEnded()
	v.rep.Status = v.status()
	return v.rep, v.rep.Err()
}

// logVerifier is the state VerifyLog carries from line to line.
type logVerifier struct {
	opts VerifyLogOptions
	rep  *LogReport

	// the line being checked, its LineHash and its payload's digest
	// (computed ahead, readAhead)
	lineNo  int64
	raw     []byte
	partial bool
	hash    string
	payload payloadCheck

	prevHash string // sha256 of the previous line; "" when it cannot be known
	lastSeq  int64
	kinds    []byte // link-check kind code of each line, by line (= seq when intact)
	lastKind Kind   // kind of the last line that parsed ("" after an unparsed one)

	// the latest session_end's signature checks, and its unsigned or
	// untrusted findings, which count only if it is the last line
	sigChecks       []SignatureCheck
	pendingUnsigned []Finding
}

func newLogVerifier(name string, opts VerifyLogOptions) *logVerifier {
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 100
	}
	return &logVerifier{
		opts:     opts,
		rep:      &LogReport{File: name, Head: genesisPrev, Findings: []Finding{}, Last: map[Kind]string{}, counts: map[string]int{}},
		prevHash: genesisPrev,
		lastSeq:  -1,
	}
}

// add records a finding, counting it always and keeping it while fewer
// than MaxFindings are kept.
func (v *logVerifier) add(line int64, id, code, sev, format string, args ...any) {
	v.rep.counts[sev]++
	if len(v.rep.Findings) >= v.opts.MaxFindings {
		v.rep.FindingsDropped++
		return
	}
	v.rep.Findings = append(v.rep.Findings, Finding{Line: line, ID: id, Code: code, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// line starts the check of the next line and applies the partial-tail
// rule: a last line without its newline was cut off while being written.
func (v *logVerifier) line(lineNo int64, raw []byte, partial bool) {
	v.lineNo, v.raw, v.partial = lineNo, raw, partial
	v.rep.Lines = lineNo
	if partial {
		v.add(lineNo, "", FindPartial, SevIncomplete, "the last line has no newline: the log was cut off while this line was written")
	}
}

// checkUnparsed applies the parse rule to a line that is not a valid
// event. The chain goes on from its bytes; after an over-long line (whose
// bytes were not kept) the next line's prev cannot be checked.
func (v *logVerifier) checkUnparsed(perr *ParseError) {
	if errors.Is(perr, errLineTooLong) {
		v.add(v.lineNo, "", FindParse, SevTampered, "%v", perr.Err)
		v.prevHash = ""
	} else {
		if !v.partial { // a cut-off line is reported as partial only
			v.add(v.lineNo, "", FindParse, SevTampered, "%s", strings.TrimPrefix(perr.Error(), fmt.Sprintf("%s:%d: ", v.rep.File, v.lineNo)))
		}
		v.prevHash = v.hash
	}
	v.lastSeq++
	v.kinds = append(v.kinds, kcOther)
	v.lastKind = ""
}

// checkEvent applies every rule to a line that parsed, in order, then
// records it.
func (v *logVerifier) checkEvent(ev *Event) {
	v.checkCanonical(ev)
	v.checkSeq(ev)
	v.checkID(ev)
	v.checkChain(ev)
	if v.lineNo == 1 {
		v.checkSessionStart(ev)
	} else {
		v.checkSameSession(ev)
	}
	v.checkKindMembers(ev)
	v.checkPayloadHash(ev)
	v.checkLinks(ev)
	if ev.Kind == KindSessionEnd && ev.End != nil {
		v.checkEndCount(ev)
		v.checkEndHead(ev)
		v.checkFailure(ev)
		v.checkEndSignatures(ev)
	} else if ev.Kind != KindSessionStart {
		v.rep.Events++
	}
	v.record(ev)
}

// checkCanonical: a session_end line is in canonical form. Every other
// line's bytes are sealed by the next line's prev; a session_end's bytes
// are sealed by its signatures, which sign its canonical form, so the line
// must be that form.
func (v *logVerifier) checkCanonical(ev *Event) {
	if ev.Kind != KindSessionEnd {
		return
	}
	if enc, err := EncodeEvent(ev); err != nil || !bytes.Equal(enc, v.raw) {
		v.add(v.lineNo, ev.ID, FindCanonical, SevTampered, "the line is not in canonical form (its bytes were changed)")
	}
}

// checkSeq: seq follows the previous line's.
func (v *logVerifier) checkSeq(ev *Event) {
	if ev.Seq != v.lastSeq+1 {
		v.add(v.lineNo, ev.ID, FindSeq, SevTampered, "seq %d follows seq %d (lines were deleted, inserted or reordered)", ev.Seq, v.lastSeq)
	}
}

// checkID: the id is "e<seq>".
func (v *logVerifier) checkID(ev *Event) {
	if ev.ID != EventID(ev.Seq) {
		v.add(v.lineNo, ev.ID, FindID, SevTampered, "id %q does not match seq %d (want %q)", ev.ID, ev.Seq, EventID(ev.Seq))
	}
}

// checkChain: prev is the sha256 of the previous line (the genesis value
// on the first), when that hash is known.
func (v *logVerifier) checkChain(ev *Event) {
	if v.prevHash == "" || ev.Prev == v.prevHash {
		return
	}
	if v.lineNo == 1 {
		v.add(v.lineNo, ev.ID, FindChain, SevTampered, "the first line's prev is not the genesis value (lines before it were deleted)")
	} else {
		v.add(v.lineNo, ev.ID, FindChain, SevTampered, "prev does not match the sha256 of line %d (line %d or %d was edited, or lines were inserted or deleted between them)", v.lineNo-1, v.lineNo-1, v.lineNo)
	}
}

// checkSessionStart: the first line is a session_start with a header, and
// the session id is derived from that header (SessionID). The first line's
// session is the log's.
func (v *logVerifier) checkSessionStart(ev *Event) {
	v.rep.Session = ev.Session
	if ev.Kind != KindSessionStart || ev.Header == nil {
		v.add(v.lineNo, ev.ID, FindHeader, SevTampered, "the first line is a %s, not a session_start with a header", ev.Kind)
		return
	}
	v.rep.Header = ev.Header
	if want, err := SessionID(ev.Header, ev.TS); err != nil || want != ev.Session {
		v.add(v.lineNo, ev.ID, FindSession, SevTampered, "session id %q is not derived from the header (want %q)", ev.Session, want)
	}
}

// checkSameSession: every later line has the header's session, and none is
// a second session_start.
func (v *logVerifier) checkSameSession(ev *Event) {
	if ev.Session != v.rep.Session {
		v.add(v.lineNo, ev.ID, FindSession, SevTampered, "session %q differs from the header's %q", ev.Session, v.rep.Session)
	}
	if ev.Kind == KindSessionStart {
		v.add(v.lineNo, ev.ID, FindHeader, SevTampered, "a second session_start")
	}
}

// checkKindMembers: a header is present exactly on session_start, an end
// exactly on session_end.
func (v *logVerifier) checkKindMembers(ev *Event) {
	if (ev.Header != nil) != (ev.Kind == KindSessionStart) {
		v.add(v.lineNo, ev.ID, FindHeader, SevTampered, "header present on a %s line, or missing on a session_start", ev.Kind)
	}
	if (ev.End != nil) != (ev.Kind == KindSessionEnd) {
		v.add(v.lineNo, ev.ID, FindEnd, SevTampered, "end present on a %s line, or missing on a session_end", ev.Kind)
	}
}

// checkPayloadHash: payload_sha256 is the sha256 of the payload's
// canonical JSON.
func (v *logVerifier) checkPayloadHash(ev *Event) {
	if len(ev.Payload) == 0 {
		return
	}
	if h := v.payload.sha256; !v.payload.ok || h != ev.PayloadSHA256 {
		v.add(v.lineNo, ev.ID, FindPayload, SevTampered, "payload_sha256 %q does not match the payload (sha256 %s)", ev.PayloadSHA256, h)
	}
}

// checkLinks: every causal link names an earlier event, of the kind the
// link requires: a tool_response's or external_effect's call a tool_call,
// an mcp_response's or user_input's call an mcp_request, input a
// model_input, a tool_call's cause a model_output (any other event's cause
// may be of any kind but session_start and session_end), during and each during candidate a client request
// (tool_call or mcp_request), concerns a request (tool_call, mcp_request or
// model_input).
func (v *logVerifier) checkLinks(ev *Event) {
	switch ev.Kind {
	case KindToolResponse, KindExternalEffect:
		v.checkLink(ev, "call", ev.Call, "tool_call", kcToolCall)
	case KindMCPResponse, KindUserInput:
		v.checkLink(ev, "call", ev.Call, "mcp_request", kcMCPRequest)
	default:
		v.checkLink(ev, "call", ev.Call, "tool_call", kcToolCall)
	}
	if ev.Kind == KindToolCall {
		v.checkLink(ev, "cause", ev.Cause, "model_output", kcModelOutput)
	} else if v.checkLink(ev, "cause", ev.Cause, "") {
		// a session header or end is not an event anything was derived
		// from: the graph cannot link it (docs/formats/graph.md)
		if n, _ := parseEventID(ev.Cause); v.kinds[n] == kcSession {
			v.add(v.lineNo, ev.ID, FindLink, SevTampered, "cause %q names a session_start or session_end, not an event", ev.Cause)
		}
	}
	v.checkLink(ev, "input", ev.Input, "model_input", kcModelInput)
	v.checkLink(ev, "during", ev.During, "client request (tool_call or mcp_request)", kcToolCall, kcMCPRequest)
	for _, c := range ev.DuringCandidates {
		v.checkLink(ev, "during_candidates", c, "client request (tool_call or mcp_request)", kcToolCall, kcMCPRequest)
	}
	v.checkLink(ev, "concerns", ev.Concerns, "request (tool_call, mcp_request or model_input)", kcToolCall, kcMCPRequest, kcModelInput)
}

// checkLink checks one link: target (when set) is "e<n>" for an earlier
// line n whose kind code is one of want (any kind when want is empty). It
// reports whether target is set and names an earlier line of a wanted kind.
func (v *logVerifier) checkLink(ev *Event, field, target string, wantName string, want ...byte) bool {
	if target == "" {
		return false
	}
	n, ok := parseEventID(target)
	if !ok || n >= ev.Seq || n >= int64(len(v.kinds)) {
		v.add(v.lineNo, ev.ID, FindLink, SevTampered, "%s %q names no earlier event", field, target)
		return false
	}
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if v.kinds[n] == w {
			return true
		}
	}
	v.add(v.lineNo, ev.ID, FindLink, SevTampered, "%s %q is not a %s", field, target, wantName)
	return false
}

// checkEndCount: a session_end's count is its seq and the number of lines
// before it.
func (v *logVerifier) checkEndCount(ev *Event) {
	if ev.End.Count != ev.Seq {
		v.add(v.lineNo, ev.ID, FindEnd, SevTampered, "count %d, but the end is at seq %d", ev.End.Count, ev.Seq)
	}
	if ev.End.Count != v.lineNo-1 {
		v.add(v.lineNo, ev.ID, FindEnd, SevTampered, "count %d, but %d lines precede the end", ev.End.Count, v.lineNo-1)
	}
}

// checkEndHead: a session_end's head is its prev (whether prev is the hash
// of the line before is checkChain's rule).
func (v *logVerifier) checkEndHead(ev *Event) {
	if ev.End.Head != ev.Prev {
		v.add(v.lineNo, ev.ID, FindEnd, SevTampered, "head %s differs from the end's prev %s", ev.End.Head, ev.Prev)
	}
}

// checkFailure: a session_end that records a failed recording (EndFailure)
// makes the log incomplete. It counts on every end, checkpoints included:
// events appended later cannot fill the gap the failure left, and a later
// end must not launder it.
func (v *logVerifier) checkFailure(ev *Event) {
	failure, inferred := EndFailure(ev.End)
	switch {
	case failure == "":
	case inferred:
		v.add(v.lineNo, ev.ID, FindFailure, SevIncomplete, "the recording failed (read from the end's reason): %s", failure)
	default:
		v.add(v.lineNo, ev.ID, FindFailure, SevIncomplete, "the recording failed: %s", failure)
	}
}

// checkEndSignatures: the signatures of a session_end verify. A bad
// signature is tampering wherever it is. A missing or untrusted one
// matters only on the last end (checkEnded): a later end validly signed
// covers every line before it, checkpoints included.
func (v *logVerifier) checkEndSignatures(ev *Event) {
	v.pendingUnsigned = v.pendingUnsigned[:0]
	lineNo, id := v.lineNo, ev.ID
	v.sigChecks = checkSignatures(ev, v.opts, func(code, sev, format string, args ...any) {
		if code == FindUnsigned || code == FindUntrusted {
			v.pendingUnsigned = append(v.pendingUnsigned, Finding{Line: lineNo, ID: id, Code: code, Severity: sev, Message: fmt.Sprintf(format, args...)})
			return
		}
		v.add(lineNo, id, code, sev, format, args...)
	})
}

// record remembers what later lines are checked against: the line's kind
// code (for links), its seq, kind and hash, and the last id of each kind.
func (v *logVerifier) record(ev *Event) {
	kc := kcOther
	switch ev.Kind {
	case KindToolCall:
		kc = kcToolCall
	case KindModelInput:
		kc = kcModelInput
	case KindModelOutput:
		kc = kcModelOutput
	case KindMCPRequest:
		kc = kcMCPRequest
	case KindSessionStart, KindSessionEnd:
		kc = kcSession
	}
	v.kinds = append(v.kinds, kc)
	if v.opts.OnEvent != nil {
		v.opts.OnEvent(v.lineNo, ev)
	}
	v.rep.Last[ev.Kind] = ev.ID
	v.lastSeq = ev.Seq
	v.lastKind = ev.Kind
	if v.partial {
		v.prevHash = ""
	} else {
		v.prevHash = v.hash
		v.rep.Head = v.prevHash
	}
}

// checkEnded: the log has lines and its last line is a session_end, whose
// unsigned or untrusted findings then count. (A last session_end that
// parsed but lacks its newline counts as the end too; its partial finding
// already makes the log incomplete.)
func (v *logVerifier) checkEnded() {
	switch {
	case v.rep.Lines == 0:
		v.add(0, "", FindEmpty, SevIncomplete, "the log has no lines")
	case v.lastKind != KindSessionEnd:
		v.add(v.rep.Lines, "", FindNoEnd, SevIncomplete, "the log does not end with a session_end (cut off, or still being written)")
	default:
		v.rep.Ended = true
		v.rep.Signatures = v.sigChecks
		for _, f := range v.pendingUnsigned {
			v.add(f.Line, f.ID, f.Code, f.Severity, "%s", f.Message)
		}
	}
}

// status is the worst severity found.
func (v *logVerifier) status() string {
	switch {
	case v.rep.counts[SevTampered] > 0:
		return StatusTampered
	case v.rep.counts[SevIncomplete] > 0:
		return StatusIncomplete
	case v.rep.counts[SevUnsigned] > 0:
		return StatusUnsigned
	}
	return StatusOK
}

// checkSignatures verifies the signatures of a session_end: each one
// (checkSignature), then whether any vouches for the log (untrusted).
func checkSignatures(ev *Event, opts VerifyLogOptions, add func(code, sev, format string, args ...any)) []SignatureCheck {
	unsignedSev := SevUnsigned
	if opts.AllowUnsigned {
		unsignedSev = SevWarning
	}
	if len(ev.End.Signatures) == 0 {
		add(FindUnsigned, unsignedSev, "the session_end carries no signature")
		return nil
	}
	msg, err := endMessage(ev)
	if err != nil {
		add(FindSignature, SevTampered, "%v", err)
		return nil
	}
	sc := signatureChecker{opts: opts, msg: msg, signers: map[string]string{}}
	var checks []SignatureCheck
	for _, s := range ev.End.Signatures {
		c := sc.check(s)
		if c.Status == "invalid" {
			add(FindSignature, SevTampered, "signature by key %s (%s) does not verify: %s", s.KeyID, s.Alg, c.Detail)
		}
		checks = append(checks, c)
	}
	if sc.valid == 0 {
		untrusted(checks, opts.Verifier == nil, sc.why, func(format string, args ...any) {
			add(FindUntrusted, unsignedSev, format, args...)
		})
	}
	return checks
}

// signatureChecker checks the signatures of one session_end.
type signatureChecker struct {
	opts    VerifyLogOptions
	msg     []byte            // EndMessage of the end
	valid   int               // valid signatures so far
	signers map[string]string // identity -> key id of its first valid signature
	why     string            // why a held key does not vouch (revoked)
}

// check verifies one signature: valid, duplicate (a signer already
// counted, under another label), unknown_key, invalid, or unchecked when
// there is no verifier.
func (sc *signatureChecker) check(s Signature) SignatureCheck {
	c := SignatureCheck{KeyID: s.KeyID, Alg: s.Alg}
	if sc.opts.Verifier == nil {
		c.Status = "unchecked"
		c.Detail = "no keyring to check it with"
		return c
	}
	var err error
	if sv, identifies := sc.opts.Verifier.(SignerVerifier); identifies {
		c.Signer, err = sv.VerifySigner(s.KeyID, s.Alg, sc.msg, s.Sig)
	} else {
		err = sc.opts.Verifier.Verify(s.KeyID, s.Alg, sc.msg, s.Sig)
	}
	first, dup := sc.signers[c.Signer]
	switch {
	case err == nil && c.Signer != "" && dup:
		c.Status = "duplicate"
		c.Detail = fmt.Sprintf("the same key as the signature by key %s: one signer, counted once", first)
	case err == nil:
		c.Status = "valid"
		sc.valid++
		if c.Signer != "" {
			sc.signers[c.Signer] = s.KeyID
		}
	case errors.Is(err, ErrUnknownKey):
		c.Status = "unknown_key"
		c.Detail = err.Error()
		if sc.why == "" && errors.Is(err, ErrRevokedKey) {
			sc.why = c.Detail
		}
	default:
		c.Status = "invalid"
		c.Detail = err.Error()
	}
	return c
}

// untrusted reports an end that no valid signature vouches for, naming the
// keys of its signatures that are not invalid (invalid ones are already
// tampering): no keyring given, a revoked key, or keys the keyring does
// not hold.
func untrusted(checks []SignatureCheck, noVerifier bool, why string, add func(format string, args ...any)) {
	keys := make([]string, 0, len(checks))
	for _, c := range checks {
		if c.Status != "invalid" {
			keys = append(keys, c.KeyID)
		}
	}
	if len(keys) == 0 {
		return
	}
	switch {
	case noVerifier:
		add("signed by key(s) %s, but no keyring was given to check them", strings.Join(keys, ", "))
	case why != "":
		// a revoked key vouches for nothing, whatever else lists it
		add("signed only by key(s) %s, which no unrevoked key vouches for: %s", strings.Join(keys, ", "), why)
	default:
		add("signed only by key(s) %s, which the keyring does not hold", strings.Join(keys, ", "))
	}
}

// parseEventID returns n for an id "e<n>".
func parseEventID(id string) (int64, bool) {
	if len(id) < 2 || id[0] != 'e' || (len(id) > 2 && id[1] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(id[1:], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// payloadCheck is PayloadDigest's verdict on a line's payload: its sha256
// hex, and whether the payload could be made canonical at all.
type payloadCheck struct {
	sha256 string
	ok     bool
}

// aheadLine is one line read ahead for VerifyLog: its number, bytes and
// partial flag as Reader.Next gives them, then (computed by a worker) the
// event or the parse error, the line's hash and the payload's digest.
type aheadLine struct {
	no      int64
	raw     []byte
	partial bool
	ev      *Event
	perr    *ParseError
	hash    string
	payload payloadCheck
}

// aheadBatch is a run of consecutive lines; err (an I/O error, or io.EOF)
// follows its lines. done is closed when a worker has decoded them.
type aheadBatch struct {
	lines []aheadLine
	err   error
	done  chan struct{}
}

// Read-ahead bounds: a batch ends after aheadBatchLines lines or
// aheadBatchBytes bytes, and at most aheadBatches batches are in flight, so
// memory is bounded by aheadBatches×aheadBatchBytes plus the longest line.
const (
	aheadBatchLines = 256
	aheadBatchBytes = 256 << 10
	aheadBatches    = 8
)

// reader is the read-ahead pipeline of VerifyLog: one goroutine reads the
// lines in order (exactly as Reader.Next does: numbering, the partial last
// line, over-long and blank lines), workers decode and hash each batch
// (the work that depends on a line alone), and next hands the lines back in
// order.
type reader struct {
	order   chan *aheadBatch
	quit    chan struct{}
	stopped chan struct{} // closed when the reading goroutine has returned
	cur     *aheadBatch
	i       int
}

// readAhead starts reading rd with workers decoding goroutines (0: one per
// available CPU, at most 4).
func readAhead(rd *Reader, workers int) *reader {
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	ra := &reader{order: make(chan *aheadBatch, aheadBatches), quit: make(chan struct{}), stopped: make(chan struct{})}
	work := make(chan *aheadBatch, aheadBatches)
	for range workers {
		go func() {
			for b := range work {
				for i := range b.lines {
					decodeAhead(rd, &b.lines[i])
				}
				close(b.done)
			}
		}()
	}
	go func() {
		defer close(ra.stopped)
		defer close(work)
		for {
			b := readBatch(rd)
			select {
			case work <- b:
			case <-ra.quit:
				return
			}
			select {
			case ra.order <- b:
			case <-ra.quit:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return ra
}

// readBatch reads the next batch of lines. Each line is a fresh slice
// (readLine's), kept for the checks of that line only: no event keeps a
// reference to its line (the decoders copy).
func readBatch(rd *Reader) *aheadBatch {
	b := &aheadBatch{lines: make([]aheadLine, 0, aheadBatchLines), done: make(chan struct{})}
	n := 0
	for len(b.lines) < aheadBatchLines && n < aheadBatchBytes {
		line, err := rd.readLine()
		if err != nil {
			var perr *ParseError
			if !errors.As(err, &perr) {
				b.err = err
				break
			}
			// an over-long line: readLine counted it
			b.lines = append(b.lines, aheadLine{no: rd.line, perr: perr})
			continue
		}
		rd.line++
		n += len(line)
		b.lines = append(b.lines, aheadLine{no: rd.line, raw: line, partial: rd.partial})
	}
	return b
}

// decodeAhead decodes one line as Reader.Next does and computes what
// VerifyLog's rules need of its bytes alone: LineHash and the payload's
// digest.
func decodeAhead(rd *Reader, l *aheadLine) {
	if l.perr != nil {
		return // over-long: no bytes kept
	}
	l.hash = LineHash(l.raw)
	if len(bytes.TrimSpace(l.raw)) == 0 {
		l.perr = &ParseError{File: rd.name, Line: l.no, Err: errors.New("blank line")}
		return
	}
	var ev *Event
	var perr *ParseError
	if rd.fast {
		if rd.whole {
			ev, perr = DecodeEventFastWhole(l.raw)
		} else {
			ev, perr = DecodeEventFast(l.raw)
		}
		if perr == nil && ev.Kind == KindSessionEnd {
			// whole (Wire too): its canonical form is checked and signed
			ev, perr = DecodeEvent(l.raw)
		}
	} else {
		ev, perr = DecodeEvent(l.raw)
	}
	if perr != nil {
		perr.locate(rd.name, l.no)
		l.perr = perr
		return
	}
	l.ev = ev
	if len(ev.Payload) > 0 {
		if h, err := payloadSHA256(ev.Payload); err == nil {
			l.payload = payloadCheck{sha256: h, ok: true}
		}
	}
}

// next returns the next line in order, or the read error (io.EOF at the
// end) after the last line.
func (ra *reader) next() (*aheadLine, error) {
	for ra.cur == nil || ra.i >= len(ra.cur.lines) {
		if ra.cur != nil && ra.cur.err != nil {
			return nil, ra.cur.err
		}
		b, ok := <-ra.order
		if !ok {
			return nil, io.EOF
		}
		<-b.done
		ra.cur, ra.i = b, 0
	}
	ra.i++
	return &ra.cur.lines[ra.i-1], nil
}

// stop ends the pipeline and waits until the reading goroutine no longer
// reads the log (the workers end when their batches are done).
func (ra *reader) stop() {
	close(ra.quit)
	<-ra.stopped
}
