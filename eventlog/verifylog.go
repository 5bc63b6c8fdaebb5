package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
}

// kind codes kept per event for link checks: one byte per event.
const (
	kcOther byte = iota
	kcToolCall
	kcModelInput
	kcModelOutput
)

// VerifyLog reads an event log from r and checks it line by line: the
// canonical form of every line, the envelope (seq, id, session), the hash
// chain, payload hashes, causal links, and every session_end's count, head
// and signatures. It streams: memory is the longest line plus one byte per
// event (for link checks). It returns the report and, when the log does not
// verify, an error carrying exitcode Tampered or Incomplete (or Failure when
// r cannot be read).
func VerifyLog(r io.Reader, name string, opts VerifyLogOptions) (*LogReport, error) {
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 100
	}
	rep := &LogReport{File: name, Head: GenesisPrev, Findings: []Finding{}, Last: map[Kind]string{}, counts: map[string]int{}}
	add := func(line int64, id, code, sev, format string, args ...any) {
		rep.counts[sev]++
		if len(rep.Findings) >= opts.MaxFindings {
			rep.FindingsDropped++
			return
		}
		rep.Findings = append(rep.Findings, Finding{Line: line, ID: id, Code: code, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	rd := NewReader(r, name)
	if opts.MaxLine > 0 {
		rd.SetMaxLine(opts.MaxLine)
	}
	var (
		prevHash  = GenesisPrev
		lastSeq   = int64(-1)
		kinds     []byte
		lastKind  Kind
		sigChecks []SignatureCheck
		// unsigned/untrusted findings of the latest end
		pendingUnsigned []Finding
	)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		var perr *ParseError
		if err != nil && !errors.As(err, &perr) {
			rep.Status = StatusTampered
			return rep, exitcode.New(exitcode.Failure, fmt.Errorf("verify event log: %w", err), "")
		}
		lineNo := rd.Line()
		rep.Lines = lineNo
		raw := rd.Raw()
		if rd.Partial() {
			add(lineNo, "", FindPartial, SevIncomplete, "the last line has no newline: the log was cut off while this line was written")
		}
		if perr != nil {
			if errors.Is(perr, ErrLineTooLong) {
				add(lineNo, "", FindParse, SevTampered, "%v", perr.Err)
				prevHash = "" // unknown: the next line's prev cannot be checked
			} else {
				if !rd.Partial() {
					add(lineNo, "", FindParse, SevTampered, "%s", strings.TrimPrefix(perr.Error(), fmt.Sprintf("%s:%d: ", name, lineNo)))
				}
				prevHash = LineHash(raw)
			}
			lastSeq++
			kinds = append(kinds, kcOther)
			lastKind = ""
			continue
		}
		id := ev.ID
		// canonical form: every other line's bytes are sealed by the next
		// line's prev; a session_end's bytes are sealed by its signatures,
		// which sign its canonical form, so the line must be that form
		if ev.Kind != KindSessionEnd {
			// not needed for tamper evidence
		} else if enc, err := EncodeEvent(ev); err != nil || !bytes.Equal(enc, raw) {
			add(lineNo, id, FindCanonical, SevTampered, "the line is not in canonical form (its bytes were changed)")
		}
		// sequence and id
		if ev.Seq != lastSeq+1 {
			add(lineNo, id, FindSeq, SevTampered, "seq %d follows seq %d (lines were deleted, inserted or reordered)", ev.Seq, lastSeq)
		}
		if ev.ID != EventID(ev.Seq) {
			add(lineNo, id, FindID, SevTampered, "id %q does not match seq %d (want %q)", ev.ID, ev.Seq, EventID(ev.Seq))
		}
		// chain
		if prevHash != "" && ev.Prev != prevHash {
			if lineNo == 1 {
				add(lineNo, id, FindChain, SevTampered, "the first line's prev is not the genesis value (lines before it were deleted)")
			} else {
				add(lineNo, id, FindChain, SevTampered, "prev does not match the sha256 of line %d (line %d or %d was edited, or lines were inserted or deleted between them)", lineNo-1, lineNo-1, lineNo)
			}
		}
		// header and session
		if lineNo == 1 {
			if ev.Kind != KindSessionStart || ev.Header == nil {
				add(lineNo, id, FindHeader, SevTampered, "the first line is a %s, not a session_start with a header", ev.Kind)
				rep.Session = ev.Session
			} else {
				rep.Header = ev.Header
				rep.Session = ev.Session
				if want, err := SessionID(ev.Header, ev.TS); err != nil || want != ev.Session {
					add(lineNo, id, FindSession, SevTampered, "session id %q is not derived from the header (want %q)", ev.Session, want)
				}
			}
		} else {
			if ev.Session != rep.Session {
				add(lineNo, id, FindSession, SevTampered, "session %q differs from the header's %q", ev.Session, rep.Session)
			}
			if ev.Kind == KindSessionStart {
				add(lineNo, id, FindHeader, SevTampered, "a second session_start")
			}
		}
		if (ev.Header != nil) != (ev.Kind == KindSessionStart) {
			add(lineNo, id, FindHeader, SevTampered, "header present on a %s line, or missing on a session_start", ev.Kind)
		}
		if (ev.End != nil) != (ev.Kind == KindSessionEnd) {
			add(lineNo, id, FindEnd, SevTampered, "end present on a %s line, or missing on a session_end", ev.Kind)
		}
		// payload hash
		if len(ev.Payload) > 0 {
			if _, h, err := PayloadDigest(ev.Payload); err != nil || h != ev.PayloadSHA256 {
				add(lineNo, id, FindPayload, SevTampered, "payload_sha256 %q does not match the payload (sha256 %s)", ev.PayloadSHA256, h)
			}
		}
		// causal links
		checkLink := func(field, target string, want byte, wantName string) {
			if target == "" {
				return
			}
			n, ok := parseEventID(target)
			if !ok || n >= ev.Seq || n >= int64(len(kinds)) {
				add(lineNo, id, FindLink, SevTampered, "%s %q names no earlier event", field, target)
				return
			}
			if want != kcOther && kinds[n] != want {
				add(lineNo, id, FindLink, SevTampered, "%s %q is not a %s", field, target, wantName)
			}
		}
		switch ev.Kind {
		case KindToolResponse, KindExternalEffect:
			checkLink("call", ev.Call, kcToolCall, "tool_call")
		case KindModelOutput:
			checkLink("input", ev.Input, kcModelInput, "model_input")
		case KindToolCall:
			checkLink("cause", ev.Cause, kcModelOutput, "model_output")
		default:
			checkLink("cause", ev.Cause, kcOther, "")
		}
		if ev.Kind != KindToolResponse && ev.Kind != KindExternalEffect {
			checkLink("call", ev.Call, kcToolCall, "tool_call")
		}
		if ev.Kind != KindModelOutput {
			checkLink("input", ev.Input, kcModelInput, "model_input")
		}
		// end
		if ev.Kind == KindSessionEnd && ev.End != nil {
			if ev.End.Count != ev.Seq {
				add(lineNo, id, FindEnd, SevTampered, "count %d, but the end is at seq %d", ev.End.Count, ev.Seq)
			}
			if ev.End.Count != lineNo-1 {
				add(lineNo, id, FindEnd, SevTampered, "count %d, but %d lines precede the end", ev.End.Count, lineNo-1)
			}
			if ev.End.Head != ev.Prev {
				// (whether prev is the hash of the line before is the chain check)
				add(lineNo, id, FindEnd, SevTampered, "head %s differs from the end's prev %s", ev.End.Head, ev.Prev)
			}
			// A recorded failure counts on every end, checkpoints
			// included: events appended later cannot fill the gap the
			// failure left, and a later end must not launder it.
			if failure, inferred := EndFailure(ev.End); failure != "" {
				if inferred {
					add(lineNo, id, FindFailure, SevIncomplete, "the recording failed (read from the end's reason): %s", failure)
				} else {
					add(lineNo, id, FindFailure, SevIncomplete, "the recording failed: %s", failure)
				}
			}
			// A bad signature is tampering wherever it is. A missing or
			// untrusted one matters only on the last end: a later end
			// validly signed covers every line before it, checkpoints
			// included.
			pendingUnsigned = pendingUnsigned[:0]
			sigChecks = checkSignatures(ev, opts, func(code, sev, format string, args ...any) {
				if code == FindUnsigned || code == FindUntrusted {
					pendingUnsigned = append(pendingUnsigned, Finding{Line: lineNo, ID: id, Code: code, Severity: sev, Message: fmt.Sprintf(format, args...)})
					return
				}
				add(lineNo, id, code, sev, format, args...)
			})
		} else if ev.Kind != KindSessionStart {
			rep.Events++
		}
		// bookkeeping
		kc := kcOther
		switch ev.Kind {
		case KindToolCall:
			kc = kcToolCall
		case KindModelInput:
			kc = kcModelInput
		case KindModelOutput:
			kc = kcModelOutput
		}
		// kinds is indexed by line (which is seq in an intact log)
		kinds = append(kinds, kc)
		if opts.OnEvent != nil {
			opts.OnEvent(lineNo, ev)
		}
		rep.Last[ev.Kind] = ev.ID
		lastSeq = ev.Seq
		lastKind = ev.Kind
		if rd.Partial() {
			prevHash = ""
		} else {
			prevHash = LineHash(raw)
			rep.Head = prevHash
		}
	}
	if rep.Lines == 0 {
		add(0, "", FindEmpty, SevIncomplete, "the log has no lines")
	} else if lastKind != KindSessionEnd || rd.Partial() {
		if lastKind != KindSessionEnd {
			add(rep.Lines, "", FindNoEnd, SevIncomplete, "the log does not end with a session_end (cut off, or still being written)")
		}
	} else {
		rep.Ended = true
		rep.Signatures = sigChecks
		for _, f := range pendingUnsigned {
			add(f.Line, f.ID, f.Code, f.Severity, "%s", f.Message)
		}
	}
	switch {
	case rep.counts[SevTampered] > 0:
		rep.Status = StatusTampered
	case rep.counts[SevIncomplete] > 0:
		rep.Status = StatusIncomplete
	case rep.counts[SevUnsigned] > 0:
		rep.Status = StatusUnsigned
	default:
		rep.Status = StatusOK
	}
	return rep, rep.Err()
}

// checkSignatures verifies the signatures of a session_end.
func checkSignatures(ev *Event, opts VerifyLogOptions, add func(code, sev, format string, args ...any)) []SignatureCheck {
	unsignedSev := SevUnsigned
	if opts.AllowUnsigned {
		unsignedSev = SevWarning
	}
	if len(ev.End.Signatures) == 0 {
		add(FindUnsigned, unsignedSev, "the session_end carries no signature")
		return nil
	}
	msg, err := EndMessage(ev)
	if err != nil {
		add(FindSignature, SevTampered, "%v", err)
		return nil
	}
	var checks []SignatureCheck
	valid := 0
	signers := map[string]string{} // identity -> key id of its first valid signature
	why := ""                      // why a held key does not vouch (revoked)
	sv, identifies := opts.Verifier.(SignerVerifier)
	for _, s := range ev.End.Signatures {
		c := SignatureCheck{KeyID: s.KeyID, Alg: s.Alg}
		switch {
		case opts.Verifier == nil:
			c.Status = "unchecked"
			c.Detail = "no keyring to check it with"
		default:
			var err error
			if identifies {
				c.Signer, err = sv.VerifySigner(s.KeyID, s.Alg, msg, s.Sig)
			} else {
				err = opts.Verifier.Verify(s.KeyID, s.Alg, msg, s.Sig)
			}
			first, dup := signers[c.Signer]
			switch {
			case err == nil && c.Signer != "" && dup:
				c.Status = "duplicate"
				c.Detail = fmt.Sprintf("the same key as the signature by key %s: one signer, counted once", first)
			case err == nil:
				c.Status = "valid"
				valid++
				if c.Signer != "" {
					signers[c.Signer] = s.KeyID
				}
			case errors.Is(err, ErrUnknownKey):
				c.Status = "unknown_key"
				c.Detail = err.Error()
				if why == "" && errors.Is(err, ErrRevokedKey) {
					why = c.Detail
				}
			default:
				c.Status = "invalid"
				c.Detail = err.Error()
				add(FindSignature, SevTampered, "signature by key %s (%s) does not verify: %v", s.KeyID, s.Alg, err)
			}
		}
		checks = append(checks, c)
	}
	if valid == 0 {
		keys := make([]string, 0, len(checks))
		for _, c := range checks {
			if c.Status != "invalid" {
				keys = append(keys, c.KeyID)
			}
		}
		if len(keys) > 0 {
			switch {
			case opts.Verifier == nil:
				add(FindUntrusted, unsignedSev, "signed by key(s) %s, but no keyring was given to check them", strings.Join(keys, ", "))
			case why != "":
				// a revoked key vouches for nothing, whatever else lists it
				add(FindUntrusted, unsignedSev, "signed only by key(s) %s, which no unrevoked key vouches for: %s", strings.Join(keys, ", "), why)
			default:
				add(FindUntrusted, unsignedSev, "signed only by key(s) %s, which the keyring does not hold", strings.Join(keys, ", "))
			}
		}
	}
	return checks
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
