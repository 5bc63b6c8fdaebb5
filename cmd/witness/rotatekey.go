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
	JSON    bool
}

func newRotateKeyCmd(a *app) *cobra.Command {
	var o rotateKeyOptions
	c := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the active key with a new one (the old key keeps verifying)",
		Long: `rotate generates a new key first and only then, in one atomic write
under the keyring lock, deactivates the old key and adds the new one. If
anything fails the keyring is unchanged. The old key is kept (not revoked), so
seals it signed still verify. (Old name: witness rotate-key.)`,
		Example: `  witness key rotate
  witness key rotate --alg ed25519 --keyring ./keys.json   # from an HMAC key to Ed25519`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRotateKey(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().StringVar(&o.Alg, "alg", "", "algorithm of the new key: ed25519 or hmac-sha256 (default: the old key's)")
	c.Flags().StringVar(&o.Backend, "backend", "", "where the new secret lives: file or os (default: the old key's)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the new key and the one it replaced as JSON")
	completeChoices(c, "alg", keyAlgs...)
	completeChoices(c, "backend", keyBackends...)
	return c
}

func runRotateKey(a *app, o rotateKeyOptions) error {
	alg := ""
	if o.Alg != "" {
		var err error
		if alg, err = keyAlg(o.Alg); err != nil {
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
	old, created, err := keyring.Rotate(found.Path, found.Opts, alg)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(a, keyResult{Result: "key rotate", V: cliJSONVersion, KeyID: created.KeyID, Algorithm: created.Algorithm,
			Backend: created.Backend, Keyring: found.Path, PublicKey: created.PublicKey, Replaced: old.KeyID})
	}
	fmt.Fprintf(a.stdout, "rotated %s -> key_id=%s algorithm=%s backend=%s (old key kept for verification)\n", old.KeyID, created.KeyID, created.Algorithm, created.Backend)
	return nil
}
