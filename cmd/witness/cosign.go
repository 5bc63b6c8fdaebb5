package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
)

type cosignOptions struct {
	Seal    string
	Keyring string
	KeyID   string
	Out     string
	Force   bool
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
and is never rewritten (docs/design/evidence-files.md).`,
		Example: `  witness cosign seal.json --keyring ./bob.json --out seal.2.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Seal = args[0]
			return runCosign(a, o)
		},
	}
	addKeyringFlag(c, &o.Keyring)
	c.Flags().StringVar(&o.KeyID, "key-id", "", "sign with this key instead of the active one")
	c.Flags().StringVar(&o.Out, "out", "", "where to write the cosigned seal (a new file; never SEAL itself)")
	addForceFlag(c, &o.Force)
	c.MarkFlagRequired("out")
	return c
}

func runCosign(a *app, o cosignOptions) error {
	s, err := seal.Load(o.Seal)
	if err != nil {
		return err
	}
	path, err := a.keyringPath(o.Keyring)
	if err != nil {
		return err
	}
	outOpts := a.outOptions("--out", o.Force, o.Seal, path)
	if err := atomicfile.Check(o.Out, outOpts); err != nil {
		return err
	}
	opts, err := a.keyringOptions("")
	if err != nil {
		return err
	}
	k, err := keyring.OpenExisting(path, opts)
	if err != nil {
		return err
	}
	var signer keyring.Signer
	if o.KeyID != "" {
		signer, err = k.Signer(o.KeyID)
	} else {
		signer, err = k.ActiveSigner()
	}
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
	if err := atomicfile.Write(o.Out, b, outOpts); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "cosigned %s -> %s with key_id=%s (%s); the seal now carries %d signature(s)\n", o.Seal, o.Out, signer.KeyID(), signer.Algorithm(), 1+len(s.Cosignatures))
	return nil
}
