package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/firewall"
	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// firewallOptions are the flags of the `witness firewall` subcommands.
type firewallOptions struct {
	policy      string
	events      string
	output      outputOptions
	agent       string
	mapping     string
	recorded    string
	format      string
	canonical   bool
	keys        keyringOptions // --keyring (evaluate, audit verify), --trust (audit verify)
	requireSig  bool
	hostView    bool     // evaluate: print what the host saw of each check
	hostLog     string   // audit correlate
	activations string   // evaluate, audit activations: the activation history
	policyReads []string // evaluate, audit activations: policy_read lists
	group       bool     // audit verify --group
}

func newFirewallCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "firewall",
		Short: "Forensics of a message firewall: policy files, offline re-evaluation, audit snapshots",
		Long: `firewall works with the personal message firewall of agents that talk to other
agents (the Social Harness message-policy specification): it checks
org.social-harness/message-policy/v1 files and prints their installation digest
(activeRevision), re-evaluates a policy's built-in rules offline over captured
message events, writes and verifies org.social-harness/firewall-audit/v4
snapshots, and derives message events from MCP tool calls with a mapping file.
It makes no network call. See docs/formats/firewall.md.`,
	}
	policy := &cobra.Command{Use: "policy", Short: "Message-policy files"}
	policy.AddCommand(newFirewallPolicyCheckCmd(a))
	audit := &cobra.Command{Use: "audit", Short: "Firewall audit snapshots"}
	audit.AddCommand(newFirewallAuditVerifyCmd(a), newFirewallAuditCorrelateCmd(a), newFirewallAuditActivationsCmd(a))
	c.AddCommand(policy, newFirewallEvaluateCmd(a), audit, newFirewallDeriveCmd(a))
	return c
}

func newFirewallPolicyCheckCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Decode a message-policy file strictly and print its activeRevision",
		Long: `check decodes FILE as org.social-harness/message-policy/v1 exactly as the
specification's tables say (at most 1 MiB; every property, default and range;
any property the format does not name is refused with its JSON path) and
prints the installation and its digest, activeRevision: the SHA-256 of the
canonical installation. Exit 0 when the file is valid, 2 when it is not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.policy = args[0]
			return runFirewallPolicyCheck(a, &o)
		},
	}
	c.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	completeChoices(c, "format", firewallFormats...)
	c.Flags().BoolVar(&o.canonical, "canonical", false, "print the canonical installation JSON (the bytes activeRevision hashes)")
	return c
}

func runFirewallPolicyCheck(a *app, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	p, err := firewall.LoadPolicy(o.policy)
	if err != nil {
		return err
	}
	if o.canonical {
		b, err := p.CanonicalInstallation()
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(append(b, '\n'))
		return err
	}
	if o.format == "json" {
		rev, err := p.ActiveRevision()
		if err != nil {
			return err
		}
		return firewall.WriteJSONLine(a.stdout, map[string]any{"policy": o.policy, "valid": true, "activeRevision": rev, "installation": p.Installation()})
	}
	return firewall.DescribePolicy(a.stdout, o.policy, p)
}

// firewallEvaluateLong is the help text of `witness firewall evaluate`.
const firewallEvaluateLong = `evaluate runs the policy's built-in code middleware (and its English rules
through a decision provider that needs no model) over the message events of an
event log, in log order, each check seeing the earlier records of its own
conversation within maximumHistoryRecords. It prints one line per check
(event, direction, operation, disposition, reason, decidedBy, cause, next
action, check reference) and the totals; --out writes an
org.social-harness/firewall-audit/v4 snapshot, signed with the active key of
--keyring, else of the default keyring (docs/formats/keys.md: the same
for every command), as capture signs a
session end: one signature record after the complete record, over every
byte before it (docs/formats/firewall.md). Without a keyring the snapshot is
written unsigned.

English rules are answered by the "unavailable" provider (every English check
unavailable: enforcement holds, guidance admits) unless --recorded names an
earlier complete audit snapshot whose retained provider judgments answer the
same questions; its check records also give each check its duration (elapsedMs,
else the provider calls' latencyMs), so the timing rules that need one apply
(an answer or request checked past its deadline, a gather whose deadline passed
during its check: failure=deadline-passed). --mapping also derives messages
from MCP tool calls.

--activations replays a policy history (policy_update's activation records,
from an audit snapshot or {"activations": [...]}); each message is checked
under the installation active at its event's time, named by that
activation's activeRevision, with rule texts from --policy-read lists (else
the policy file's initialRules). A message before the first activation is
not checked; the history and its findings are printed after the totals.

--host-view prints, after each check, what the host saw: a refused send's
FirewallSendError text (reason, each next action, check reference), an
admitted item's guidance with its subject references, or that a withheld
item was not shown. The audit snapshot (--out) is published only to an
absolute path, never over a hard-linked file, and never while a stale
<out>.partial exists.`

func newFirewallEvaluateCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "evaluate --policy FILE --events FILE [--out audit.ndjson]",
		Short: "Re-evaluate a policy's rules offline over captured messages",
		Long:  firewallEvaluateLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFirewallEvaluate(a, &o)
		},
	}
	o.addEvaluateFlags(c)
	return c
}

// addEvaluateFlags registers the flags of `witness firewall evaluate` on c.
func (o *firewallOptions) addEvaluateFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.policy, "policy", "", "message-policy file (org.social-harness/message-policy/v1)")
	f.StringVar(&o.events, "events", "", "event log with message events")
	o.output.AddFlags(c, "write the audit snapshot (NDJSON) to FILE", false)
	f.StringVar(&o.agent, "agent", "", "our agent's id (default: the sender of the first outgoing message)")
	f.StringVar(&o.mapping, "mapping", "", "message mapping file: derive messages from tool calls too")
	f.StringVar(&o.recorded, "recorded", "", "answer English questions from the judgments kept in this audit snapshot")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	completeChoices(c, "format", firewallFormats...)
	f.StringVar(&o.activations, "activations", "", "activation history (an audit snapshot or {\"activations\": [...]}): check each message under the installation active at its time")
	f.StringArrayVar(&o.policyReads, "policy-read", nil, "a policy_read list giving rule texts for --activations (repeatable)")
	f.BoolVar(&o.hostView, "host-view", false, "after each check, print what the host saw: a refused send's FirewallSendError text, an item's guidance with its subjects")
	// signs as capture signs a session end: only with a keyring named on
	// purpose (--keyring or $WITNESS_KEYRING)
	o.keys.AddFlags(c, keyUse{Role: "keyring whose active key signs the audit snapshot"})
	_ = c.MarkFlagRequired("policy")
	_ = c.MarkFlagRequired("events")
}

func runFirewallEvaluate(a *app, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	o.output.Reads(append([]string{o.policy, o.events, o.mapping, o.recorded, o.keys.Input(a), o.activations}, o.policyReads...)...)
	if o.output.Out != "" { // --out is optional: without it, no audit
		if err := o.output.Check(a); err != nil {
			return err
		}
		if err := firewall.CheckAuditExport(o.output.Out, "--out"); err != nil {
			return err
		}
	}
	opts, err := o.evaluateOptions(a)
	if err != nil {
		return err
	}
	rep, err := firewall.NewEvalReport(a.stdout, o.format, opts.Policy, opts.Timeline, o.hostView)
	if err != nil {
		return err
	}
	opts.Each = rep.Each
	out := o.output.File()
	if o.keys.Keyring != "" && out == "" {
		return usageError(fmt.Errorf("--keyring signs the audit snapshot, but there is no --out"), "add --out audit.ndjson")
	}
	var sum *firewall.Summary
	if out == "" {
		sum, err = firewall.EvaluateFile(o.events, opts)
	} else if opts.Signers, err = o.keys.Signers(a); err == nil {
		err = atomicfile.Publish(out, firewall.AuditFile(out, o.output.Rules(a)), func(w io.Writer) error {
			opts.Audit = w
			var e error
			sum, e = firewall.EvaluateFile(o.events, opts)
			return e
		})
	}
	if err != nil {
		return err
	}
	return rep.Finish(sum, opts, out)
}

// evaluateOptions loads what `witness firewall evaluate` evaluates with:
// the policy, the mapping, the recorded judgments and the policy history.
func (o *firewallOptions) evaluateOptions(a *app) (firewall.EvaluateOptions, error) {
	p, err := firewall.LoadPolicy(o.policy)
	if err != nil {
		return firewall.EvaluateOptions{}, err
	}
	opts := firewall.EvaluateOptions{Policy: p, LocalAgent: o.agent, Timestamp: eventlog.Timestamp(a.getenv)}
	if o.mapping != "" {
		m, err := firewall.LoadMapping(o.mapping)
		if err != nil {
			return opts, err
		}
		opts.Mapping = m
		if opts.LocalAgent == "" {
			opts.LocalAgent = m.LocalAgent
		}
	}
	if o.recorded != "" {
		rp, err := firewall.LoadJudgments(o.recorded)
		if err != nil {
			return opts, err
		}
		opts.Provider = rp
		opts.Elapsed = rp.Elapsed // the durations it recorded: the timing rules that need them apply
	}
	if len(o.policyReads) > 0 && o.activations == "" {
		return opts, usageError(fmt.Errorf("--policy-read gives rule texts to an activation history, but there is no --activations"), "add --activations FILE")
	}
	if o.activations != "" {
		if opts.Timeline, err = loadTimeline(p, o.activations, o.policyReads); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

func newFirewallAuditVerifyCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify that a firewall audit snapshot is complete and who signed it",
		Long: `verify reads an org.social-harness/firewall-audit/v4 snapshot and answers two
separate questions, one line each.

Complete: "complete", or "incomplete" with the reason: missing start or
complete record, mismatched snapshot id, check or activation count or sha256
digest, a malformed or truncated line (a member name given twice at any
depth, also in another letter case, is malformed), or records out of order.

Authenticated: "authenticated" when a key of the keyring (--keyring, else
$WITNESS_KEYRING or the default keyring when it exists) or of the trust file
(--trust), not revoked in either, signed every byte of the snapshot;
"unauthenticated" when there is no signature record or no key given holds
its key; "tampered" when a signature does not verify over these bytes or was
made by a revoked key.

Exit codes: 0 complete (signed or not), 3 tampered (a bad or revoked
signature, whatever the rest), 4 incomplete, or unauthenticated with
--require-signature (docs/exit-codes.md).

With --group, the arguments are the members of one conversation, each
AUDIT=EVENTS (its audit snapshot and its event log), and verify checks what
can be checked offline across them: every member's canonical result of an
operation is identical; peer content reached each member unchanged and
attributed (or withheld, as its audit records); a refused send reached no
one; where members decided the same content differently, the shared record
is the same. With --policy it also re-evaluates each log and names the input
of every decision the audit records differently. Exit 0 when every invariant
holds, 1 when one is broken, 2 for a member given twice or fewer than two,
3 for an audit that does not belong to the log beside it, 4 for an
incomplete audit or log.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.group {
				return runFirewallAuditVerifyGroup(a, args, &o)
			}
			if len(args) != 1 || o.policy != "" {
				return usageError(fmt.Errorf("verify takes one FILE (several members, and --policy, only with --group)"), "verify one snapshot, or add --group AUDIT=EVENTS AUDIT=EVENTS ...")
			}
			return runFirewallAuditVerify(a, args[0], &o)
		},
	}
	c.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	completeChoices(c, "format", firewallFormats...)
	c.Flags().BoolVar(&o.group, "group", false, "verify several members of one conversation together; each argument is AUDIT=EVENTS")
	c.Flags().StringVar(&o.policy, "policy", "", "with --group: re-evaluate each member's log under this message policy and name every decision its audit records differently")
	o.keys.AddFlags(c, keyUse{Trust: true})
	c.Flags().BoolVar(&o.requireSig, "require-signature", false, "an unauthenticated snapshot is an error (exit 4), even when complete")
	return c
}

func runFirewallAuditVerify(a *app, path string, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	vo, err := o.keys.VerifyKeys(a, 0)
	if err != nil {
		return err
	}
	opts := firewall.AuditVerifyOptions{RequireSignature: o.requireSig}
	if vo.Keyring != nil || vo.Trust != nil {
		opts.Keys = keyring.NewVerifier(vo.Keyring, vo.Trust, nil)
	}
	v, err := firewall.VerifyAuditFileWith(path, opts)
	if err != nil {
		return err
	}
	if o.format == "json" {
		if err := firewall.WriteJSONLine(a.stdout, v); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(a.stdout, "%s\n%s\n", v.String(), v.AuthString()); err != nil {
		return err
	}
	verr := v.Err()
	if verr != nil && v.Authentication != firewall.AuthTampered && !v.Complete {
		// the verdict on stdout says it all
		return exitWith(exitcode.Of(verr))
	}
	return verr
}

func newFirewallAuditCorrelateCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "correlate AUDIT --host-log FILE",
		Short: "Correlate a host's log with a firewall audit snapshot by check reference",
		Long: `correlate finds every check reference (chk_ and 64 lowercase hex) in a host's
log, one entry per line, and looks each up in a complete audit snapshot. A
host that kept only the text of a FirewallSendError can be matched with the
check that refused the send: each reference prints the host log line, the
check's sequence, event, direction, disposition, reason and next action.

A reference the snapshot does not hold, or a refusal line that does not name
the reason and next action the snapshot retains, is a finding: exit 1. A chk_
token in another format is listed (only the current format is accepted).
Refused sends the host log does not name are counted, not findings: a host
need not log every refusal. An incomplete snapshot exits 4, a tampered one 3.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFirewallAuditCorrelate(a, args[0], &o)
		},
	}
	c.Flags().StringVar(&o.hostLog, "host-log", "", "the host's log (any text, one entry per line)")
	c.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	completeChoices(c, "format", firewallFormats...)
	_ = c.MarkFlagRequired("host-log")
	return c
}

func runFirewallAuditCorrelate(a *app, path string, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	res, err := firewall.CorrelateHostLogFiles(path, o.hostLog)
	if err != nil {
		return err
	}
	if o.format == "json" {
		err = firewall.WriteJSONLine(a.stdout, res)
	} else {
		err = firewall.WriteHostLogCorrelation(a.stdout, res)
	}
	if err != nil {
		return err
	}
	if res.Findings > 0 {
		return exitWith(exitcode.Violation)
	}
	return nil
}

// loadTimeline reads an activation history and policy_read lists and
// replays them over the policy.
func loadTimeline(p *firewall.Policy, activations string, reads []string) (*firewall.Timeline, error) {
	var prs []*firewall.PolicyRead // the small lists first, so a missing one is named before the history is read
	for _, r := range reads {
		pr, err := firewall.LoadPolicyRead(r)
		if err != nil {
			return nil, err
		}
		prs = append(prs, pr)
	}
	var acts []firewall.Activation
	if activations != "" {
		var err error
		if acts, err = firewall.LoadActivations(activations); err != nil {
			return nil, err
		}
	}
	return firewall.BuildTimeline(p, acts, prs), nil
}

func newFirewallAuditActivationsCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "activations AUDIT [--activations FILE] [--policy-read FILE]... [--policy FILE]",
		Short: "Place each check of an audit snapshot in its policy history",
		Long: `activations replays a policy history (the snapshot's own activation records,
or --activations: another snapshot or {"activations": [...]}, the decisions
feed's array) and places each check record of the complete snapshot AUDIT in
it, by its configurationDigest and capture time. It prints one line per
activation (sequence, time, activeRevision, added and removed rule ids, the
editable rules then active) and each finding:

  a check whose revision no activation names (revision-never-activated), or
  that was not active when the check was captured and is not the one replaced
  just before (revision-not-active-at-capture); activations with a repeated
  sequence, times out of order, a rule id added twice or added while held,
  an unknown id removed, a fixed rule id edited, one revision naming two rule
  sets; a policy_read list (--policy-read) that disagrees with the history or
  names a revision never activated.

--policy gives the fixed rules (so that editing one is a finding) and the
rule texts of the first document. Exit 0 without findings, 1 with findings,
4 for an incomplete snapshot, 3 for a tampered one (docs/exit-codes.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFirewallAuditActivations(a, args[0], &o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.policy, "policy", "", "message-policy file: fixed rules and first rule texts (optional)")
	f.StringVar(&o.activations, "activations", "", "activation history to use instead of the snapshot's own activation records")
	f.StringArrayVar(&o.policyReads, "policy-read", nil, "a policy_read list to compare with the history (repeatable)")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	completeChoices(c, "format", firewallFormats...)
	return c
}

func runFirewallAuditActivations(a *app, path string, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	var p *firewall.Policy
	if o.policy != "" {
		var err error
		if p, err = firewall.LoadPolicy(o.policy); err != nil {
			return err
		}
	}
	var acts []firewall.Activation
	if o.activations != "" {
		var err error
		if acts, err = firewall.LoadActivations(o.activations); err != nil {
			return err
		}
	}
	var prs []*firewall.PolicyRead
	for _, r := range o.policyReads {
		pr, err := firewall.LoadPolicyRead(r)
		if err != nil {
			return err
		}
		prs = append(prs, pr)
	}
	rep, err := firewall.CheckAuditActivations(path, p, acts, prs)
	if err != nil {
		return err
	}
	if o.format == "json" {
		err = firewall.WriteJSONLine(a.stdout, rep)
	} else {
		err = firewall.WriteTimeline(a.stdout, rep.Timeline, rep.Findings)
		if err == nil {
			_, err = fmt.Fprintf(a.stdout, "%s: %d checks placed in %d activations, %d findings\n", path, rep.Checks, len(rep.Timeline.Steps), len(rep.Findings))
		}
	}
	if err != nil {
		return err
	}
	if len(rep.Findings) > 0 {
		return exitWith(exitcode.Violation)
	}
	return nil
}

func newFirewallDeriveCmd(a *app) *cobra.Command {
	var o firewallOptions
	c := &cobra.Command{
		Use:   "derive --events FILE --mapping FILE --out FILE",
		Short: "Write a copy of an event log with message events derived from MCP tool calls",
		Long: `derive reads an event log and a message mapping file (which tool sends, which
tool's result delivers, and the JSON paths of conversation, sender, recipients,
text, operation and post id) and writes a new log: every original event (ids
kept) with the derived message events inserted after the event they come
from. The copy ends with an unsigned session_end; the original log stays the
evidence. See docs/formats/firewall.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFirewallDerive(a, &o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.events, "events", "", "event log to read")
	f.StringVar(&o.mapping, "mapping", "", "message mapping file (witness-message-mapping/v1)")
	o.output.AddFlags(c, "the new event log to write", false)
	_ = c.MarkFlagRequired("events")
	_ = c.MarkFlagRequired("mapping")
	_ = c.MarkFlagRequired("out")
	return c
}

func runFirewallDerive(a *app, o *firewallOptions) error {
	o.output.Reads(o.events, o.mapping)
	if err := o.output.Check(a); err != nil {
		return err
	}
	raw, err := os.ReadFile(o.mapping)
	if err != nil {
		return usageError(fmt.Errorf("read mapping %s: %w", o.mapping, err), "check the path of the mapping file")
	}
	m, err := firewall.DecodeMapping(raw, o.mapping)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	in, err := os.Open(o.events)
	if err != nil {
		return exitcode.Input("read events", err, "check the path given to --events")
	}
	defer in.Close()
	var res *firewall.DeriveResult
	err = atomicfile.Publish(o.output.Out, firewall.AuditFile(o.output.Out, o.output.Rules(a)), func(w io.Writer) error {
		var e error
		res, e = firewall.DeriveLog(in, o.events, w, m, hex.EncodeToString(sum[:]))
		return e
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "derived %d message events; wrote %d events to %s\n", res.Messages, res.Events, o.output.Out)
	return err
}

// applyWhatIfPolicy serves `witness replay --what-if-policy FILE`: it
// evaluates the policy in enforcement mode over the graph's messages, adds
// the messages it would have withheld or refused to the removals, and its
// verdicts to the overlay sources. done is true when nothing would have
// been withheld or refused (reported on stdout; nothing to replay).
func applyWhatIfPolicy(a *app, o *replayOptions, g *graph.Graph) (done bool, err error) {
	if o.rank {
		return true, usageError(fmt.Errorf("--what-if-policy applies to one counterfactual, not to --rank"), "drop --rank")
	}
	p, err := firewall.LoadPolicy(o.whatIfPolicy)
	if err != nil {
		return true, err
	}
	w := firewall.NewWhatIf(p, nil, "", eventlog.Timestamp(a.getenv))
	rm, err := w.Removals(g)
	if err != nil {
		return true, err
	}
	o.sources = append(o.sources, w)
	if len(rm) == 0 && len(o.remove) == 0 {
		_, err = fmt.Fprintf(a.stdout, "what-if policy %s: no message of the graph would have been withheld or refused; nothing to replay\n", o.whatIfPolicy)
		return true, err
	}
	o.remove = append(o.remove, rm...)
	return false, nil
}

// addFirewallAudit serves `witness graph --firewall-audit FILE`: it adds
// each check of the snapshot to g as a witness:FirewallCheck activity that
// used its message, and says how many it linked on stderr.
func addFirewallAudit(a *app, g *graph.Graph, path string) error {
	res, err := firewall.AddAuditOverlayFile(g, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.notes(), "witness: firewall audit %s: %d checks, %d linked to their message, %d unlinked\n", path, res.Checks, res.Linked, res.Unlinked)
	return nil
}

// runFirewallAuditVerifyGroup serves `witness firewall audit verify --group`.
func runFirewallAuditVerifyGroup(a *app, args []string, o *firewallOptions) error {
	if !slices.Contains(firewallFormats, o.format) {
		return usageError(fmt.Errorf("unknown --format %q", o.format), "use --format text or json")
	}
	opts := firewall.GroupOptions{Timestamp: eventlog.Timestamp(a.getenv)}
	for _, arg := range args {
		m, err := firewall.ParseGroupMember(arg)
		if err != nil {
			return err
		}
		opts.Members = append(opts.Members, m)
	}
	if o.policy != "" {
		p, err := firewall.LoadPolicy(o.policy)
		if err != nil {
			return err
		}
		opts.Policy = p
	}
	v, err := firewall.VerifyGroup(opts)
	if err != nil {
		return err
	}
	if o.format == "json" {
		err = firewall.WriteJSONLine(a.stdout, v)
	} else {
		err = v.Write(a.stdout)
	}
	if err != nil {
		return err
	}
	if verr := v.Err(); verr != nil {
		return exitWith(exitcode.Of(verr)) // the verdict on stdout says it all
	}
	return nil
}
