package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

type keygenOptions struct {
	Keys    keyringOptions
	Alg     string
	Backend string
}

func newKeygenCmd(a *app) *cobra.Command {
	var o keygenOptions
	c := &cobra.Command{
		Use:   "keygen",
		Short: "Create the keyring's signing key (HMAC-SHA256 or Ed25519)",
		Long: `keygen creates a 32-byte key and makes it the keyring's active signing key.
The keyring file is written with mode 0600; with --backend os the secret goes
to the OS keyring (Secret Service, Keychain, Credential Manager) and the file
keeps only metadata. A keyring that already has an active key is left alone:
use rotate-key to replace it.`,
		Example: `  witness keygen --keyring ./keys.json
  witness keygen --alg ed25519 --keyring ./alice.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeygen(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().StringVar(&o.Alg, "alg", "hmac", "key algorithm: hmac (HMAC-SHA256, 0.1.0-compatible) or ed25519")
	c.Flags().StringVar(&o.Backend, "backend", "file", "where the secret lives: file (keys.json) or os (OS keyring)")
	completeChoices(c, "alg", keyAlgs...)
	completeChoices(c, "backend", keyBackends...)
	return c
}

func runKeygen(a *app, o keygenOptions) error {
	if err := checkChoice("alg", o.Alg, keyAlgs...); err != nil {
		return err
	}
	if err := checkChoice("backend", o.Backend, keyBackends...); err != nil {
		return err
	}
	path, opts, err := o.Keys.Path(a, o.Backend)
	if err != nil {
		return err
	}
	e, err := keyring.Generate(path, opts, o.Alg)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "generated key_id=%s algorithm=%s backend=%s -> %s\n", e.KeyID, e.Algorithm, e.Backend, path)
	if e.PublicKey != "" {
		fmt.Fprintf(a.stdout, "public key (base64): %s\n", e.PublicKey)
	}
	fmt.Fprintf(a.stdout, "%s mode: 0600\n", path)
	return nil
}
