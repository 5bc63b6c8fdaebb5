package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

type rotateKeyOptions struct {
	Keys    keyringOptions
	Alg     string
	Backend string
}

func newRotateKeyCmd(a *app) *cobra.Command {
	var o rotateKeyOptions
	c := &cobra.Command{
		Use:   "rotate-key",
		Short: "Replace the active key with a new one (the old key keeps verifying)",
		Long: `rotate-key generates a new key first and only then, in one atomic write
under the keyring lock, deactivates the old key and adds the new one. If
anything fails the keyring is unchanged. The old key is kept (not revoked), so
seals it signed still verify.`,
		Example: `  witness rotate-key --keyring ./keys.json
  witness rotate-key --alg ed25519`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRotateKey(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().StringVar(&o.Alg, "alg", "", "algorithm of the new key: hmac or ed25519 (default: the old key's)")
	c.Flags().StringVar(&o.Backend, "backend", "", "where the new secret lives: file or os (default: the old key's)")
	completeChoices(c, "alg", keyAlgs...)
	completeChoices(c, "backend", keyBackends...)
	return c
}

func runRotateKey(a *app, o rotateKeyOptions) error {
	if o.Alg != "" {
		if err := checkChoice("alg", o.Alg, keyAlgs...); err != nil {
			return err
		}
	}
	if o.Backend != "" {
		if err := checkChoice("backend", o.Backend, keyBackends...); err != nil {
			return err
		}
	}
	found, err := o.Keys.Open(a, o.Backend)
	if err != nil {
		return err
	}
	old, created, err := keyring.Rotate(found.Path, found.Opts, o.Alg)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "rotated %s -> key_id=%s algorithm=%s backend=%s (old key kept for verification)\n", old.KeyID, created.KeyID, created.Algorithm, created.Backend)
	return nil
}
