package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/canon"
)

type listKeysOptions struct {
	Keys keyringOptions
	JSON bool
}

func newListKeysCmd(a *app) *cobra.Command {
	var o listKeysOptions
	c := &cobra.Command{
		Use:   "list",
		Short: "List the keyring's keys (never their secrets)",
		Long: `list prints the keyring's keys: id, algorithm, backend, status and creation
time, never a secret. (Old name: witness list-keys.)`,
		Example: `  witness key list --keyring ./keys.json
  witness key list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runListKeys(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true, LegacyOut: true})
	c.Flags().BoolVar(&o.JSON, "json", false, "print JSON instead of a table")
	return c
}

// listedKey is what list-keys shows of a key: metadata and public keys only.
type listedKey struct {
	KeyID     string  `json:"key_id"`
	Algorithm string  `json:"algorithm"`
	Backend   string  `json:"backend"`
	Active    bool    `json:"active"`
	CreatedAt string  `json:"created_at"`
	RevokedAt *string `json:"revoked_at"`
	PublicKey string  `json:"public_key,omitempty"`
}

func runListKeys(a *app, o listKeysOptions) error {
	found, err := o.Keys.Open(a, "")
	if err != nil {
		return err
	}
	var keys []listedKey
	for _, e := range found.Keyring.Entries() {
		lk := listedKey{KeyID: e.KeyID, Algorithm: e.Algorithm, Backend: e.Backend, Active: e.Active, CreatedAt: e.CreatedAt, PublicKey: e.PublicKey}
		if e.RevokedAt != "" {
			r := e.RevokedAt
			lk.RevokedAt = &r
		}
		keys = append(keys, lk)
	}
	if o.JSON {
		if keys == nil {
			keys = []listedKey{}
		}
		c, err := canon.Marshal(map[string]any{"keys": keys})
		if err != nil {
			return err
		}
		b, err := canon.Indent(c)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY_ID\tALGORITHM\tBACKEND\tSTATUS\tCREATED_AT")
	for _, e := range keys {
		status := "inactive"
		switch {
		case e.RevokedAt != nil:
			status = "revoked " + *e.RevokedAt
		case e.Active:
			status = "active"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.KeyID, e.Algorithm, e.Backend, status, e.CreatedAt)
	}
	return tw.Flush()
}
