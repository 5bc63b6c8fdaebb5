package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

type keyExportOptions struct {
	Keys    keyringOptions
	Output  outputOptions
	Merge   bool
	LogKeys []string // --log-key: log keys pinned in log_keys
}

func newKeyCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "key",
		Short: "The keyring: generate, list, rotate and revoke keys; export public keys",
		Long: `The key verbs manage the keyring, found by the rule every command uses:
--keyring, else $WITNESS_KEYRING, else keys.json in the user config folder's
witness/ (docs/formats/keys.md). 'witness key generate' makes the default
keyring once; every verb, capture and proxy included, then signs with it.`,
		Example: `  witness key generate
  witness key list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(newKeygenCmd(a), newListKeysCmd(a), newRotateKeyCmd(a), newRevokeKeyCmd(a), newKeyExportPublicCmd(a))
	return c
}

// keyAliases are the top-level names the key verbs had before the key
// group (keygen, list-keys, rotate-key, revoke-key): hidden, and the same
// command under its old name, so 0.1.0 scripts keep working.
func keyAliases(a *app) []*cobra.Command {
	return []*cobra.Command{
		keyAliasOf(newKeygenCmd(a), "keygen"),
		keyAliasOf(newListKeysCmd(a), "list-keys"),
		keyAliasOf(newRotateKeyCmd(a), "rotate-key"),
		keyAliasOf(newRevokeKeyCmd(a), "revoke-key"),
	}
}

// keyAliasOf renames c (a key verb) to its old top-level name and hides it.
func keyAliasOf(c *cobra.Command, old string) *cobra.Command {
	now := "witness key " + c.Name()
	c.Use = old + strings.TrimPrefix(c.Use, c.Name())
	c.Hidden = true
	c.Short = "Deprecated alias of '" + now + "'"
	c.Long = c.Short + ": the same command under its old name.\n\n" + c.Long
	return c
}

func newKeyExportPublicCmd(a *app) *cobra.Command {
	var o keyExportOptions
	c := &cobra.Command{
		Use:   "export-public",
		Short: "Write the keyring's Ed25519 public keys as a trust file (no secrets)",
		Long: `export-public writes a trust file (docs/formats/keys.md) holding the keyring's
Ed25519 public keys, with revocation times. Verifiers pass it to
'witness verify --trust'. --log-key also pins a transparency log's key
(log_keys): 'verify' then authenticates that log's checkpoints, and
bundles under it, without --log-key; the key vouches for nothing else. With --merge, keys are added to an existing trust
file, so several witnesses can build one trust file for a quorum; --force
replaces it instead. --out is never the keyring itself.`,
		Example: `  witness key export-public --keyring ./alice.json --out trust.json
  witness key export-public --keyring ./bob.json --out trust.json --merge`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeyExportPublic(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Required: true})
	o.Output.AddFlags(c, "trust file to write (default: stdout)", true)
	c.Flags().StringArrayVar(&o.LogKeys, "log-key", nil, "also pin this transparency log's verifier key (the 'log key:' line of 'witness log init') in the trust file's log_keys (repeatable)")
	c.Flags().BoolVar(&o.Merge, "merge", false, "add to the trust file --out if it exists instead of refusing to overwrite it")
	return c
}

func runKeyExportPublic(a *app, o keyExportOptions) error {
	found, err := o.Keys.Open(a, "")
	if err != nil {
		return err
	}
	t, err := exportTrust(found.Keyring, o.LogKeys)
	if err != nil {
		return err
	}
	out := o.Output.File()
	if o.Merge && o.Output.Force {
		return usageError(errors.New("--merge and --force exclude each other"), "--merge adds to the trust file, --force replaces it")
	}
	// --merge rewrites the trust file it reads on purpose (configuration,
	// like the keyring); the keyring itself is never an output. An existing
	// file is refused below unless --merge or --force.
	o.Output.Reads(found.Path)
	outOpts := o.Output.Rules(a)
	outOpts.Force = true
	if out != "" {
		if err := atomicfile.Check(out, outOpts); err != nil {
			return err
		}
		if t, err = o.trustToWrite(out, t); err != nil {
			return err
		}
	}
	b, err := t.Marshal()
	if err != nil {
		return err
	}
	if out == "" {
		_, err = a.stdout.Write(b)
		return err
	}
	if err := atomicfile.Write(out, b, outOpts); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s to %s\n", trustCounts(t), out)
	return nil
}

// trustToWrite is the trust file to write to out with the keys of t: t
// alone when out does not exist or with --force, added to out's keys with
// --merge; an existing out without either is a usage error.
func (o keyExportOptions) trustToWrite(out string, t *keyring.TrustSet) (*keyring.TrustSet, error) {
	_, statErr := os.Stat(out)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return nil, exitcode.New(exitcode.Failure, statErr, "")
	}
	base := &keyring.TrustSet{}
	switch {
	case exists && o.Merge && !o.Output.Force:
		var err error
		if base, err = keyring.LoadTrust(out); err != nil {
			return nil, err
		}
	case exists && !o.Output.Force:
		return nil, usageError(errors.New("--out "+out+": trust file exists"), "add --merge to add these keys to it, --force to replace it, or choose another --out")
	}
	if err := base.Merge(t); err != nil {
		return nil, err
	}
	return base, nil
}

// exportTrust returns the keyring's public keys as a trust set, with the
// --log-key values pinned in its log_keys.
func exportTrust(k *keyring.Keyring, lks []string) (*keyring.TrustSet, error) {
	t, err := k.ExportTrust()
	if err != nil || len(lks) == 0 {
		return t, err
	}
	for _, lk := range lks {
		if err := keyring.CheckLogKey(lk); err != nil {
			return nil, usageError(fmt.Errorf("--log-key: %w", err), "pass the 'log key:' line 'witness log init' printed, or GET /log-key of the log")
		}
	}
	return t, t.Merge(&keyring.TrustSet{LogKeys: lks})
}

// trustCounts says what a trust file holds: "N public key(s)", and
// " and M log key(s)" when it pins logs.
func trustCounts(t *keyring.TrustSet) string {
	if len(t.LogKeys) == 0 {
		return fmt.Sprintf("%d public key(s)", len(t.Keys))
	}
	return fmt.Sprintf("%d public key(s) and %d log key(s)", len(t.Keys), len(t.LogKeys))
}
