package firewall

import (
	"io"

	"github.com/agent-trace-witness/witness/firewall/internal/core"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
)

// Activation is one policy activation record.
type Activation = core.Activation

// PolicyRead is one policy_read result: the revision it was read under,
// the fixed rules and the editable English document.
type PolicyRead = core.PolicyRead

// HistoryFinding is one inconsistency of a policy history, or between a
// check and the history.
type HistoryFinding = core.HistoryFinding

// Timeline is a policy history in activation sequence order.
type Timeline = core.Timeline

// ActivationReport is the result of placing an audit snapshot's checks in
// a policy history.
type ActivationReport = core.ActivationReport

// AuditVerdict is the result of verifying a snapshot: complete or not
// (its structure), and authenticated or not (its signature records), two
// separate questions.
type AuditVerdict = core.AuditVerdict

// AuditVerifyOptions control VerifyAuditWith.
type AuditVerifyOptions = core.AuditVerifyOptions

// AuditLine is one check record as VerifyAudit read it: strictly parsed
// (one JSON object, unique member names at every depth in any letter case,
// nesting within jsonlimit.MaxDepth).
type AuditLine = core.AuditLine

// DeriveResult counts what DeriveLog wrote.
type DeriveResult = core.DeriveResult

// Check is one evaluated candidate: its reference, input, decision and the
// provider trace.
type Check = core.Check

// Engine runs a policy's middleware chains over candidates.
type Engine = core.Engine

// EvaluateOptions configures an evaluation.
type EvaluateOptions = core.EvaluateOptions

// Summary counts the outcomes of an evaluation.
type Summary = core.Summary

// GroupMember is one member's evidence: its audit snapshot and its event
// log.
type GroupMember = core.GroupMember

// GroupOptions configures a group verification.
type GroupOptions = core.GroupOptions

// GroupVerdict is the result of VerifyGroup.
type GroupVerdict = core.GroupVerdict

// HostLogCorrelation is the result of correlating a host log with an
// audit snapshot.
type HostLogCorrelation = core.HostLogCorrelation

// HostView is what the host saw of one check: a refused send's
// FirewallSendError, an admitted item's guidance, or nothing (withheld).
type HostView = core.HostView

// HostViewer derives host views check by check, in evaluation order; it
// remembers which incoming messages the runtime was shown, since only
// those (and the incoming candidate) may be guidance subjects.
type HostViewer = core.HostViewer

// Mapping says which MCP tools send and deliver application messages and
// where in their payloads the message fields are.
type Mapping = core.Mapping

// OverlayResult counts what AddAuditOverlay added.
type OverlayResult = core.OverlayResult

// WhatIf is a message-policy counterfactual source for replay: the policy
// in enforcement mode re-evaluated over the messages of a graph.
type WhatIf = core.WhatIf

// Policy is a decoded message-policy file with every default filled in.
type Policy = core.Policy

// Provider is a decision provider: it answers named bounded-choice
// questions, or fails with a typed operational error (which makes the
// rule's check unavailable).
type Provider = core.Provider

// RecordedProvider answers from the provider judgments retained in an
// earlier audit snapshot, by question key, and is unavailable for any
// question it has no record of.
type RecordedProvider = core.RecordedProvider

// AuthTampered: a signature does not verify (or was made over other
// bytes), or was made by a revoked key.
const AuthTampered = core.AuthTampered

// LoadPolicyRead reads a policy_read list (a configuration input: errors
// are usage errors naming file, line, column and field).
func LoadPolicyRead(path string) (*PolicyRead, error) {
	return core.LoadPolicyRead(path)
}

// LoadActivations reads an activation history: an audit snapshot (its
// activation records; the snapshot must be complete and untampered), or
// a JSON document with an "activations" array (the decisions feed's
// parallel array; its other members are not read).
func LoadActivations(path string) ([]Activation, error) {
	return core.LoadActivations(path)
}

// BuildTimeline replays the activations over the base policy (its fixed
// rules, chains and settings; its initialRules only as a source of rule
// text), starting from an empty editable document, taking each added
// rule's text from the policy_read list of the same revision, else from
// the lists that agree on it, else from the base policy's initialRules.
// Every inconsistency is a finding; nothing is guessed.
func BuildTimeline(base *Policy, acts []Activation, reads []*PolicyRead) *Timeline {
	return core.BuildTimeline(base, acts, reads)
}

// CheckAuditActivations reads a complete snapshot and places each check
// record in the policy history: acts (nil: the snapshot's own activation
// records) with the policy_read lists, over base (optional: without it
// only revisions and rule ids are compared).
func CheckAuditActivations(path string, base *Policy, acts []Activation, reads []*PolicyRead) (*ActivationReport, error) {
	return core.CheckAuditActivations(path, base, acts, reads)
}

// WriteTimeline writes a policy history as text: one line per activation
// (sequence, time, revision, added and removed ids, the rules then
// active), then each finding.
func WriteTimeline(w io.Writer, tl *Timeline, findings []HistoryFinding) error {
	return core.WriteTimeline(w, tl, findings)
}

// LoadJudgments reads the provider judgments retained in the check records
// of a complete snapshot, for the recorded provider. An incomplete snapshot
// is refused with the Incomplete exit code.
func LoadJudgments(path string) (*RecordedProvider, error) {
	return core.LoadJudgments(path)
}

// VerifyAuditFileWith verifies the snapshot at path. The returned error is
// an I/O failure only; the verdict says complete or not, and authenticated
// or not.
func VerifyAuditFileWith(path string, opts AuditVerifyOptions) (*AuditVerdict, error) {
	return core.VerifyAuditFileWith(path, opts)
}

// VerifyAudit verifies a snapshot read from r; name is used in messages.
// When each is non-nil it is called with every check record as it is read.
// Signatures are not checked (see VerifyAuditWith).
func VerifyAudit(r io.Reader, name string, each func(AuditLine) error) (*AuditVerdict, error) {
	return core.VerifyAudit(r, name, each)
}

// VerifyAuditWith verifies a snapshot read from r: its structure (start,
// checks, activations, complete; counts and digest) and its signature
// records. The returned error is an I/O failure only.
func VerifyAuditWith(r io.Reader, name string, opts AuditVerifyOptions) (*AuditVerdict, error) {
	return core.VerifyAuditWith(r, name, opts)
}

// DeriveLog writes to w a new log made of the event log r without its
// session_end (every line byte-identical, so the hash chain and event ids
// hold), then one message event per message the mapping derives from the
// tool events, in log order (cause: the tool_call or tool_response it comes
// from), then an unsigned session_end whose reason says the log was derived.
// The original log stays the evidence; the copy is a working file.
func DeriveLog(r io.Reader, name string, w io.Writer, mapping *Mapping, mappingDigest string) (*DeriveResult, error) {
	return core.DeriveLog(r, name, w, mapping, mappingDigest)
}

// NewEngine prepares the chains of p. provider answers English questions
// (UnavailableProvider when nil).
func NewEngine(p *Policy, provider Provider, localAgent string, capturedAt string) (*Engine, error) {
	return core.NewEngine(p, provider, localAgent, capturedAt)
}

// EvaluateFile reads the event log at path twice: once to digest it and
// infer the local agent, once to check every message. Memory is bounded by
// the history windows (maximumHistoryRecords per conversation).
func EvaluateFile(path string, opts EvaluateOptions) (*Summary, error) {
	return core.EvaluateFile(path, opts)
}

// CheckAuditExport applies the seed's publication rules for an operator
// audit snapshot ("Operator audit snapshot") to the destination path,
// before any work is done, beyond the evidence rules atomicfile applies to
// every output:
//
//   - the destination must be absolute: a relative name means a different
//     file from another working folder (usage error);
//   - the destination must be absent or a regular file with one link: a
//     hard-linked target would change what another name shows when the
//     snapshot is replaced (usage error, --force cannot help);
//   - the staging file "<path>.partial" must be absent: a stale one left by
//     a killed run is never removed for the user; the error says what it
//     is and the hint how to remove it (failure: the publication cannot be
//     carried out until it is gone).
//
// flag names the option in errors ("--out" when empty).
func CheckAuditExport(path string, flag string) error {
	return core.CheckAuditExport(path, flag)
}

// ParseGroupMember reads a member argument, AUDIT=EVENTS.
func ParseGroupMember(arg string) (GroupMember, error) {
	return core.ParseGroupMember(arg)
}

// VerifyGroup checks, across the audits and logs of several members of one
// conversation, what can be checked offline: identical canonical results,
// peer content unchanged and attributed (or explicitly withheld), refusals
// before any send bound, shared history unchanged by local disagreement;
// with a policy, that each audit's decisions are the re-evaluation's.
//
// A member given twice (same file, same snapshot, same log, or the same
// agent) is a usage error; an incomplete audit or log is exit 4; an audit
// that does not belong to the log beside it (a swapped file) is invalid
// evidence, exit 3. Broken invariants are findings (GroupVerdict.Err: exit
// 1).
func VerifyGroup(opts GroupOptions) (*GroupVerdict, error) {
	return core.VerifyGroup(opts)
}

// CorrelateHostLogFiles correlates the host log at hostPath with the
// audit snapshot at auditPath (which must be complete and untampered).
func CorrelateHostLogFiles(auditPath string, hostPath string) (*HostLogCorrelation, error) {
	return core.CorrelateHostLogFiles(auditPath, hostPath)
}

// WriteHostLogCorrelation writes a correlation as text, one line per
// reference found, then the totals.
func WriteHostLogCorrelation(w io.Writer, c *HostLogCorrelation) error {
	return core.WriteHostLogCorrelation(w, c)
}

// NewHostViewer returns a viewer for the checks of e.
func NewHostViewer(e *Engine) *HostViewer {
	return core.NewHostViewer(e)
}

// LoadMapping reads and decodes a mapping file (a configuration input: its
// errors carry the Usage code).
func LoadMapping(path string) (*Mapping, error) {
	return core.LoadMapping(path)
}

// DecodeMapping decodes a mapping document.
func DecodeMapping(data []byte, name string) (*Mapping, error) {
	return core.DecodeMapping(data, name)
}

// CheckLine renders one check as a line of text: event, direction,
// operation, disposition, reason, decidedBy, cause, next action, the
// collective failure when there is one (failure=deadline-passed), check id.
func CheckLine(c *Check) string {
	return core.CheckLine(c)
}

// WriteSummary writes the totals of an evaluation as text.
func WriteSummary(w io.Writer, s *Summary) error {
	return core.WriteSummary(w, s)
}

// DescribePolicy writes a human summary of a decoded policy and its digest.
func DescribePolicy(w io.Writer, name string, p *Policy) error {
	return core.DescribePolicy(w, name, p)
}

// WriteJSONLine writes v as indented JSON and a newline.
func WriteJSONLine(w io.Writer, v any) error {
	return core.WriteJSONLine(w, v)
}

// AuditFile returns o with the rules an audit snapshot (or a derived log)
// is published under, as the seed publishes a snapshot: staged in
// "<path>.partial", created exclusively (a stale one left by an
// interrupted run is refused), mode 0600. Write it with atomicfile.Publish,
// which keeps the evidence rules of o (never over an input, never through
// a symlink, an existing file only with o.Force) and removes the staging
// file on failure.
func AuditFile(path string, o atomicfile.Options) atomicfile.Options {
	return core.AuditFile(path, o)
}

// AddAuditOverlayFile adds the checks of the audit snapshot at path to g.
func AddAuditOverlayFile(g *graph.Graph, path string) (*OverlayResult, error) {
	return core.AddAuditOverlayFile(g, path)
}

// AddAuditOverlay adds one witness:FirewallCheck activity per check record
// of a complete snapshot: prov:used the checked message (found by its post
// reference, else by the check's event id), with its disposition, reason,
// decidedBy, cause, next action and check id. An incomplete snapshot is
// refused (exit code Incomplete).
func AddAuditOverlay(g *graph.Graph, r io.Reader, name string) (*OverlayResult, error) {
	return core.AddAuditOverlay(g, r, name)
}

// NewWhatIf prepares a what-if source for policy p (its mode is set to
// enforcement, as the question is what it would have withheld or refused).
func NewWhatIf(p *Policy, provider Provider, localAgent string, ts string) *WhatIf {
	return core.NewWhatIf(p, provider, localAgent, ts)
}

// LoadPolicy reads and decodes a message-policy file. Errors carry the Usage
// exit code (a policy is a configuration input) except I/O failures.
func LoadPolicy(path string) (*Policy, error) {
	return core.LoadPolicy(path)
}

// DecodePolicy decodes a message-policy document. name is used in errors.
func DecodePolicy(data []byte, name string) (*Policy, error) {
	return core.DecodePolicy(data, name)
}
