package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/keyring"
)

type revokeKeyOptions struct {
	Keyring string
	KeyID   string
}

func newRevokeKeyCmd(a *app) *cobra.Command {
	var o revokeKeyOptions
	c := &cobra.Command{
		Use:   "revoke-key KEY_ID",
		Short: "Revoke a key: it stays in the keyring but never verifies or signs again",
		Long: `revoke-key marks KEY_ID revoked (with the time) and inactive. The entry stays
in the keyring so that seals it signed fail verification with a reason that
says the key was revoked, instead of "unknown key".`,
		Example: `  witness revoke-key 2026-09-01T00:00:00.000001Z --keyring ./keys.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.KeyID = args[0]
			return runRevokeKey(a, o)
		},
	}
	addKeyringFlag(c, &o.Keyring)
	addLegacyOutFlag(c, &o.Keyring)
	return c
}

func runRevokeKey(a *app, o revokeKeyOptions) error {
	path, err := a.keyringPath(o.Keyring)
	if err != nil {
		return err
	}
	opts, err := a.keyringOptions("")
	if err != nil {
		return err
	}
	if _, err := keyring.OpenExisting(path, opts); err != nil {
		return err
	}
	wasActive := false
	if k, err := keyring.Open(path, opts); err == nil {
		if act, err := k.Active(); err == nil && act.KeyID == o.KeyID {
			wasActive = true
		}
	}
	e, err := keyring.Revoke(path, opts, o.KeyID)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "revoked key_id=%s at %s\n", e.KeyID, e.RevokedAt)
	if wasActive {
		fmt.Fprintf(a.stderr, "witness: warning: that was the active key; the keyring cannot sign until you run 'witness keygen'\n")
	}
	return nil
}
