package verify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
)

// Options say what to verify and with which keys.
type Options struct {
	SealFile   string // required
	EventsFile string // the event log, and/or
	// GraphFile is a graph written by 'witness graph'. Alone it is judged
	// but never verified (it carries no chain: verdict unauthenticated);
	// with EventsFile it must be that log's graph, digest for digest.
	GraphFile string

	// SealKeys verify the seal's signature and, with Quorum set, its
	// cosignatures (package seal).
	SealKeys seal.VerifyOptions
	// EndVerifier checks the event log's signed end (usually the same
	// keyring); nil leaves it unchecked.
	EndVerifier eventlog.SignatureVerifier
	// AllowUnsigned accepts an event log whose end has no trusted signature.
	AllowUnsigned bool
	// Stdin is read when EventsFile is "-".
	Stdin io.Reader
	// RunEvents are the further event logs of the same agent run (several
	// --events): each is verified on its own, then all are joined into one
	// graph and judged by the causal-join and injection-provenance checks
	// (CheckRun).
	RunEvents []string
	// Anchor checks the log's anchoring in a transparency log
	// (CheckAnchoring); nil checks it only when bundles are beside the
	// events.
	Anchor *AnchorOptions
	// NoGraphDigest leaves Evidence.GraphDigest of a single log empty
	// instead of streaming the log a second time into its canonical
	// N-Quads: for a caller that streams the same graph itself and fills
	// in that stream's digest, or none when the stream fails (the
	// report). The same graph: graph.Options{} without a seal, and with
	// one the seal as its plan (GraphOptionsFor). It changes nothing else.
	NoGraphDigest bool
	// LoadedSeal, when set, is SealFile as LoadSeal(SealFile, SealKeys)
	// read it: Run judges against it and does not read the file again,
	// so a caller that needed what the seal says first (the report: its
	// graph's plan) and Run see the same bytes, even if the file is
	// replaced in between.
	LoadedSeal *SealFile
	// Tap, when set, receives the lines of EventsFile as they are read
	// and decoded (Tap); nothing else changes. It is not called for the
	// further logs of a run (RunEvents).
	Tap *Tap
	// Progress, when set, wraps each event log as it is opened (the
	// CLI's progress line, internal/progress); it must hand back the
	// bytes it reads unchanged.
	Progress func(name string, r io.Reader) io.Reader
}

// GraphOptionsFor returns the graph options of the digest verify gives a
// single log checked against plan (Evidence.GraphDigest): the seal as the
// session's plan.
func GraphOptionsFor(plan Plan) graph.Options {
	return graph.Options{Seal: &eventlog.SealRef{Digest: plan.Ref, WitnessID: plan.WitnessID}}
}

// PlanFromSeal returns what the checks need from a seal.
func PlanFromSeal(s *seal.Sealed) Plan {
	p := Plan{Ref: s.Ref(), WitnessID: s.WitnessID, SystemPromptSHA256: s.SystemPromptSHA256,
		Sampling: s.Sampling, Elicitation: s.Elicitation}
	if s.Resources != nil {
		p.Resources = append([]string{}, s.Resources...)
	}
	if s.Prompts != nil {
		p.Prompts = append([]string{}, s.Prompts...)
	}
	if s.Untrusted != nil {
		p.Untrusted = append([]string{}, s.Untrusted...)
	}
	for _, t := range s.Tools {
		p.Tools = append(p.Tools, PlanTool{Name: t.Name, Scopes: append([]string(nil), t.Scopes...), DefinitionSHA256: t.DefinitionSHA256})
	}
	return p
}

// Run verifies the evidence against the seal and returns the finished
// report. It returns an error only when no verdict can be reached: a usage
// problem (no seal file, no key to check the seal with) or an operational
// failure (an unreadable file). A seal or evidence file that is malformed or
// altered is a finding (tampered), not an error, so the report formats
// still describe it.
func Run(o Options) (*Report, error) {
	if o.SealFile == "" {
		if o.EventsFile == "" || o.GraphFile != "" {
			return nil, exitcode.New(exitcode.Usage, errors.New("no seal given"),
				"pass --seal FILE; without a seal, --events FILE alone checks the log's integrity")
		}
		return runIntegrity(o)
	}
	r := &Report{Seal: SealSummary{File: o.SealFile}, Evidence: Evidence{Kind: "none"}}
	if o.EventsFile == "" && o.GraphFile == "" {
		r.skipped = map[string]bool{}
		for _, c := range checks {
			if c.ID != CheckSeal {
				r.skipped[c.ID] = true
			}
		}
	}

	sf := o.LoadedSeal
	if sf == nil {
		var err error
		if sf, err = LoadSeal(o.SealFile, o.SealKeys); err != nil {
			return nil, err
		}
	}
	recordEnvelope(r, sf)
	s := sf.Sealed
	if s == nil {
		if exitcode.Of(sf.Err) != exitcode.Tampered {
			return nil, sf.Err
		}
		// An invalid seal: nothing it says can be relied on, so the
		// evidence is not judged against it.
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-invalid", Severity: SevError, Class: classTampered, File: o.SealFile,
			SealClause: envelopeClause(sf), Message: sf.Err.Error(),
		})
		r.notCheckable = map[string]string{}
		for _, c := range checks {
			if c.ID != CheckSeal {
				r.notCheckable[c.ID] = "the seal could not be read"
			}
		}
		if o.EventsFile != "" {
			r.Evidence = Evidence{Kind: "events", File: o.EventsFile, GraphFile: o.GraphFile}
		} else if o.GraphFile != "" {
			r.Evidence = Evidence{Kind: "graph", File: o.GraphFile}
		}
		r.Finish()
		return r, nil
	}
	if sf.Err != nil {
		// an intact envelope no key given to the verifier signed
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-unauthenticated", Severity: SevError, Class: classUnauthenticated, File: o.SealFile,
			SealClause: "envelope", Message: sf.Err.Error(),
		})
	}
	plan := PlanFromSeal(s)
	r.Seal.Digest = plan.Ref
	r.Seal.WitnessID = plan.WitnessID
	if err := checkSeal(r, s, o); err != nil {
		return nil, err
	}

	switch {
	case o.EventsFile != "" && o.GraphFile != "":
		if err := checkEventsAndGraph(r, plan, o); err != nil {
			return nil, err
		}
	case o.EventsFile != "":
		rd, closeFn, err := openEvents(o)
		if err != nil {
			return nil, err
		}
		defer closeFn()
		if err := checkEvents(r, plan, o.EventsFile, rd, eventOptions{EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned, GraphDigest: len(o.RunEvents) == 0 && !o.NoGraphDigest, Tap: o.Tap}); err != nil {
			return nil, err
		}
		switch {
		case len(o.RunEvents) > 0:
			if err := runEvents(r, plan, o); err != nil {
				return nil, err
			}
		case plan.Untrusted != nil && o.EventsFile != "-":
			if err := runEvents(r, plan, o); err != nil {
				return nil, err
			}
		}
	case o.GraphFile != "":
		f, err := openGraph(o.GraphFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := checkGraphFile(r, plan, o.GraphFile, f); err != nil {
			return nil, err
		}
		// Alone, a graph cannot be authenticated: say so as a finding that
		// decides the verdict, in place of the chain's not-checkable notice.
		delete(r.notCheckable, checkChain)
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-unauthenticated", Severity: SevWarning, Class: classUnauthenticated, File: o.GraphFile,
			Message: "a graph carries no hash chain or signed end, so nothing shows it is what the witness recorded; verify it with the event log it was made from (--graph G --events E)",
		})
	}
	if err := checkRunAnchoring(r, o); err != nil {
		return nil, err
	}
	r.Finish()
	return r, nil
}

// openEvents opens the event log (standard input for "-"). A file that is
// plainly of another kind (a cassette, a seal, a graph...) is a usage
// error naming the flag or command that reads it (SniffKind).
func openEvents(o Options) (io.Reader, func(), error) {
	var rd io.Reader
	closeFn := func() {}
	if o.EventsFile == "-" {
		if o.Stdin == nil {
			return nil, nil, exitcode.New(exitcode.Usage, errors.New("--events -: no standard input"), "")
		}
		rd = o.Stdin
	} else {
		f, err := os.Open(o.EventsFile)
		if err != nil {
			return nil, nil, exitcode.Input("read events", err, "check the path given to --events")
		}
		rd, closeFn = f, func() { f.Close() }
	}
	if o.Progress != nil {
		rd = o.Progress(o.EventsFile, rd)
	}
	br, kind := sniffReader(rd)
	if err := wrongKind("--events", o.EventsFile, kind, kindEvents); err != nil {
		closeFn()
		return nil, nil, err
	}
	return br, closeFn, nil
}

// openGraph opens a graph file; a file of another kind is a usage error
// (SniffKind).
func openGraph(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, exitcode.Input("read graph", err, "check the path given to --graph")
	}
	br, kind := sniffReader(f)
	if err := wrongKind("--graph", name, kind, kindGraph); err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{br, f}, nil
}

// runIntegrity checks an event log without a seal: its hash chain, its
// signed end and what its ends record, nothing that needs a seal. The
// checks that need one are listed as not checkable ("no seal given") and
// the verdict line says "integrity only: no seal given".
func runIntegrity(o Options) (*Report, error) {
	r := &Report{Evidence: Evidence{Kind: "events"}, integrityOnly: true}
	rd, closeFn, err := openEvents(o)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	if err := checkEvents(r, Plan{}, o.EventsFile, rd, eventOptions{
		EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned, GraphDigest: len(o.RunEvents) == 0 && !o.NoGraphDigest, IntegrityOnly: true, Tap: o.Tap,
	}); err != nil {
		return nil, err
	}
	// the further logs of a run: each one's integrity on its own
	for _, name := range o.RunEvents {
		so := o
		so.EventsFile = name
		rd, closeFn, err := openEvents(so)
		if err != nil {
			return nil, err
		}
		sub := &Report{}
		err = checkEvents(sub, Plan{}, name, rd, eventOptions{EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned, IntegrityOnly: true})
		closeFn()
		if err != nil {
			return nil, err
		}
		r.Findings = append(r.Findings, sub.Findings...)
		r.Evidence.Lines += sub.Evidence.Lines
		r.Evidence.Events += sub.Evidence.Events
	}
	if len(o.RunEvents) > 0 {
		r.Evidence.Logs = append([]string{o.EventsFile}, o.RunEvents...)
	}
	if err := checkRunAnchoring(r, o); err != nil {
		return nil, err
	}
	r.Finish()
	return r, nil
}

// recordEnvelope notes the envelope's verified signers in the report.
func recordEnvelope(r *Report, sf *SealFile) {
	if sf.Envelope == nil {
		return
	}
	r.Seal.Envelope = "dsse"
	seen := map[string]bool{}
	for _, c := range sf.Envelope.Checks {
		if c.Status == seal.StatusOK && !seen[c.Signer] {
			seen[c.Signer] = true
			r.Seal.EnvelopeSigners = append(r.Seal.EnvelopeSigners, orNoKeyID(c.KeyID))
		}
	}
}

func orNoKeyID(k string) string {
	if k == "" {
		return "(no keyid)"
	}
	return k
}

// envelopeClause is the clause of a seal-invalid finding: the first
// envelope signature that failed, "envelope" for another envelope defect,
// "" for a plain seal file.
func envelopeClause(sf *SealFile) string {
	if sf.Envelope == nil {
		return ""
	}
	for _, c := range sf.Envelope.Checks {
		if c.Status == seal.StatusBad || c.Status == seal.StatusRevoked {
			return c.Which
		}
	}
	return "envelope"
}

// checkEventsAndGraph verifies the event log and checks that the graph file
// is exactly the log's graph: the canonical N-Quads of both have the same
// sha256. The log is derived with the options the graph file shows (its
// plan, the seal node it holds, and whether it carries payload values), so
// a graph written by 'witness graph --events E [--seal S] [--no-payloads]'
// matches. Every judgement comes from the log; the graph only has to be its
// faithful rendering, and then the verdict may be verified.
func checkEventsAndGraph(r *Report, plan Plan, o Options) error {
	gf, err := openGraph(o.GraphFile)
	if err != nil {
		return err
	}
	g, gerr := graph.ReadJSONLD(gf, o.GraphFile)
	gf.Close()
	var gopts *graph.Options
	if gerr == nil {
		gopts = graphOptionsOf(g)
	}
	rd, closeFn, err := openEvents(o)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := checkEvents(r, plan, o.EventsFile, rd, eventOptions{EndVerifier: o.EndVerifier, AllowUnsigned: o.AllowUnsigned, GraphDigest: true, GraphOptions: gopts}); err != nil {
		return err
	}
	r.Evidence.GraphFile = o.GraphFile
	if gerr != nil {
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-invalid", Severity: SevError, Class: classTampered, File: o.GraphFile,
			Message: gerr.Error(),
		})
		return nil
	}
	digest, err := g.WriteNQuads(io.Discard)
	if err != nil {
		return fmt.Errorf("graph %s: canonical n-quads: %w", o.GraphFile, err)
	}
	switch logDigest := r.Evidence.GraphDigest; {
	case logDigest == "":
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-mismatch", Severity: SevError, Class: classTampered, File: o.GraphFile,
			Message: fmt.Sprintf("graph %s (sha256:%s) cannot be the graph of %s: the log does not map to a graph", o.GraphFile, digest, o.EventsFile),
		})
	case logDigest != digest:
		r.Findings = append(r.Findings, Finding{
			Check: checkChain, Code: "graph-mismatch", Severity: SevError, Class: classTampered, File: o.GraphFile,
			Message: fmt.Sprintf("graph %s (sha256:%s) is not the graph of %s (sha256:%s, derived with the plan and payload options the graph shows): it was edited, made from another log, or carries an overlay", o.GraphFile, digest, o.EventsFile, logDigest),
		})
	}
	return nil
}

// graphOptionsOf returns the options 'witness graph' must have been given
// to write g: the seal of its one plan node (none: the log's header, which
// then named no seal), and no payloads when no node carries a payload value.
func graphOptionsOf(g *graph.Graph) *graph.Options {
	o := &graph.Options{OmitPayloads: true}
	if plans := g.OfType(graph.WSeal); len(plans) == 1 {
		o.Seal = &eventlog.SealRef{Digest: plans[0].Value(graph.WSealDigest), WitnessID: plans[0].Value(graph.WWitnessID)}
	}
	for _, n := range g.Nodes {
		if len(n.Props[graph.ProvValue]) > 0 {
			o.OmitPayloads = false
			break
		}
	}
	return o
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
	case exitcode.Unauthenticated:
		r.Findings = append(r.Findings, Finding{
			Check: CheckSeal, Code: "seal-unauthenticated", Severity: SevError, Class: classUnauthenticated, File: o.SealFile,
			SealClause: "signature", Message: err.Error(),
		})
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
			Check: CheckSeal, Code: "seal-invalid", Severity: SevError, Class: classTampered, File: o.SealFile,
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
			Check: CheckSeal, Code: "seal-quorum-not-met", Severity: SevError, Class: classViolation, File: o.SealFile,
			SealClause: "cosignatures", Message: msg,
		})
	default:
		return err
	}
	return nil
}

// checkRunAnchoring checks the anchoring of every log of the run: each log
// is its own session, anchored (or not) on its own.
func checkRunAnchoring(r *Report, o Options) error {
	for _, f := range append([]string{o.EventsFile}, o.RunEvents...) {
		if err := checkAnchoring(r, f, o.Anchor); err != nil {
			return err
		}
	}
	return nil
}
