package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
)

// sealEnvelopes are the values of seal --envelope.
var sealEnvelopes = []string{"dsse"}

type sealOptions struct {
	Spec        string
	Output      outputOptions
	Keys        keyringOptions
	WitnessID   string
	Envelope    string
	EnvelopeOut string
	JSON        bool
}

func newSealCmd(a *app) *cobra.Command {
	var o sealOptions
	c := &cobra.Command{
		Use:   "seal",
		Short: "Sign a readiness seal from an agent spec",
		Long: `seal reads an agent spec (system prompt or prompt file, tools with scopes,
optional witness id) and writes a signed seal: the sha256 of the prompt, the
tools, created_at and witness_id, signed over their canonical JSON with the
keyring's active key (HMAC-SHA256, byte-compatible with agent-trace-witness
0.1.0, or Ed25519). Without a keyring, the legacy ATW_WITNESS_KEY (hex, 32
bytes) signs.

created_at comes from ATW_WITNESS_TS or the clock; witness_id from
--witness-id, the spec, ATW_WITNESS_ID, else witness-cli-local.

With --envelope dsse the seal is also written as an in-toto Statement v1 in a
DSSE envelope signed with the (Ed25519) key, one JSON line.

What was written is printed on stdout; --json prints it as one JSON object:
the seal_ref, witness id, tool count, algorithm, key id and files
(docs/formats/cli-json.md).`,
		Example: `  witness seal --spec agent.json --out seal.json
  witness seal --spec agent.json --out seal.json --envelope dsse`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSeal(a, o)
		},
	}
	c.Flags().StringVar(&o.Spec, "spec", "", "agent spec JSON (docs/formats/seal.md)")
	o.Output.AddFlags(c, "where to write the signed seal", false)
	// a keyring (--keyring, $WITNESS_KEYRING or the default location) when
	// it exists, else ATW_WITNESS_KEY
	o.Keys.AddFlags(c, keyUse{Required: true, Legacy: true, KeyID: true})
	c.Flags().StringVar(&o.WitnessID, "witness-id", "", "witness id (default: the spec's, else $ATW_WITNESS_ID, else witness-cli-local)")
	c.Flags().StringVar(&o.Envelope, "envelope", "", "also write the seal as an envelope: dsse (in-toto Statement v1, Ed25519)")
	c.Flags().StringVar(&o.EnvelopeOut, "envelope-out", "", "where to write the envelope (default: OUT with .intoto.jsonl in place of .json)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the seal_ref, witness id, tools, algorithm, key id and files as JSON")
	completeChoices(c, "envelope", sealEnvelopes...)
	c.MarkFlagRequired("spec")
	c.MarkFlagRequired("out")
	c.AddCommand(newSealInitCmd(a))
	return c
}

func runSeal(a *app, o sealOptions) error {
	if o.Envelope != "" {
		if err := checkChoice("envelope", o.Envelope, sealEnvelopes...); err != nil {
			return err
		}
	}
	spec, err := seal.LoadSpec(o.Spec)
	if err != nil {
		return err
	}
	out := o.Output.File()
	o.Output.Reads(o.Spec, spec.PromptFile, o.Keys.Input(a))
	envOut := o.EnvelopeOut
	if envOut == "" {
		envOut = strings.TrimSuffix(out, ".json") + ".intoto.jsonl"
	}
	// the envelope shares --force and never replaces the seal written just
	// before it
	envOpts := a.writeRules("--envelope-out", o.Output.Force, append(o.Output.Rules(a).Inputs, out)...)
	body, err := seal.NewBody(spec, seal.BodyOptions{WitnessID: o.WitnessID, Getenv: a.getenv})
	if err != nil {
		return err
	}
	signer, _, err := o.Keys.Signer(a)
	if err != nil {
		return err
	}
	if err := o.checkOutputs(a, out, envOut, envOpts); err != nil {
		return err
	}
	s, err := seal.Sign(body, signer)
	if err != nil {
		return err
	}
	res := sealResult{Result: "seal", V: cliJSONVersion, Out: out, SealRef: s.Ref(), WitnessID: body.WitnessID,
		Tools: len(body.Tools), Algorithm: signer.Algorithm(), KeyID: signer.KeyID()}
	if err := o.writeSeal(a, s, signer, envOut, envOpts); err != nil {
		return err
	}
	if o.Envelope == "dsse" {
		res.Envelope = &sealEnvelopeResult{Out: envOut, PredicateType: seal.PredicateType}
	}
	return printSeal(a, o.JSON, res)
}

// checkOutputs checks, before anything is signed, that the seal can be
// written to out and the envelope (with --envelope) to envOut.
func (o sealOptions) checkOutputs(a *app, out, envOut string, envOpts atomicfile.Options) error {
	if err := atomicfile.Check(out, o.Output.Rules(a)); err != nil {
		return err
	}
	if o.Envelope != "dsse" {
		return nil
	}
	if filepath.Clean(envOut) == filepath.Clean(out) {
		return usageError(fmt.Errorf("--envelope-out %s is the seal's --out", envOut), "write the envelope to another file")
	}
	return atomicfile.Check(envOut, envOpts)
}

// writeSeal writes the signed seal s to --out and, with --envelope dsse,
// its in-toto envelope signed by signer to envOut.
func (o sealOptions) writeSeal(a *app, s *seal.Sealed, signer keyring.Signer, envOut string, envOpts atomicfile.Options) error {
	var env *seal.Envelope
	if o.Envelope == "dsse" {
		var err error
		if env, err = seal.NewEnvelope(s, filepath.Base(o.Output.File()), signer); err != nil {
			return err
		}
	}
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := o.Output.Write(a, b); err != nil || env == nil {
		return err
	}
	eb, err := env.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(envOut, eb, envOpts)
}

// printSeal prints what seal wrote: lines, or with --json one object.
func printSeal(a *app, asJSON bool, r sealResult) error {
	if asJSON {
		return printJSON(a, r)
	}
	keyDesc := "ATW_WITNESS_KEY"
	if r.KeyID != "" {
		keyDesc = "key_id=" + r.KeyID
	}
	fmt.Fprintf(a.stdout, "sealed %d tool(s) for %s -> %s (%s, %s)\n", r.Tools, r.WitnessID, r.Out, r.Algorithm, keyDesc)
	fmt.Fprintf(a.stdout, "seal_ref %s\n", r.SealRef)
	if r.Envelope != nil {
		fmt.Fprintf(a.stdout, "in-toto statement in a DSSE envelope -> %s (predicateType %s)\n", r.Envelope.Out, r.Envelope.PredicateType)
	}
	return nil
}
