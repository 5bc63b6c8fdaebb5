package verify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
)

// Options say what to verify and with which keys.
type Options struct {
	SealFile   string // required
	EventsFile string // the event log, or
	GraphFile  string // a graph written by 'witness graph' (at most one of the two)

	// SealKeys verify the seal's signature and, with Quorum set, its
	// cosignatures (package seal).
	SealKeys seal.VerifyOptions
	// EndVerifier checks the event log's signed end (usually the same
	// keyring); nil leaves it unchecked.
	EndVerifier capture.SignatureVerifier
	// AllowUnsigned accepts an event log whose end has no trusted signature.
	AllowUnsigned bool
	// Stdin is read when EventsFile is "-".
	Stdin io.Reader
}

// PlanFromSeal returns what the checks need from a seal.
func PlanFromSeal(s *seal.Sealed) Plan {
	p := Plan{Ref: s.Ref(), WitnessID: s.WitnessID, SystemPromptSHA256: s.SystemPromptSHA256}
	for _, t := range s.Tools {
		p.Tools = append(p.Tools, PlanTool{Name: t.Name, Scopes: append([]string(nil), t.Scopes...), DefinitionSHA256: t.DefinitionSHA256})
	}
	return p
}

// Run verifies the evidence against the seal and returns the finished
// report. It returns an error only when no verdict can be reached: a usage
// problem (no seal file, no key to check the seal with, both --events and
// --graph) or an operational failure (an unreadable file). A seal or
// evidence file that is malformed or altered is a finding (tampered), not an
// error, so the report formats still describe it.
func Run(o Options) (*Report, error) {
	if o.SealFile == "" {
		return nil, exitcode.New(exitcode.Usage, errors.New("no seal given"), "pass --seal FILE")
	}
	if o.EventsFile != "" && o.GraphFile != "" {
		return nil, exitcode.New(exitcode.Usage, errors.New("--events and --graph are exclusive"), "verify either the event log or a graph made from it")
	}
	r := &Report{Seal: SealSummary{File: o.SealFile}, Evidence: Evidence{Kind: "none"}}
	if o.EventsFile == "" && o.GraphFile == "" {
		r.skipped = map[string]bool{}
		for _, c := range Checks {
			if c.ID != CheckSeal {
				r.skipped[c.ID] = true
			}
		}
	}

	s, err := seal.Load(o.SealFile)
	if err != nil {
		if exitcode.Of(err) != exitcode.Tampered {
			return nil, err
		}
		// An invalid seal: nothing it says can be relied on, so the
		// evidence is not judged against it.
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-invalid", Severity: SevError, Class: ClassTampered, File: o.SealFile,
			Message: err.Error(),
		})
		r.notCheckable = map[string]string{}
		for _, c := range Checks {
			if c.ID != CheckSeal {
				r.notCheckable[c.ID] = "the seal could not be read"
			}
		}
		if o.EventsFile != "" {
			r.Evidence = Evidence{Kind: "events", File: o.EventsFile}
		} else if o.GraphFile != "" {
			r.Evidence = Evidence{Kind: "graph", File: o.GraphFile}
		}
		r.Finish()
		return r, nil
	}
	plan := PlanFromSeal(s)
	r.Seal.Digest = plan.Ref
	r.Seal.WitnessID = plan.WitnessID
	if err := checkSeal(r, s, o); err != nil {
		return nil, err
	}

	switch {
	case o.EventsFile != "":
		var rd io.Reader
		if o.EventsFile == "-" {
			rd = o.Stdin
			if rd == nil {
				return nil, exitcode.New(exitcode.Usage, errors.New("--events -: no standard input"), "")
			}
		} else {
			f, err := os.Open(o.EventsFile)
			if err != nil {
				code := exitcode.Failure
				if os.IsNotExist(err) {
					code = exitcode.Usage
				}
				return nil, exitcode.New(code, fmt.Errorf("read events: %w", err), "check the path given to --events")
			}
			defer f.Close()
			rd = f
		}
		if err := CheckEvents(r, plan, o.EventsFile, rd, EventOptions{EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned, GraphDigest: true}); err != nil {
			return nil, err
		}
	case o.GraphFile != "":
		f, err := os.Open(o.GraphFile)
		if err != nil {
			code := exitcode.Failure
			if os.IsNotExist(err) {
				code = exitcode.Usage
			}
			return nil, exitcode.New(code, fmt.Errorf("read graph: %w", err), "check the path given to --graph")
		}
		defer f.Close()
		if err := CheckGraph(r, plan, o.GraphFile, f); err != nil {
			return nil, err
		}
	}
	r.Finish()
	return r, nil
}

// checkSeal verifies the seal's signatures (and quorum) and records the
// outcome as findings.
func checkSeal(r *Report, s *seal.Sealed, o Options) error {
	res, err := seal.Verify(s, o.SealKeys)
	if res != nil {
		// one entry per signer (key material), not per label
		seen := map[string]bool{}
		for _, c := range res.Checks {
			if c.Status == seal.StatusOK && c.KeyID != "" && !seen[c.Signer] {
				seen[c.Signer] = true
				r.Seal.Signers = append(r.Seal.Signers, c.KeyID)
			}
		}
	}
	if err == nil {
		return nil
	}
	switch exitcode.Of(err) {
	case exitcode.Tampered:
		clause := "signature"
		if res != nil {
			for _, c := range res.Checks {
				if c.Status != seal.StatusOK {
					clause = c.Which
					break
				}
			}
		}
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-invalid", Severity: SevError, Class: ClassTampered, File: o.SealFile,
			SealClause: clause, Message: err.Error(),
		})
	case exitcode.Violation:
		var signed []string
		if res != nil {
			for _, c := range res.Checks {
				signed = append(signed, fmt.Sprintf("%s %s", c.Which, c.Status))
			}
		}
		msg := err.Error()
		if len(signed) > 0 {
			msg += " (" + strings.Join(signed, ", ") + ")"
		}
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-quorum-not-met", Severity: SevError, Class: ClassViolation, File: o.SealFile,
			SealClause: "cosignatures", Message: msg,
		})
	default:
		return err
	}
	return nil
}
