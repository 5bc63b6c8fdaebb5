package verify

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/graph"
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
	// GraphDigest also streams the log into its canonical N-Quads
	// (graph.StreamNQuads, the seal as plan) and records their sha256, the
	// digest 'witness graph --events FILE --seal SEAL' prints. A log that
	// does not map to a graph (an invalid line) gets no digest.
	GraphDigest bool
}

// CheckEvents judges the event log read from rd (named name in findings)
// against plan and adds its findings to r. The log is read once and checked
// by two streaming passes in step: capture.VerifyLog (hash chain, signed
// end) and the checks against the seal, fed the same bytes through a pipe.
// Memory is bounded by the longest line, one byte per event for the chain's
// link checks, and one small entry per call of a scoped tool. rd may be a
// pipe (stdin).
func CheckEvents(r *Report, plan Plan, name string, rd io.Reader, opts EventOptions) error {
	r.Evidence.Kind = "events"
	r.Evidence.File = name
	max := opts.MaxChainFindings
	if max <= 0 {
		max = 100
	}

	pr, pw := io.Pipe()
	type chainResult struct {
		lr  *capture.LogReport
		err error
	}
	done := make(chan chainResult, 1)
	go func() {
		lr, err := capture.VerifyLog(pr, name, capture.VerifyLogOptions{Verifier: opts.EndVerifier, AllowUnsigned: opts.AllowUnsigned, MaxFindings: max})
		// VerifyLog may stop early; keep draining so the other passes never block.
		io.Copy(io.Discard, pr)
		done <- chainResult{lr, err}
	}()
	var sink io.Writer = pw
	var gw *io.PipeWriter
	gdone := make(chan string, 1)
	if opts.GraphDigest {
		var gr *io.PipeReader
		gr, gw = io.Pipe()
		sink = io.MultiWriter(pw, gw)
		go func() {
			st, err := graph.StreamNQuads(graph.NewEventSource(gr, name), io.Discard,
				graph.Options{Seal: &graph.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID}}, graph.StreamOptions{})
			io.Copy(io.Discard, gr)
			if err != nil {
				gdone <- ""
				return
			}
			gdone <- st.Digest
		}()
	}
	closeAll := func(err error) {
		if err != nil {
			pw.CloseWithError(err)
			if gw != nil {
				gw.CloseWithError(err)
			}
			return
		}
		pw.Close()
		if gw != nil {
			gw.Close()
		}
	}

	c := newChecker(plan, name)
	readErr := func() error {
		rdr := capture.NewReader(io.TeeReader(rd, sink), name)
		first := true
		for {
			ev, err := rdr.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				var perr *capture.ParseError
				if errors.As(err, &perr) {
					first = false
					continue // reported by the chain check
				}
				return err
			}
			if first && ev.Kind == capture.KindSessionStart {
				c.header(ev, rdr.Line())
				first = false
				continue
			}
			first = false
			c.event(ev, rdr.Line())
		}
	}()
	closeAll(readErr)
	res := <-done
	digest := ""
	if opts.GraphDigest {
		digest = <-gdone
	}
	if readErr != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("read events %s: %w", name, readErr), "")
	}
	lr, lerr := res.lr, res.err
	if lr == nil || (lerr != nil && exitcode.Of(lerr) == exitcode.Failure) {
		if lerr == nil {
			lerr = errors.New("no report")
		}
		return exitcode.New(exitcode.Failure, fmt.Errorf("verify events %s: %w", name, lerr), "")
	}
	r.Evidence.GraphDigest = digest
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
