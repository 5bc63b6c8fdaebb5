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
	JSON    bool
}

func newKeygenCmd(a *app) *cobra.Command {
	var o keygenOptions
	c := &cobra.Command{
		Use:   "generate",
		Short: "Create the keyring's signing key (Ed25519; HMAC-SHA256 for 0.1.0)",
		Long: `generate creates a 32-byte key and makes it the keyring's active signing key.
Keys are Ed25519 by default: event logs, DSSE envelopes, trust files and
witness quorums need public keys. --alg hmac-sha256 makes a shared-secret
key that agent-trace-witness 0.1.0 can read and verify. Without --keyring
the key goes to the default keyring, the one every command finds by itself
(docs/formats/keys.md). The keyring file is written with mode 0600; with
--backend os the secret goes to the OS keyring (Secret Service, Keychain,
Credential Manager) and the file keeps only metadata. A keyring that
already has an active key is left alone: use 'witness key rotate' to
replace it. (Old name: witness keygen.)`,
		Example: `  witness key generate
  witness key generate --keyring ./alice.json
  witness key generate --alg hmac-sha256 --keyring ./keys.json   # readable by 0.1.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeygen(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().StringVar(&o.Alg, "alg", algEd25519, "key algorithm: ed25519, or hmac-sha256 (agent-trace-witness 0.1.0 compatible)")
	c.Flags().StringVar(&o.Backend, "backend", "file", "where the secret lives: file (keys.json) or os (OS keyring)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the new key (id, algorithm, backend, keyring, public key) as JSON")
	completeChoices(c, "alg", keyAlgs...)
	completeChoices(c, "backend", keyBackends...)
	return c
}

// The --alg names of the key verbs; "hmac" (the keyring's own name, and
// this flag's value before 0.2) is still accepted.
const (
	algEd25519 = "ed25519"
	algHMAC    = "hmac-sha256"
)

// keyAlg maps an --alg value to the keyring's algorithm name.
func keyAlg(v string) (string, error) {
	switch v {
	case algEd25519:
		return keyring.AlgEd25519, nil
	case algHMAC, keyring.AlgHMAC:
		return keyring.AlgHMAC, nil
	}
	return "", checkChoice("alg", v, algEd25519, algHMAC)
}

func runKeygen(a *app, o keygenOptions) error {
	alg, err := keyAlg(o.Alg)
	if err != nil {
		return err
	}
	if err := checkChoice("backend", o.Backend, keyBackends...); err != nil {
		return err
	}
	path, opts, err := o.Keys.Path(a, o.Backend)
	if err != nil {
		return err
	}
	e, err := keyring.Generate(path, opts, alg)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(a, keyResult{Result: "key generate", V: cliJSONVersion, KeyID: e.KeyID, Algorithm: e.Algorithm,
			Backend: e.Backend, Keyring: path, PublicKey: e.PublicKey})
	}
	fmt.Fprintf(a.stdout, "generated key_id=%s algorithm=%s backend=%s -> %s\n", e.KeyID, e.Algorithm, e.Backend, path)
	if e.PublicKey != "" {
		fmt.Fprintf(a.stdout, "public key (base64): %s\n", e.PublicKey)
	}
	fmt.Fprintf(a.stdout, "%s mode: 0600\n", path)
	return nil
}

// isKeyGenerate says cmd is the verb that creates its keyring (whose
// --keyring names a file that need not exist yet), under either name.
func isKeyGenerate(cmd *cobra.Command) bool {
	return cmd.CommandPath() == "witness key generate" || cmd.CommandPath() == "witness keygen"
}

// keyResult is the --json object of key generate, key rotate and key
// revoke (docs/formats/cli-json.md, "key").
type keyResult struct {
	Result    string `json:"result"`
	V         int    `json:"v"`
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`
	Backend   string `json:"backend"`
	Keyring   string `json:"keyring"`
	PublicKey string `json:"public_key"` // base64 Ed25519 public key; "" for HMAC
	Replaced  string `json:"replaced"`   // key rotate: the key id that was active
	RevokedAt string `json:"revoked_at"` // key revoke
	WasActive bool   `json:"was_active"` // key revoke: the keyring cannot sign until a new key
}
