package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/seal"
	"github.com/agent-trace-witness/witness/tlog"
	"github.com/agent-trace-witness/witness/tlog/bundle"
	"github.com/agent-trace-witness/witness/verify"
)

// verifyOptions are the flags of `witness verify`. The seal part (this
// file's first version) checks the seal's signatures; evidence flags
// (events, graph, report formats) are added beside these.
type verifyOptions struct {
	Seal   string
	Keys   keyringOptions // --keyring, --trust
	Quorum int
	JSON   bool

	// Evidence mode (package verify): the events or graph judged against
	// the seal, and the report format.
	Events        []string
	Graph         string
	SARIF         bool
	JUnit         bool
	Output        outputOptions // the report
	AllowUnsigned bool
	// Verbose lists each check that could not run with its reason in the
	// text report, in place of one summary line.
	Verbose bool

	// Anchoring (docs/design/transparency.md): the log at hand, the log key
	// pinned, and the witness quorum over the bundle's checkpoint.
	Log       string
	LogKey    string
	LogQuorum int
	// LogTimeout bounds each exchange with a --log URL.
	LogTimeout time.Duration
}

// verifyLong is the help of `witness verify`.
const verifyLong = `verify checks the seal's signature and cosignatures over its canonical body.
HMAC signatures are checked with the keyring (a seal with key_id uses only
that key; one without tries every non-revoked key) or with ATW_WITNESS_KEY
for 0.1.0 seals; Ed25519 signatures with the keyring's or a trust file's
public keys. With --quorum K, at least K distinct trusted keys must have
signed the exact body: signers are told apart by key material, so one key
under two labels (with and without key_id, two key ids) counts once. A key
revoked in the keyring or the trust file verifies nothing, whatever the
other says.

--seal also reads the DSSE envelope 'witness seal --envelope dsse' writes:
its signatures (standard or URL-safe base64) are checked with the
keyring's and trust file's Ed25519 keys, a signature by a key neither
holds is skipped, and at least one must verify; then the seal it carries
is checked as above.

It prints one line per signature and a verdict line. Exit codes: 0 verified,
1 quorum not met, 3 a signature does not verify or is by a revoked key,
6 unauthenticated: the signature cannot be checked with the keys given
(docs/exit-codes.md).

With --events FILE (an event log) or --graph FILE (a graph written by
'witness graph'), verify also judges the evidence against the seal: the
log's hash chain and signed end, tools used but not sealed, sealed tools
never used, path arguments outside the sealed scopes, the system prompt and
the server's tool definitions against the sealed hashes, and the binding of
the events to this seal. It prints one line per finding and a verdict line
(--json, --sarif or --junit for machines; --out FILE to write the report to
a file). Exit codes: 0 verified, 1 violation, 3 tampered, 4 incomplete,
6 unauthenticated (docs/design/verdicts.md). A file of the wrong kind (a
cassette given to --events, an event log to --seal...) is a usage error
(exit 2) whose hint names the flag or command that reads it.

Without --seal, --events FILE checks the log's integrity only: its hash
chain, its signed end and what its ends record (exit 0, 3, 4 or 6); the
verdict line and the JSON say "integrity only: no seal given".

The verdict line also says what the evidence cannot prove: a session end
that records a failed recording (then the log is at best incomplete),
events imported from another tool rather than observed, violations that a
worse verdict outranks. A graph alone carries no hash chain or signature:
it is judged but never verified (unauthenticated, exit 6). With both
--graph and --events, the graph must be exactly the log's graph (same
canonical digest) and the log decides the verdict.

--events is repeatable: the logs of one agent run (the model channel of
'witness proxy --listen' and one log per MCP server). Each is verified on
its own, then they are joined into one graph (as 'witness graph' joins
them) and judged: an MCP tools/call no model output asked for
(unrequested-tool-call, a violation), a model tool call never executed
(model-call-not-executed, a notice), and, when the seal marks untrusted
sources ("untrusted"), a destructive or unsealed action causally
downstream of untrusted content (injection-provenance, a violation,
printed with its chain; docs/design/causal-join.md).

The text report sums up the checks that could not run on this evidence
(not-checkable notices) in one line naming them, when there are two or
more; --verbose prints each with its reason. --json, --sarif and --junit
always list them. Reading a long log, verify shows a progress line on
stderr when it is a terminal (--quiet: none).`

const verifyExample = `  witness verify --seal seal.json
  ATW_WITNESS_KEY=$(printf '0%.0s' {1..64}) witness verify --seal seal_without_damaging_tool.json
  witness verify --seal seal.json --trust trust.json --quorum 2
  witness verify --seal seal.json --events events.jsonl
  witness verify --seal seal.json --events model/events.jsonl --events fs/events.jsonl
  witness verify --events events.jsonl
  witness verify --seal seal.intoto.jsonl --trust trust.json
  witness verify --seal seal.json --graph graph.jsonld --events events.jsonl --sarif --out verify.sarif`

func newVerifyCmd(a *app) *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:     "verify",
		Short:   "Verify evidence (events or graph) against a seal, or a seal's signatures alone",
		Long:    verifyLong,
		Example: verifyExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(a, o)
		},
	}
	o.AddFlags(c)
	return c
}

// AddFlags declares the flags of `witness verify` on c.
func (o *verifyOptions) AddFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.Seal, "seal", "", "the signed seal, or its DSSE envelope ('witness seal --envelope dsse'); without it, --events checks integrity only")
	o.Keys.AddFlags(c, keyUse{Legacy: true, Trust: true})
	c.Flags().IntVar(&o.Quorum, "quorum", 0, "require at least this many distinct trusted keys to have signed the body")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	c.Flags().StringArrayVar(&o.Events, "events", nil, "event log to verify against the seal (- for standard input); repeat for the logs of one run")
	c.Flags().StringVar(&o.Graph, "graph", "", "graph (JSON-LD from 'witness graph') to verify against the seal; with --events it must be that log's graph")
	c.Flags().BoolVar(&o.SARIF, "sarif", false, "print the report as SARIF 2.1.0")
	c.Flags().BoolVar(&o.JUnit, "junit", false, "print the report as JUnit XML (one test case per check)")
	o.Output.AddFlags(c, "write the report to this file instead of stdout (the verdict line still goes to stdout)", true)
	c.Flags().BoolVar(&o.AllowUnsigned, "allow-unsigned", false, "accept an event log whose end carries no signature the keyring can check")
	c.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "text report: list each check that could not run with its reason (default: one summary line)")
	c.Flags().StringVar(&o.Log, "log", "", "transparency log (folder or URL) to check the session's anchoring against: a later entry of the session is tampered, none incomplete")
	c.Flags().StringVar(&o.LogKey, "log-key", "", "pin the log's verifier key (origin+hash+base64), or list it in the --trust file's log_keys; a log or bundle under a key not pinned is unauthenticated (exit 6)")
	c.Flags().IntVar(&o.LogQuorum, "log-quorum", 0, "require this many distinct witnesses of --trust to have cosigned the bundle's checkpoint")
	c.Flags().DurationVar(&o.LogTimeout, "log-timeout", tlog.DefaultTimeout, "with a --log URL: the time each exchange with the log may take, to its answer's last byte; past it, exit 5 (answers are bounded in size too)")
}

func runVerify(a *app, o verifyOptions) error {
	switch {
	case (o.Log != "" || o.LogKey != "" || o.LogQuorum != 0) && len(o.Events) == 0:
		return usageError(errors.New("--log, --log-key and --log-quorum need --events"), "pass the event log whose anchoring to check: --events FILE")
	case o.Seal == "" && o.Graph != "":
		return usageError(errors.New("--graph needs --seal"), "pass --seal FILE; --events FILE alone checks an event log's integrity")
	case o.Seal == "" && len(o.Events) == 0:
		return usageError(errors.New("no seal given"), "pass --seal FILE; --events FILE alone checks an event log's integrity")
	case o.Seal == "" && o.Quorum != 0:
		return usageError(errors.New("--quorum needs --seal"), "pass --seal FILE")
	case o.LogTimeout <= 0:
		return usageError(fmt.Errorf("--log-timeout %v is not positive", o.LogTimeout), "use --log-timeout 30s, for example")
	case o.LogQuorum < 0:
		return usageError(fmt.Errorf("--log-quorum %d is negative", o.LogQuorum), "use --log-quorum K with K >= 1")
	case o.LogQuorum > 0 && o.Keys.Trust == "":
		return usageError(errors.New("--log-quorum needs --trust"), "pass a trust file listing the witnesses (key_id = the witness name)")
	}
	if len(o.Events) > 1 && o.Graph != "" {
		return usageError(errors.New("--graph is checked against one --events log"), "drop --graph to verify the logs of a run together")
	}
	if len(o.Events) == 0 && o.Graph == "" && o.Log == "" && !o.SARIF && !o.JUnit && o.Output.Out == "" && !o.AllowUnsigned {
		return runVerifySeal(a, o)
	}
	return runVerifyEvidence(a, o)
}

func runVerifySeal(a *app, o verifyOptions) error {
	vo, err := o.Keys.VerifyKeys(a, o.Quorum)
	if err != nil {
		return err
	}
	sf, err := verify.LoadSeal(o.Seal, vo)
	if err != nil {
		return err
	}
	if sf.Sealed == nil {
		if sf.Envelope != nil && !o.JSON {
			printChecks(a, sf.Envelope.Checks)
		}
		return sf.Err
	}
	res, verr := seal.Verify(sf.Sealed, vo)
	if verr != nil && exitcode.Of(verr) == exitcode.Usage {
		return verr
	}
	if sf.Err != nil && (verr == nil || exitcode.Of(verr) == exitcode.Violation) {
		// the envelope could not be checked: the seal is at best
		// unauthenticated, whatever its own signature says
		res.Verdict, res.Code, res.Reason = exitcode.Unauthenticated.Name(), exitcode.Unauthenticated, sf.Err.Error()
		verr = sf.Err
	}
	if o.JSON {
		out := struct {
			Seal     string               `json:"seal"`
			Envelope *seal.EnvelopeResult `json:"envelope,omitempty"`
			*seal.Result
		}{o.Seal, sf.Envelope, res}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		if sf.Envelope != nil {
			printChecks(a, sf.Envelope.Checks)
		}
		printSealChecks(a, res)
	}
	// The verdict is on stdout; the error and its hint go to stderr.
	return verr
}

func printSealChecks(a *app, res *seal.Result) {
	printChecks(a, res.Checks)
	fmt.Fprintf(a.stdout, "verdict: %s: %s\n", res.Verdict, res.Reason)
}

// printChecks prints one line per signature.
func printChecks(a *app, checks []seal.Check) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, c := range checks {
		key := c.KeyID
		if key == "" {
			key = "(no key_id)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s: %s\n", c.Which, c.Alg, key, c.Status, c.Detail)
	}
	tw.Flush()
}

// runVerifyEvidence judges the events or graph against the seal (package
// verify) and prints the report; the exit code is the verdict's.
func runVerifyEvidence(a *app, o verifyOptions) error {
	formats := 0
	for _, f := range []bool{o.JSON, o.SARIF, o.JUnit} {
		if f {
			formats++
		}
	}
	if formats > 1 {
		return usageError(errors.New("--json, --sarif and --junit are exclusive"), "choose one report format")
	}
	o.Output.Reads(append([]string{o.Seal, o.Graph, o.Keys.Trust, o.Keys.Input(a)}, o.Events...)...)
	if err := o.Output.Check(a); err != nil {
		return err
	}
	vo, err := o.Keys.VerifyKeys(a, o.Quorum)
	if err != nil {
		return err
	}
	anchor, err := verifyAnchorOptions(o, vo)
	if err != nil {
		return err
	}
	rep, err := verify.Run(verify.Options{
		SealFile: o.Seal, EventsFile: first(o.Events), RunEvents: rest(o.Events), GraphFile: o.Graph,
		SealKeys: vo, EndVerifier: verify.EndVerifier(vo.Keyring, vo.Trust), AllowUnsigned: o.AllowUnsigned,
		Stdin: a.stdin, Anchor: anchor, Progress: a.progress.Wrap(true),
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch {
	case o.JSON:
		err = rep.WriteJSON(&buf)
	case o.SARIF:
		err = rep.WriteSARIF(&buf)
	case o.JUnit:
		err = rep.WriteJUnit(&buf)
	default:
		err = rep.WriteText(&buf, o.Verbose)
	}
	if err != nil {
		return err
	}
	if o.Output.File() == "" {
		if _, err := a.stdout.Write(buf.Bytes()); err != nil {
			return exitcode.New(exitcode.Failure, fmt.Errorf("write report: %w", err), "")
		}
		return exitWith(rep.Code())
	}
	if err := o.Output.Write(a, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s (report in %s)\n", rep.VerdictLine(), o.Output.File())
	return exitWith(rep.Code())
}

// first is the first of a repeated flag's values, or "".
func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// rest is every value of a repeated flag but the first.
func rest(v []string) []string {
	if len(v) < 2 {
		return nil
	}
	return v[1:]
}

// verifyAnchorOptions builds the anchoring check of --log, --log-key and
// --log-quorum (nil: only bundles beside the events are checked).
func verifyAnchorOptions(o verifyOptions, vo seal.VerifyOptions) (*verify.AnchorOptions, error) {
	var trusted []string
	if vo.Trust != nil {
		trusted = vo.Trust.LogKeys
	}
	if o.Log == "" && o.LogKey == "" && o.LogQuorum == 0 && len(trusted) == 0 {
		return nil, nil
	}
	ao := &verify.AnchorOptions{LogKey: o.LogKey, TrustedLogKeys: trusted, Quorum: o.LogQuorum}
	if o.Log != "" {
		l, key, err := tlog.Reader(context.Background(), o.Log, o.LogTimeout)
		if err != nil {
			return nil, err
		}
		ao.Log, ao.NamedKey = l, key
	}
	if o.LogQuorum > 0 {
		ws, err := bundle.WitnessesFromTrust(vo.Trust)
		if err != nil {
			return nil, usageError(err, "")
		}
		ao.Witnesses = ws
	}
	return ao, nil
}
