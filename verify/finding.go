package verify

import (
	"encoding/json"
	"sort"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// Severity is how loudly a finding is reported.
type Severity string

// The severities, as in SARIF's error, warning and note levels.
const (
	SevError   Severity = "error"
	SevWarning Severity = "warning"
	sevNotice  Severity = "notice"
)

// Class is what a finding says about the evidence, and so which verdict it
// can lead to.
type Class string

// The finding classes. Notices never change the verdict.
const (
	classViolation  Class = "violation"  // intact evidence that breaks the seal
	classTampered   Class = "tampered"   // evidence (or the seal) altered or invalid
	classIncomplete Class = "incomplete" // evidence cut short: no signed end, cut-off tail, a recorded failure
	// classUnauthenticated: evidence that cannot be authenticated with
	// what the verifier was given, with nothing to show it was altered: a
	// signature by a key neither the keyring nor the trust file holds, a
	// graph read without its event log ("cannot check").
	classUnauthenticated Class = "unauthenticated"
	ClassNotice          Class = "notice" // worth knowing; not a failure
)

// Verdict is the single outcome of a verification.
type Verdict string

// The verdicts, in increasing precedence: one tampered finding outweighs
// everything, then incomplete, then unauthenticated, then violation. See
// docs/design/verdicts.md.
const (
	verified   Verdict = "verified"
	Violation  Verdict = "violation"
	Incomplete Verdict = "incomplete"
	Tampered   Verdict = "tampered"
	// Unauthenticated: the evidence cannot be authenticated with what the
	// verifier was given (a seal or session end signed by a key it does not
	// hold, a graph without its event log), and nothing shows it was
	// altered: cannot check. Exit 6, its own code: a missing key is a
	// set-up to fix, not an attack (docs/design/verdicts.md).
	Unauthenticated Verdict = "unauthenticated"
)

// rank orders verdicts by precedence.
func (v Verdict) rank() int {
	switch v {
	case Tampered:
		return 4
	case Incomplete:
		return 3
	case Unauthenticated:
		return 2
	case Violation:
		return 1
	}
	return 0
}

// ExitCode is the process exit code of the verdict (internal/exitcode).
func (v Verdict) ExitCode() exitcode.Code {
	switch v {
	case Tampered:
		return exitcode.Tampered
	case Incomplete:
		return exitcode.Incomplete
	case Unauthenticated:
		return exitcode.Unauthenticated
	case Violation:
		return exitcode.Violation
	}
	return exitcode.OK
}

// verdictOf maps a finding class to the verdict it supports.
func verdictOf(c Class) Verdict {
	switch c {
	case classTampered:
		return Tampered
	case classIncomplete:
		return Incomplete
	case classUnauthenticated:
		return Unauthenticated
	case classViolation:
		return Violation
	}
	return verified
}

// Finding is one result of one check. It names the evidence (event id,
// JSON-RPC id token, line) and the seal clause it concerns where they apply.
type Finding struct {
	Check      string          `json:"check"`                 // the check that produced it (see Checks)
	Code       string          `json:"code"`                  // stable id, e.g. "unsealed-tool"
	Severity   Severity        `json:"severity"`              // error | warning | notice
	Class      Class           `json:"class"`                 // violation | tampered | incomplete | unauthenticated | notice
	EventID    string          `json:"event_id,omitempty"`    // the event's id in the log
	RPCID      json.RawMessage `json:"rpc_id,omitempty"`      // the exact JSON-RPC id token (number or string)
	Tool       string          `json:"tool,omitempty"`        // the tool concerned
	SealClause string          `json:"seal_clause,omitempty"` // e.g. "tools[2]", "tools[0].scopes", "system_prompt_sha256"
	Message    string          `json:"message"`
	File       string          `json:"file,omitempty"` // the evidence or seal file the line refers to
	Line       int64           `json:"line,omitempty"` // 1-based line in File; 0 when not tied to a line
	// Chain is the causal chain of an injection-provenance finding, from
	// the action back to the untrusted source: one "LOG:EVENT KIND:
	// EXCERPT" per step (package why).
	Chain []string `json:"chain,omitempty"`
}

// CheckStatus is the outcome of one check.
type CheckStatus string

// The check outcomes.
const (
	statusPass         CheckStatus = "pass"          // ran, found nothing that fails
	StatusFail         CheckStatus = "fail"          // ran, found at least one error or warning that is not a notice
	StatusNotCheckable CheckStatus = "not-checkable" // the evidence does not allow this check
)

// CheckResult is one check in a report.
type CheckResult struct {
	ID       string      `json:"id"`
	Title    string      `json:"title"`
	Status   CheckStatus `json:"status"`
	Findings int         `json:"findings"`         // number of findings of this check, notices included
	Reason   string      `json:"reason,omitempty"` // why the check was not checkable
}

// The checks, in report order. Each finding names one of these.
const (
	CheckSeal        = "seal-signature"
	checkChain       = "event-chain"
	checkWire        = "wire-reading"
	checkBinding     = "seal-binding"
	checkUnsealed    = "unsealed-tool"
	checkUnused      = "unused-tool"
	checkScope       = "argument-scope"
	checkPrompt      = "system-prompt"
	checkDefinitions = "tool-definitions"
	checkResources   = "sealed-resources"
	checkPrompts     = "sealed-prompts"
	checkSampling    = "sampling"
	checkElicitation = "elicitation"
	// checkJoin and CheckInjection judge a joined run (several --events);
	// they are listed only when they ran (optionalChecks).
	checkJoin      = "causal-join"
	CheckInjection = "injection-provenance"
	// checkAnchor is in a report only when anchoring is checked (a bundle
	// beside the events, verify --log or --log-quorum).
	checkAnchor = "anchor"
	// checkSession is in a report only when the log records that the
	// upstream handed its session id to another client too
	// (eventlog.MethodSessionIDCollision).
	checkSession = "session-identity"
)

// optionalChecks are listed in a report only when they ran: anchor needs
// a bundle beside the events or a log to ask; the join
// checks need the logs of a whole run, and injection-provenance a seal
// that marks untrusted sources; a report of one log against a seal without
// "untrusted" reads as before.
var optionalChecks = map[string]bool{checkJoin: true, CheckInjection: true, checkAnchor: true, checkSession: true}

// checks lists every check with its title, in report order.
var checks = []struct{ ID, Title string }{
	{CheckSeal, "seal signature and quorum"},
	{checkChain, "event log hash chain and signed end"},
	{checkSession, "the upstream gave this log's session id to no other client"},
	{checkWire, "every wire line has exactly one reading"},
	{checkBinding, "events bound to this seal"},
	{checkUnsealed, "every tool used is sealed"},
	{checkUnused, "every sealed tool is used"},
	{checkScope, "tool arguments within the sealed scopes"},
	{checkPrompt, "system prompt matches the sealed hash"},
	{checkDefinitions, "server tool definitions match the sealed pins"},
	{checkResources, "resources read or subscribed are within the sealed URI patterns"},
	{checkPrompts, "prompts got are sealed"},
	{checkSampling, "the host samples the model for the server only when the seal allows it"},
	{checkElicitation, "the host asks the user for the server only when the seal allows it"},
	{checkJoin, "every MCP tool call was asked for by a model output, every model tool call was executed"},
	{CheckInjection, "no destructive or unsealed action is causally downstream of untrusted content"},
	{checkAnchor, "the session's last end is anchored in a transparency log, and the log knows no later end"},
}

// sortFindings orders findings deterministically: findings not tied to a line
// (the seal, the session) first, then by line, then by check order, code,
// event id, seal clause and message.
func sortFindings(fs []Finding) {
	checkRank := map[string]int{}
	for i, c := range checks {
		checkRank[c.ID] = i
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Check != b.Check {
			return checkRank[a.Check] < checkRank[b.Check]
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.EventID != b.EventID {
			return a.EventID < b.EventID
		}
		if a.SealClause != b.SealClause {
			return a.SealClause < b.SealClause
		}
		return a.Message < b.Message
	})
}
