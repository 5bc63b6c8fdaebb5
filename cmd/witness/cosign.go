package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/seal"
)

type cosignOptions struct {
	Seal   string
	Keys   keyringOptions
	Output outputOptions
	JSON   bool
}

func newCosignCmd(a *app) *cobra.Command {
	var o cosignOptions
	c := &cobra.Command{
		Use:   "cosign SEAL",
		Short: "Add this witness's signature over the same seal body",
		Long: `cosign signs the seal's canonical body with the active key of --keyring
(another witness's keyring) and appends {key_id, alg, sig, public_key} to the
seal's cosignatures. The body, the primary signature and seal_ref are
unchanged. A key that already signed the seal is refused, under whatever
key_id (or none) its signature is filed.

The cosigned seal is written to --out, a new file: SEAL itself is evidence
and is never rewritten (docs/design/evidence-files.md). --json prints what
was written as one JSON object (docs/formats/cli-json.md).`,
		Example: `  witness cosign seal.json --keyring ./bob.json --out seal.2.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Seal = args[0]
			return runCosign(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, KeyID: true})
	o.Output.AddFlags(c, "where to write the cosigned seal (a new file; never SEAL itself)", false)
	c.Flags().BoolVar(&o.JSON, "json", false, "print the files, the key and the signature count as JSON")
	c.MarkFlagRequired("out")
	return c
}

func runCosign(a *app, o cosignOptions) error {
	s, err := seal.Load(o.Seal)
	if err != nil {
		return err
	}
	if _, _, err := o.Keys.path(a); err != nil {
		return err
	}
	o.Output.Reads(o.Seal, o.Keys.Input(a))
	if err := o.Output.Check(a); err != nil {
		return err
	}
	signer, _, err := o.Keys.Signer(a)
	if err != nil {
		return err
	}
	if err := s.Cosign(signer); err != nil {
		return err
	}
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := o.Output.Write(a, b); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(a, cosignResult{Result: "cosign", V: cliJSONVersion, Seal: o.Seal, Out: o.Output.Out, SealRef: s.Ref(),
			KeyID: signer.KeyID(), Algorithm: signer.Algorithm(), Signatures: 1 + len(s.Cosignatures)})
	}
	fmt.Fprintf(a.stdout, "cosigned %s -> %s with key_id=%s (%s); the seal now carries %d signature(s)\n", o.Seal, o.Output.Out, signer.KeyID(), signer.Algorithm(), 1+len(s.Cosignatures))
	return nil
}
