package verify

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// EventOptions control the checks of an event log.
type EventOptions struct {
	// EndVerifier checks the session_end signatures (a keyring); nil leaves
	// them unchecked, which makes the log's completeness unproven.
	EndVerifier capture.SignatureVerifier
	// AllowUnsigned reports an unsigned or untrusted session_end as a notice
	// instead of an incomplete finding.
	AllowUnsigned bool
	// MaxChainFindings caps the chain findings listed (default 100); the
	// others are counted in one notice.
	MaxChainFindings int
}

// Opener opens the evidence for one streaming pass. The events are read
// twice: once for the hash chain and signed end (capture.VerifyLog), once for
// the checks against the seal.
type Opener func() (io.ReadCloser, error)

// CheckEvents judges the event log that open yields (named name in findings)
// against plan and adds its findings to r. It streams: memory is bounded by
// the longest line, one byte per event for the chain's link checks and one
// small entry per tool call.
func CheckEvents(r *Report, plan Plan, name string, open Opener, opts EventOptions) error {
	r.Evidence.Kind = "events"
	r.Evidence.File = name

	// pass 1: the hash chain and the signed end
	rc, err := open()
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("read events %s: %w", name, err), "check the path given to --events")
	}
	max := opts.MaxChainFindings
	if max <= 0 {
		max = 100
	}
	lr, lerr := capture.VerifyLog(rc, name, capture.VerifyLogOptions{Verifier: opts.EndVerifier, AllowUnsigned: opts.AllowUnsigned, MaxFindings: max})
	rc.Close()
	if lr == nil || (lerr != nil && exitcode.Of(lerr) == exitcode.Failure) {
		if lerr == nil {
			lerr = errors.New("no report")
		}
		return exitcode.New(exitcode.Failure, fmt.Errorf("verify events %s: %w", name, lerr), "")
	}
	r.Evidence.Lines = lr.Lines
	r.Evidence.Events = lr.Events
	r.Evidence.Session = lr.Session
	if lr.Header != nil {
		r.Evidence.ImportedFrom = lr.Header.ImportedFrom
	}
	for _, f := range lr.Findings {
		r.Findings = append(r.Findings, chainFinding(f, name, opts.AllowUnsigned))
	}
	if lr.FindingsDropped > 0 {
		r.Findings = append(r.Findings, Finding{
			Check: CheckChain, Code: "log-findings-dropped", Severity: SevNotice, Class: ClassNotice, File: name,
			Message: fmt.Sprintf("%d more chain findings were not listed", lr.FindingsDropped),
		})
	}

	// pass 2: the checks against the seal
	rc, err = open()
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("read events %s: %w", name, err), "")
	}
	defer rc.Close()
	c := newChecker(plan, name)
	rd := capture.NewReader(rc, name)
	first := true
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var perr *capture.ParseError
			if errors.As(err, &perr) {
				first = false
				continue // reported by the chain check
			}
			return exitcode.New(exitcode.Failure, fmt.Errorf("read events %s: %w", name, err), "")
		}
		if first && ev.Kind == capture.KindSessionStart {
			c.header(ev, rd.Line())
			first = false
			continue
		}
		first = false
		c.event(ev, rd.Line())
	}
	c.finish()
	r.Findings = append(r.Findings, c.findings...)
	mergeNotCheckable(r, c.notCheckable)
	return nil
}

// chainFinding maps a capture.VerifyLog finding to a verify finding.
func chainFinding(f capture.Finding, file string, allowUnsigned bool) Finding {
	out := Finding{
		Check: CheckChain, Code: "log-" + strings.ReplaceAll(f.Code, "_", "-"),
		EventID: f.ID, Message: f.Message, File: file, Line: f.Line,
	}
	switch f.Severity {
	case capture.SevTampered:
		out.Severity, out.Class = SevError, ClassTampered
	case capture.SevIncomplete:
		out.Severity, out.Class = SevError, ClassIncomplete
	case capture.SevUnsigned:
		out.Severity, out.Class = SevWarning, ClassIncomplete
		out.Message += " (without a trusted signature on the end, a cut-off tail cannot be ruled out)"
	default:
		out.Severity, out.Class = SevWarning, ClassNotice
		if allowUnsigned && (f.Code == capture.FindUnsigned || f.Code == capture.FindUntrusted) {
			out.Message += " (allowed by --allow-unsigned)"
		}
	}
	return out
}
