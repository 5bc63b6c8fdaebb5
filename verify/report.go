package verify

import (
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// ReportFormat and ReportVersion identify the JSON report
// (docs/formats/verdict.md).
const (
	reportFormat  = "witness-verdict"
	reportVersion = 1
)

// Report is the outcome of one verification: one verdict, the checks that
// ran and the findings they produced, in a deterministic order.
type Report struct {
	Format   string        `json:"format"`
	V        int           `json:"v"`
	Verdict  Verdict       `json:"verdict"`
	ExitCode int           `json:"exit_code"`
	Seal     SealSummary   `json:"seal"`
	Evidence Evidence      `json:"evidence"`
	Checks   []CheckResult `json:"checks"`
	Findings []Finding     `json:"findings"`
	Summary  Summary       `json:"summary"`
	// Qualifiers say what the evidence cannot prove, as the verdict line
	// does: "recording failed: …", "imported, not observed …",
	// "unauthenticated: …", "also violation: …".
	Qualifiers []string `json:"qualifiers,omitempty"`

	notCheckable map[string]string
	skipped      map[string]bool
	// integrityOnly: no seal was given; only the event chain was checked.
	integrityOnly bool
	// unrun: checks that judged nothing (their notices say why).
	unrun map[string]string
	// ran: the optional checks that ran (optionalChecks).
	ran map[string]bool
}

// IntegrityOnly is the qualifier of a report made without a seal: only
// the log's chain, signed end and end reasons were checked.
const IntegrityOnly = "integrity only: no seal given"

// SealSummary names the seal the evidence was judged against.
type SealSummary struct {
	File      string   `json:"file,omitempty"`
	Digest    string   `json:"digest,omitempty"` // the seal's Ref (0.1.0 seal_ref)
	WitnessID string   `json:"witness_id,omitempty"`
	Signers   []string `json:"signers,omitempty"` // key ids whose signatures verified
	// Envelope is "dsse" when the seal came in a DSSE envelope;
	// EnvelopeSigners are the key ids of the envelope's verified
	// signatures, one per distinct key.
	Envelope        string   `json:"envelope,omitempty"`
	EnvelopeSigners []string `json:"envelope_signers,omitempty"`
}

// Evidence describes what was read.
type Evidence struct {
	Kind string `json:"kind"` // "events" | "graph" | "none"
	File string `json:"file,omitempty"`
	// Logs are the event logs of a run given together (several
	// --events): each verified on its own, then joined (File is the
	// first).
	Logs         []string `json:"logs,omitempty"`
	Session      string   `json:"session,omitempty"`
	Lines        int64    `json:"lines"`  // lines (events) or nodes (graph) read
	Events       int64    `json:"events"` // events checked (graph: activities and entities mapped back to events)
	ImportedFrom string   `json:"imported_from,omitempty"`
	GraphDigest  string   `json:"graph_digest,omitempty"` // sha256 of the canonical N-Quads, when a graph was read
	// GraphFile is the graph checked against the event log (--graph with
	// --events): it must be the log's graph, digest for digest.
	GraphFile string `json:"graph_file,omitempty"`
	// Sources counts the log's lines (a graph's events) by source:
	// observed, reported, imported.
	Sources map[string]int64 `json:"sources,omitempty"`
	// Provenance names the sources present, sorted and joined by "+"
	// ("observed", "observed+reported", "imported"). A log with imported
	// events was converted from another tool's log: the witness did not
	// observe them, which the verdict line says.
	Provenance string `json:"provenance,omitempty"`
	// Failures lists the session ends that record a failed recording.
	Failures []RecordedFailure `json:"failures,omitempty"`
}

// RecordedFailure is a session_end that records why the recording failed
// (eventlog.EndFailure): such a log is at best incomplete.
type RecordedFailure struct {
	EventID string `json:"event_id"`
	Line    int64  `json:"line,omitempty"`
	Failure string `json:"failure"`
	// FromReason is true when the failure was read from the end's reason
	// (a log written before end.failure existed).
	FromReason bool `json:"from_reason,omitempty"`
}

// imported reports whether any event of the evidence was imported (not
// observed by the witness).
func (e Evidence) imported() bool { return e.Sources[string(eventlog.SourceImported)] > 0 }

// addSource counts one event's source.
func (e *Evidence) addSource(src string) {
	if src == "" {
		return
	}
	if e.Sources == nil {
		e.Sources = map[string]int64{}
	}
	e.Sources[src]++
}

// finishProvenance sets Provenance from Sources.
func (e *Evidence) finishProvenance() {
	names := make([]string, 0, len(e.Sources))
	for k := range e.Sources {
		names = append(names, k)
	}
	sort.Strings(names)
	e.Provenance = strings.Join(names, "+")
}

// Summary counts findings by severity.
type Summary struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Notices  int `json:"notices"`
}

// Finish sorts the findings, turns the reasons of checks that could not run
// into notices, fills each check's status and computes the verdict. Call it
// once, after every check.
//
// A check that could not run, or ran on nothing although there was
// something to judge, is not-checkable, never pass: a pass must mean that
// something was checked and found in order (or that there was nothing to
// check). Without a seal, every check but the event chain is not
// checkable for the one reason IntegrityOnly, said once in the verdict
// line rather than once per check.
func (r *Report) Finish() {
	notCheckable, skipped := r.notCheckable, r.skipped
	for id := range optionalChecks {
		if !r.ran[id] {
			skipped = withSkipped(skipped, id)
		}
	}
	if r.integrityOnly {
		notCheckable = map[string]string{}
		for _, c := range checks {
			if c.ID != checkChain && c.ID != checkAnchor {
				notCheckable[c.ID] = IntegrityOnly
			}
		}
		if v := r.notCheckable[checkAnchor]; v != "" {
			notCheckable[checkAnchor] = v
		}
	}
	for _, c := range checks {
		if reason := notCheckable[c.ID]; reason != "" && !skipped[c.ID] && !r.integrityOnly {
			r.Findings = append(r.Findings, Finding{
				Check: c.ID, Code: "not-checkable", Severity: sevNotice, Class: ClassNotice,
				File: r.Evidence.File, Message: c.ID + " not checkable: " + reason,
			})
		}
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	sortFindings(r.Findings)
	r.Format, r.V = reportFormat, reportVersion
	counts := map[string]int{}
	failed := map[string]bool{}
	r.Verdict = verified
	r.Summary = Summary{}
	for _, f := range r.Findings {
		counts[f.Check]++
		if f.Class != ClassNotice {
			failed[f.Check] = true
		}
		if v := verdictOf(f.Class); v.rank() > r.Verdict.rank() {
			r.Verdict = v
		}
		switch f.Severity {
		case SevError:
			r.Summary.Errors++
		case SevWarning:
			r.Summary.Warnings++
		default:
			r.Summary.Notices++
		}
	}
	r.Checks = r.Checks[:0]
	for _, c := range checks {
		if skipped[c.ID] {
			continue
		}
		cr := CheckResult{ID: c.ID, Title: c.Title, Findings: counts[c.ID], Status: statusPass}
		switch {
		case failed[c.ID]:
			cr.Status = StatusFail
			cr.Reason = notCheckable[c.ID]
		case notCheckable[c.ID] != "":
			cr.Status = StatusNotCheckable
			cr.Reason = notCheckable[c.ID]
		case r.unrun[c.ID] != "":
			cr.Status = StatusNotCheckable
			cr.Reason = r.unrun[c.ID]
		}
		r.Checks = append(r.Checks, cr)
	}
	r.ExitCode = int(r.Verdict.ExitCode())
	r.Qualifiers = r.qualifiers()
}

// markRan records that an optional check ran.
func (r *Report) markRan(id string) {
	if r.ran == nil {
		r.ran = map[string]bool{}
	}
	r.ran[id] = true
}

// withSkipped returns a copy of skipped with id added (the report's own
// map is left as it is).
func withSkipped(skipped map[string]bool, id string) map[string]bool {
	out := make(map[string]bool, len(skipped)+1)
	for k, v := range skipped {
		out[k] = v
	}
	out[id] = true
	return out
}

// Code returns the exit code of the verdict.
func (r *Report) Code() exitcode.Code { return r.Verdict.ExitCode() }

// mergeUnrun records the checks that judged nothing, for Finish.
func mergeUnrun(r *Report, m map[string]string) {
	for k, v := range m {
		if r.unrun == nil {
			r.unrun = map[string]string{}
		}
		if _, ok := r.unrun[k]; !ok {
			r.unrun[k] = v
		}
	}
}

// mergeNotCheckable records the reasons of checks that could not run, for
// finalize.
func mergeNotCheckable(r *Report, m map[string]string) {
	if r.notCheckable == nil {
		r.notCheckable = map[string]string{}
	}
	for k, v := range m {
		if _, ok := r.notCheckable[k]; !ok {
			r.notCheckable[k] = v
		}
	}
}
