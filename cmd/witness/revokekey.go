package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

type revokeKeyOptions struct {
	Keys  keyringOptions
	KeyID string
	JSON  bool
}

func newRevokeKeyCmd(a *app) *cobra.Command {
	var o revokeKeyOptions
	c := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key: it stays in the keyring but never verifies or signs again",
		Long: `revoke marks KEY_ID revoked (with the time) and inactive. The entry stays
in the keyring so that seals it signed fail verification with a reason that
says the key was revoked, instead of "unknown key". (Old name: witness revoke-key.)`,
		Example: `  witness key revoke ed25519-3f2a9c01d4e5b6a7`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.KeyID = args[0]
			return runRevokeKey(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().BoolVar(&o.JSON, "json", false, "print the revoked key and when as JSON")
	return c
}

func runRevokeKey(a *app, o revokeKeyOptions) error {
	found, err := o.Keys.Open(a, "")
	if err != nil {
		return err
	}
	wasActive := false
	if act, err := found.Keyring.Active(); err == nil && act.KeyID == o.KeyID {
		wasActive = true
	}
	e, err := keyring.Revoke(found.Path, found.Opts, o.KeyID)
	if err != nil {
		return err
	}
	if wasActive {
		defer fmt.Fprintf(a.stderr, "witness: warning: that was the active key; the keyring cannot sign until you run 'witness key generate'\n")
	}
	if o.JSON {
		return printJSON(a, keyResult{Result: "key revoke", V: cliJSONVersion, KeyID: e.KeyID, Algorithm: e.Algorithm,
			Backend: e.Backend, Keyring: found.Path, PublicKey: e.PublicKey, RevokedAt: e.RevokedAt, WasActive: wasActive})
	}
	fmt.Fprintf(a.stdout, "revoked key_id=%s at %s\n", e.KeyID, e.RevokedAt)
	return nil
}
